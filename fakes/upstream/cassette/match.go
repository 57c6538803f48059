package cassette

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// Player finds the recorded answer of a request. Entries whose requests
// are equal are served in cassette order, one per matching request; once
// each has been served the last is served again, so a client that retries
// after a fault gets the answer it would have got. It is safe for
// concurrent use.
type Player struct {
	mu      sync.Mutex
	entries []Entry
	sources []Source
	served  map[string]int // per request key: how many it has served
}

// NewPlayer returns a Player of entries, read from sources (same length).
func NewPlayer(entries []Entry, sources []Source) *Player {
	return &Player{entries: slices.Clone(entries), sources: slices.Clone(sources), served: map[string]int{}}
}

// Open loads a cassette file or directory (see Load) into a Player.
func Open(path string) (*Player, error) {
	es, ss, err := Load(path)
	if err != nil {
		return nil, err
	}
	return NewPlayer(es, ss), nil
}

// Len returns the number of entries.
func (p *Player) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.entries)
}

// Add makes e, written at src, available to later requests.
func (p *Player) Add(e Entry, src Source) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.entries = append(p.entries, e)
	p.sources = append(p.sources, src)
}

// Find returns the entry to answer req with and where it was read, or a
// *MissError when no entry matches, or when the entry that does was not
// recorded (Answer.Unrecorded; the MissError says why).
func (p *Player) Find(req Request) (Entry, Source, error) {
	key := req.key()
	p.mu.Lock()
	defer p.mu.Unlock()
	var matches []int
	for i := range p.entries {
		if p.entries[i].Request.key() == key {
			matches = append(matches, i)
		}
	}
	if len(matches) == 0 {
		return Entry{}, Source{}, p.miss(req)
	}
	n := p.served[key]
	p.served[key] = n + 1
	i := matches[min(n, len(matches)-1)]
	if u := p.entries[i].Answer.Unrecorded; u != "" {
		return Entry{}, Source{}, &MissError{Request: req, Entries: len(p.entries), Closest: p.sources[i], Unrecorded: u}
	}
	return p.entries[i], p.sources[i], nil
}

// key is the request's identity for matching: every field but Token.
func (r Request) key() string {
	r.Token = ""
	b, _ := json.Marshal(r) // a struct of strings, a bool and string slices: never fails
	return string(b)
}

// Same reports whether two requests match each other (every field but
// Token equal).
func (r Request) Same(o Request) bool { return r.key() == o.key() }

// MissError is a request that no entry matches. It names the closest entry
// and what differs from it.
type MissError struct {
	// Request is the request that missed.
	Request Request
	// Entries is the number of entries searched.
	Entries int
	// Closest is the source of the closest entry; zero when there are none.
	Closest Source
	// Differences say how the closest entry's request differs, field by
	// field, e.g. "model: gpt-4o, recorded gpt-4o-mini".
	Differences []string
	// Unrecorded, when set, is why the entry that matches (Closest) has no
	// answer: the recorder relayed it but did not keep it.
	Unrecorded wire.Unrecorded
}

func (e *MissError) Error() string {
	r := e.Request
	head := fmt.Sprintf("no recorded answer for this %s %s request (model %q, stream %t, %d tools, %d messages)",
		r.Dialect, r.Kind, r.Model, r.Stream, len(r.Tools), len(r.Messages))
	if e.Entries == 0 {
		return head + ": the cassette is empty"
	}
	if e.Unrecorded == wire.UnrecordedTooLarge {
		return fmt.Sprintf("%s: its answer at %s was not recorded: its body was over the recording limit of %d MiB", head, e.Closest, MaxBody>>20)
	}
	return fmt.Sprintf("%s among %d entries; closest is %s, which differs in %s",
		head, e.Entries, e.Closest, strings.Join(e.Differences, "; "))
}

// miss builds the MissError of req. p.mu must be held.
func (p *Player) miss(req Request) *MissError {
	e := &MissError{Request: req, Entries: len(p.entries)}
	best := -1
	for i := range p.entries {
		d, score := differences(req, p.entries[i].Request)
		if best < 0 || score < best {
			best, e.Closest, e.Differences = score, p.sources[i], d
		}
	}
	return e
}

// differences describes how a request differs from a recorded one, with a
// score: the lower, the closer. A different dialect outweighs everything,
// then the stream flag, then each differing field, then each differing
// message.
func differences(got, rec Request) ([]string, int) {
	var out []string
	score := 0
	if got.Dialect != rec.Dialect {
		out = append(out, fmt.Sprintf("dialect: %s, recorded %s", got.Dialect, rec.Dialect))
		score += 10000
	}
	if got.Stream != rec.Stream {
		out = append(out, fmt.Sprintf("stream: %t, recorded %t", got.Stream, rec.Stream))
		score += 1000
	}
	if got.Kind != rec.Kind {
		out = append(out, fmt.Sprintf("kind: %s, recorded %s", got.Kind, rec.Kind))
		score += 100
	}
	if got.Model != rec.Model {
		out = append(out, fmt.Sprintf("model: %q, recorded %q", got.Model, rec.Model))
		score += 100
	}
	switch {
	case !slices.Equal(got.Tools, rec.Tools):
		out = append(out, fmt.Sprintf("tools: [%s], recorded [%s]", strings.Join(got.Tools, " "), strings.Join(rec.Tools, " ")))
		score += 100
	case got.ToolsHash != rec.ToolsHash:
		out = append(out, fmt.Sprintf("tools: the same names, other definitions (hash %s, recorded %s)", got.ToolsHash, rec.ToolsHash))
		score += 50
	}
	if d, n := messageDifferences(got.Messages, rec.Messages); n > 0 {
		out = append(out, d)
		score += n
	}
	return out, score
}

// messageDifferences describes the first differing message and counts the
// differing positions (a missing or extra message counts as one).
func messageDifferences(got, rec []string) (string, int) {
	n, first := 0, -1
	for i := range max(len(got), len(rec)) {
		if i < len(got) && i < len(rec) && got[i] == rec[i] {
			continue
		}
		n++
		if first < 0 {
			first = i
		}
	}
	if n == 0 {
		return "", 0
	}
	role := func(list []string, i int) string {
		if i >= len(list) {
			return "none"
		}
		r, _, _ := strings.Cut(list[i], ":")
		return r
	}
	d := fmt.Sprintf("messages: %d, recorded %d; the first to differ is item %d (%s, recorded %s)",
		len(got), len(rec), first+1, role(got, first), role(rec, first))
	if len(got) == len(rec) && role(got, first) == role(rec, first) {
		d = fmt.Sprintf("messages: item %d of %d (%s) differs", first+1, len(got), role(got, first))
		if n > 1 {
			d += fmt.Sprintf(", %d items in all", n)
		}
	}
	return d, n
}
