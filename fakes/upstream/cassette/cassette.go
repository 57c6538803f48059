// Package cassette is the file format of recorded model exchanges and the
// matcher that finds a recorded answer for a request.
//
// It serves the replaycheck command and its tests; it is not an API and may
// change in any release (replaycheck's Go API is replaychecktest and the
// fakes it arms: fakes/upstream, fakes/ledger, fakes/fault).
//
// A cassette is one file per recorded session, in JSON Lines: each line is
// one Entry — a relayed exchange whose answer arrived whole, or one whose
// answer was relayed but not kept (Answer.Unrecorded: a body over MaxBody)
// — in the order the answers completed. JSON, because encoding/json round-trips the
// provider's bytes exactly (YAML as goccy/go-yaml writes it loses trailing
// spaces of block scalars and control characters); one line per exchange,
// because appending a line needs no rewrite and a diff names the exchanges
// that changed; one file per session, because a session is what is recorded,
// committed and named by a scenario, and the order inside it decides which
// of several identical requests (a retry) gets which answer.
//
// An entry keeps what matching needs and nothing a secret could hide in:
// the request's dialect, kind, model, stream flag, the names of the tools
// offered, a hash of the tool definitions and one "role:hash" per message;
// never a request header, a query or a message's text. The answer keeps
// its status, the headers a client acts on (HeaderKept), and its body or
// its SSE events with their timing. Recorders scrub the credentials a
// request carried from the answer before it is written (see Scrub).
package cassette

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/internal/inputfile"
	"github.com/replaycheck/replaycheck/internal/jsonl"
	"github.com/replaycheck/replaycheck/internal/nesting"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// Entry is one recorded exchange: the request as the matcher keys it and
// the provider's answer.
type Entry struct {
	// Request is what a replayed request must match.
	Request Request `json:"request"`
	// Answer is what the provider answered.
	Answer Answer `json:"answer"`
}

// Request is the matching key of a recorded request. Two requests match
// when every field but Token is equal.
type Request struct {
	// Dialect is chat, responses or messages.
	Dialect string `json:"dialect"`
	// Kind is initial or follow_up.
	Kind wire.RequestKind `json:"kind"`
	// Model is the model the request named.
	Model string `json:"model,omitempty"`
	// Stream reports whether the request asked for a stream.
	Stream bool `json:"stream"`
	// Tools are the names of the tools offered, in order.
	Tools []string `json:"tools,omitempty"`
	// ToolsHash is a hash of the tool definitions ("" for none).
	ToolsHash string `json:"tools_hash,omitempty"`
	// Messages are the conversation's items, each "role:hash": the system
	// prompt or instructions first, then each message or input item.
	Messages []string `json:"messages"`
	// Token is the run token the request carried in its bytes (a prompt
	// with {{entry}}), "" for none. The recorder hashes the items and the
	// tool definitions with it written as {{token}}, so a later run with
	// another token matches; a replay writes the later run's token where
	// the answer has this one. Matching ignores it.
	Token string `json:"token,omitempty"`
}

// TokenPlaceholder stands for the run token in the bytes a recorder hashes
// (see Request.Token).
const TokenPlaceholder = "{{token}}"

// Answer is a provider's answer: a plain body, or SSE events when the
// answer was a 200 event stream.
type Answer struct {
	// Status is the HTTP status.
	Status int `json:"status"`
	// Headers are the response headers kept (see HeaderKept), canonical keys.
	Headers map[string]string `json:"headers,omitempty"`
	// HeadersMS is the time from sending the request to the response headers.
	HeadersMS int64 `json:"headers_ms"`
	// Body is a plain answer's body.
	Body string `json:"body,omitempty"`
	// Events are a streamed answer's events; nil for a plain answer.
	Events []Event `json:"events,omitempty"`
	// Unrecorded, when set, says why the answer is not kept: too_large, a
	// plain body over MaxBody (then Body is empty). A request that matches
	// the entry misses, and the miss says why (MissError.Unrecorded).
	Unrecorded wire.Unrecorded `json:"unrecorded,omitempty"`
}

// MaxBody bounds a plain answer's body a recorder keeps, in bytes; a
// larger answer's entry is marked wire.UnrecordedTooLarge.
const MaxBody = 32 << 20

// Event is one server-sent event of a recorded stream.
type Event struct {
	// Name is the event field; "" when there was none.
	Name string `json:"event,omitempty"`
	// Data is the data fields joined with "\n".
	Data string `json:"data"`
	// AtMS is the time from the response headers to this event.
	AtMS int64 `json:"at_ms"`
}

// Stream reports whether the answer is an event stream.
func (a *Answer) Stream() bool { return a.Events != nil }

// WithToken returns the answer with every occurrence of the run token from
// replaced by to, in its body, its events and its headers: a recorded
// answer as the run with token to gets it. An empty from, or from equal to
// to, returns a unchanged.
func (a Answer) WithToken(from, to string) Answer {
	if from == "" || from == to {
		return a
	}
	a.Body = strings.ReplaceAll(a.Body, from, to)
	if a.Headers != nil {
		h := make(map[string]string, len(a.Headers))
		for k, v := range a.Headers {
			h[k] = strings.ReplaceAll(v, from, to)
		}
		a.Headers = h
	}
	if a.Events != nil {
		evs := make([]Event, len(a.Events))
		for i, ev := range a.Events {
			ev.Data = strings.ReplaceAll(ev.Data, from, to)
			evs[i] = ev
		}
		a.Events = evs
	}
	return a
}

// HeaderKept reports whether a response header is recorded: the content
// type, the retry advice (Retry-After, retry-after-ms, x-should-retry),
// request ids and rate-limit figures. Cookies and everything else stay out.
func HeaderKept(name string) bool {
	k := strings.ToLower(name)
	switch k {
	case "content-type", "retry-after", "retry-after-ms", "x-should-retry", "x-request-id", "request-id",
		"openai-model", "openai-processing-ms", "openai-version":
		return true
	}
	return strings.HasPrefix(k, "x-ratelimit-") || strings.HasPrefix(k, "anthropic-ratelimit-")
}

// Source names where an entry was read or written: file and line (from 1).
type Source struct {
	File string
	Line int
}

func (s Source) String() string { return fmt.Sprintf("%s:%d", s.File, s.Line) }

// Load reads the entries of a cassette file, or of every *.jsonl file in a
// directory in name order. An unreadable line, or one longer than
// jsonl.MaxLine, is an error naming file:line.
func Load(path string) ([]Entry, []Source, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("cassette: %w", err)
	}
	files := []string{path}
	if st.IsDir() {
		if files, err = filepath.Glob(filepath.Join(path, "*.jsonl")); err != nil {
			return nil, nil, fmt.Errorf("cassette %s: %w", path, err)
		}
		slices.Sort(files)
	}
	var entries []Entry
	var sources []Source
	for _, file := range files {
		es, ss, err := loadFile(file)
		if err != nil {
			return nil, nil, err
		}
		entries, sources = append(entries, es...), append(sources, ss...)
	}
	return entries, sources, nil
}

func loadFile(file string) ([]Entry, []Source, error) {
	f, err := inputfile.Open(file)
	if err != nil {
		return nil, nil, fmt.Errorf("cassette: %w", err)
	}
	defer f.Close()
	sc := jsonl.NewScanner(f, file)
	var entries []Entry
	var sources []Source
	for sc.Scan() {
		n, raw := sc.Line()
		line := bytes.TrimSpace(raw)
		if len(line) == 0 {
			continue
		}
		if ne := nesting.JSON(line, nesting.Max); ne != nil {
			indent := bytes.Index(raw, line)
			return nil, nil, fmt.Errorf("cassette %s:%d:%d: %w", file, n, indent+ne.Col, ne)
		}
		var e Entry
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, nil, fmt.Errorf("cassette %s:%d: %w", file, n, err)
		}
		if err := e.validate(); err != nil {
			return nil, nil, fmt.Errorf("cassette %s:%d: %w", file, n, err)
		}
		entries = append(entries, e)
		sources = append(sources, Source{File: file, Line: n})
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("cassette %w", err)
	}
	return entries, sources, nil
}

// validate reports an entry no replay could serve.
func (e *Entry) validate() error {
	if e.Request.Dialect == "" {
		return errors.New("request.dialect: missing")
	}
	if e.Answer.Status < 100 || e.Answer.Status > 599 {
		return fmt.Errorf("answer.status: %d is not an HTTP status", e.Answer.Status)
	}
	if e.Answer.Stream() && e.Answer.Status != 200 {
		return fmt.Errorf("answer.events: a stream must have status 200, not %d", e.Answer.Status)
	}
	if u := e.Answer.Unrecorded; u != "" && u != wire.UnrecordedTooLarge {
		return fmt.Errorf("answer.unrecorded: %q is not a reason replaycheck writes (%s)", u, wire.UnrecordedTooLarge)
	}
	return nil
}

// Recorder appends entries to one cassette file, each whole or not at all
// (see jsonl.Writer). It is safe for concurrent use; File().Loss() counts
// the entries lost.
type Recorder struct{ *jsonl.Writer[Entry] }

// Create creates a new cassette file (it must not exist) and its directory.
func Create(path string) (*Recorder, error) {
	w, err := jsonl.Create[Entry](path)
	if err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	return &Recorder{w}, nil
}

// Add appends e as one line and returns where it was written. A failed
// write loses e only; a later Add is tried anew.
func (r *Recorder) Add(e Entry) (Source, error) {
	n, err := r.Writer.Add(e)
	if err != nil {
		return Source{}, fmt.Errorf("cassette: %w", err)
	}
	return Source{File: r.Path(), Line: n}, nil
}

// Close syncs and closes the file. The entries lost to failed writes are
// not its error: each Add returned its own, and File().Loss() counts them.
func (r *Recorder) Close() error {
	if err := r.Writer.Close(); err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	return nil
}
