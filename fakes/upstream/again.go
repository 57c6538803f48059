package upstream

import (
	"net/http"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/replaycheck/replaycheck/fakes/upstream/cassette"
	api "github.com/replaycheck/replaycheck/internal/dialect"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// The default patterns of Step.FailedIf and Step.UnknownIf. A result that
// says its call's outcome is unknown ("outcome unknown … it may have run",
// as the built-in gateway guarded says of a dropped MCP connection or a
// timed-out call) is no failure, whatever else it says: a careful client
// tells the model not to call again, and the model does not.
const (
	DefaultFailedIf  = `(?i)error|fail|exception|timed out|timeout|closed|disconnect|not connected|refused|unavailable|broken pipe`
	DefaultUnknownIf = `(?i)unknown|may have|might have|uncertain|did not confirm|not confirmed|do not retry|don't retry`
)

var (
	defaultFailedIf  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(DefaultFailedIf) })
	defaultUnknownIf = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(DefaultUnknownIf) })
)

// pattern returns the compiled pattern p, or def when p is "" or does not
// compile (Validate refuses such a script before it runs).
func pattern(p string, def func() *regexp.Regexp) *regexp.Regexp {
	if p == "" {
		return def()
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return def()
	}
	return re
}

// readResult is how the fake model reads res, a result of a call of st:
// wire.ResultUnknown when its text matches st's unknown pattern,
// wire.ResultFailed when it is flagged as an error or its text matches st's
// failure pattern, else wire.ResultOK.
func readResult(res api.ToolResult, st *Step) string {
	switch {
	case pattern(st.UnknownIf, defaultUnknownIf).MatchString(res.Text):
		return wire.ResultUnknown
	case res.Error || pattern(st.FailedIf, defaultFailedIf).MatchString(res.Text):
		return wire.ResultFailed
	}
	return wire.ResultOK
}

// mintedCall is what the fake knows of a tool call it made: the script step
// it came from (an index into Script.steps), its attempt (0 for the
// script's own call, k for the k-th time the model asked again), the
// script round it answered, and its arguments as sent (a call asked for
// again repeats them, whatever the follow-up's text says of the entry).
type mintedCall struct {
	step, attempt, round int
	args, argsQuoted     string
}

// againCall is a call the model asks for again: the step, attempt and round
// of the new call, and the id of the call the client reported failed.
type againCall struct {
	mintedCall
	of string
}

// maxMinted bounds runState.minted (cleared when full).
const maxMinted = 4096

// again reads the results req carries of the calls the fake made for the
// run whose steps ask again (again_if_failed), and returns the calls the
// model asks for again: one for each result of the latest round that
// reports its call failed, while the step's count allows; and reads, each
// such result's reading by index into req.Results (nil when none was
// read). Deterministic: a follow-up sent twice is answered alike. s.mu
// must be held.
func (st *runState) again(req *api.Request, script *Script) (calls []againCall, reads []string) {
	if len(st.minted) == 0 || !req.FollowUp {
		return nil, nil
	}
	steps := script.steps()
	for i, res := range req.Results {
		m, ok := st.minted[res.CallID]
		if !ok || m.step >= len(steps) || steps[m.step].AgainIfFailed == 0 {
			continue
		}
		step := &steps[m.step]
		if reads == nil {
			reads = make([]string, len(req.Results))
		}
		reads[i] = readResult(res, step)
		if reads[i] != wire.ResultFailed || res.Round != req.Rounds || m.attempt >= step.AgainIfFailed {
			continue
		}
		dup := false
		for _, c := range calls {
			dup = dup || c.of == res.CallID
		}
		if !dup {
			m.attempt++
			calls = append(calls, againCall{m, res.CallID})
		}
	}
	return calls, reads
}

// againRounds counts the rounds of results req carries that answer calls
// the model asked for again: rounds of the conversation that are no round
// of the script. s.mu must be held.
func (st *runState) againRounds(req *api.Request) int {
	n, last := 0, 0
	for _, res := range req.Results {
		if m, ok := st.minted[res.CallID]; ok && m.attempt > 0 && res.Round != last {
			n++
			last = res.Round
		}
	}
	return n
}

// mint remembers the calls of an answer the fake sent for the run: ids[i]
// was made as calls[i]. s.mu must be held.
func (st *runState) mint(ids []wire.ToolCall, calls []mintedCall) {
	if len(calls) != len(ids) {
		return
	}
	if st.minted == nil || len(st.minted)+len(ids) > maxMinted {
		st.minted = make(map[string]mintedCall)
	}
	for i, c := range ids {
		if c.ID != "" {
			st.minted[c.ID] = calls[i]
		}
	}
}

// recordResults returns what a follow-up told the model about each call, as
// the history keeps it: text with whitespace collapsed, cut to
// wire.MaxResultText runes, and the request's credentials and anything
// key-shaped scrubbed; reads (nil for none) are the fake model's readings.
func recordResults(results []api.ToolResult, reads []string, r *http.Request) []wire.ToolResult {
	if len(results) == 0 {
		return nil
	}
	var secrets []string
	scrubbed := false
	out := make([]wire.ToolResult, len(results))
	for i, res := range results {
		out[i] = wire.ToolResult{ID: res.CallID, Error: res.Error}
		if i < len(reads) {
			out[i].Read = reads[i]
		}
		if res.Text != "" {
			if !scrubbed {
				secrets, scrubbed = cassette.Secrets(r.Header, r.URL.RawQuery), true
			}
			out[i].Text = clip(cassette.Scrub(res.Text, secrets), wire.MaxResultText)
		}
	}
	return out
}

// clip collapses the whitespace of s and cuts it to at most n runes, the
// last "…" when it was cut.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, k := 0, 0
	for k < n-1 {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		k++
	}
	return s[:i] + "…"
}
