package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/fakes/upstream/cassette"
	"github.com/replaycheck/replaycheck/internal/wire"
	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

// Model is what answers a scenario's model requests: the fake model's
// script (in YAML a list of steps) or a cassette recorded from a real
// session ({cassette: FILE}). The zero Model is the seed's script.
//
// A cassette is recorded by `replaycheck serve --relay URL --record DIR`
// (see package cassette). The loader reads it when it loads the scenario;
// each run replays it from its first entry, with the run's token where the
// recorded requests carried theirs, and every upstream fault applies to
// the replayed answers as to scripted ones.
type Model struct {
	// Script is the fake model's script; empty (with no Cassette) is the
	// seed's.
	Script upstream.Script
	// Cassette is the cassette file or directory as the scenario names it,
	// relative to the scenario file; "" for a script.
	Cassette string

	// The cassette's path as read, its entries and where each was read,
	// set by the loader.
	path    string
	entries []cassette.Entry
	sources []cassette.Source
}

// modelCassette is the mapping form of a Model.
type modelCassette struct {
	Cassette string `yaml:"cassette" json:"cassette"`
}

// errModelShape is the error of a model that is neither form.
var errModelShape = errors.New("want a list of steps such as [{call: commit_write, arguments: {entry: \"{{entry}}\"}}, {say: done}], or {cassette: FILE}")

// UnmarshalYAML reads a list of steps or {cassette: FILE}
// (github.com/goccy/go-yaml).
func (m *Model) UnmarshalYAML(unmarshal func(any) error) error {
	return m.decode(unmarshal)
}

// decode reads a Model with decode, which fills its argument from the same
// document each time it is called: first to learn the form, then to read it.
func (m *Model) decode(decode func(any) error) error {
	var v any
	if err := decode(&v); err != nil {
		return err
	}
	switch v.(type) {
	case nil:
		*m = Model{}
		return nil
	case []any:
		var s upstream.Script
		if err := decode(&s); err != nil {
			return err
		}
		*m = Model{Script: s}
		return nil
	case map[string]any:
		var c modelCassette
		if err := decode(&c); err != nil {
			return err
		}
		*m = Model{Cassette: c.Cassette}
		return nil
	}
	return errModelShape
}

// MarshalYAML writes the list of steps, or {cassette: FILE}.
func (m Model) MarshalYAML() (any, error) {
	if m.Cassette != "" {
		return modelCassette{Cassette: m.Cassette}, nil
	}
	return m.Script.MarshalYAML()
}

// MarshalJSON writes the list of steps, or {"cassette": FILE}.
func (m Model) MarshalJSON() ([]byte, error) {
	if m.Cassette != "" {
		return json.Marshal(modelCassette{Cassette: m.Cassette})
	}
	return json.Marshal(m.Script)
}

// UnmarshalJSON reads a list of steps or {"cassette": FILE}; a cassette
// mapping with another field is an error.
func (m *Model) UnmarshalJSON(b []byte) error {
	err := m.decode(func(v any) error {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		return dec.Decode(v)
	})
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	return nil
}

// IsZero reports whether m is the seed's script (no steps, no cassette).
func (m Model) IsZero() bool { return len(m.Script.Steps) == 0 && m.Cassette == "" }

// load reads m's cassette, named relative to the scenario file file. A
// cassette that cannot be read, or has no entries, is an error.
func (m *Model) load(file string) error {
	if m.Cassette == "" {
		return nil
	}
	path := m.Cassette
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(file), path)
	}
	entries, sources, err := cassette.Load(path)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		// Name the path as the scenario resolves it, and the cause.
		return fmt.Errorf("cassette %s: %s", path, yamlfile.DescribeReadError(err))
	}
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return fmt.Errorf("cassette %s: no recorded exchange in it", path)
	}
	m.path, m.entries, m.sources = path, entries, sources
	return nil
}

// CassetteFile returns the cassette's path as the loader read it (joined
// to the scenario file's directory); "" for a script, or a cassette the
// loader has not read.
func (m *Model) CassetteFile() string { return m.path }

// Player returns a player of the model's cassette for one run, serving its
// entries from the first; nil for a script, or a cassette the loader has
// not read.
func (m *Model) Player() *cassette.Player {
	if m.entries == nil {
		return nil
	}
	return cassette.NewPlayer(m.entries, m.sources)
}

// Calls returns the tool calls the model makes per app request, in order:
// a script's call steps as written; for a cassette, the calls of the
// recorded answers, each distinct recorded request counted once, shared
// out over its distinct initial requests (a session of several app
// requests of one shape), each named as the ledger tool it names
// (ledger-commit_write is commit_write).
func (m *Model) Calls() []string {
	if m.Cassette == "" {
		var out []string
		steps := m.Script.Steps
		if len(steps) == 0 {
			steps = upstream.DefaultScript().Steps
		}
		for _, st := range steps {
			if st.Call != "" {
				out = append(out, st.Call)
			}
		}
		return out
	}
	var seen []cassette.Request
	var calls []string
	initial := 0
	for i := range m.entries {
		e := &m.entries[i]
		if slices.ContainsFunc(seen, e.Request.Same) {
			continue
		}
		seen = append(seen, e.Request)
		if e.Request.Kind == wire.KindInitial {
			initial++
		}
		for _, c := range upstream.RecordedCalls(e) {
			calls = append(calls, ledgerToolOf(c))
		}
	}
	if initial > 1 {
		calls = calls[:(len(calls)+initial-1)/initial]
	}
	return calls
}

// ledgerToolOf returns the ledger tool a model's call names: the tool
// itself, or the longest ledger tool name it ends in after a separator
// (-, ., /, :, _), as clients prefix the tools they offer; else name.
func ledgerToolOf(name string) string {
	best := ""
	for _, t := range ledgerTools() {
		rest, ok := strings.CutSuffix(name, t)
		if !ok || len(t) <= len(best) {
			continue
		}
		if rest == "" || strings.ContainsAny(rest[len(rest)-1:], "-./:_") {
			best = t
		}
	}
	if best == "" {
		return name
	}
	return best
}
