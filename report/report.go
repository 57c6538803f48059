// Package report renders the results of a suite run: a terminal table with a
// total line and the details of each failure, JUnit XML, JSON (the full
// histories and verdicts, which can be re-checked) and Markdown for CI step
// summaries. Renderers only render; the numbers come from package rules.
//
// Package report is the CLI's renderer, not an API: its functions take the
// harness's own types (histories, verdicts, baselines), which live under
// internal/ and may change with any release. What is stable is what it
// writes — the JSON (its version field), JUnit and Markdown files described
// in docs/reference/cli.md. A Go program tests an agent with package
// replaychecktest instead.
package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/baseline"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/nesting"
)

// Suite is the outcome of one run of a suite: one Result per scenario and
// target, and the wall time of the whole run. It is what --json writes.
type Suite struct {
	// Version names the format of the JSON file.
	Version int `json:"version"`
	// Results are in scenario order, then target order.
	Results []rules.Result `json:"results"`
	// Wall is the wall time of the whole run.
	Wall history.Duration `json:"wall"`
	// Baseline, when not nil, is the results judged against a baseline file
	// (one verdict per result, in the same order); reports then show each
	// result's standing and the stale entries.
	Baseline *baseline.Outcome `json:"baseline,omitempty"`
	// Run, when not nil, says how the suite was run (version, seed, shard).
	Run *RunInfo `json:"run,omitempty"`
	// Abort, when not nil, says why the run did not complete; Results then
	// hold what ended before it.
	Abort *Abort `json:"abort,omitempty"`
}

// FormatVersion is the current Suite JSON format.
const FormatVersion = 1

// Totals counts results by verdict.
type Totals struct {
	Scenarios, Pass, Fail, Unknown int
	// Skipped counts the results whose scenario did not apply to the
	// target (rules.Skipped).
	Skipped int
	// Runs counts the scenario runs: a repeated scenario's runs each, any
	// other result once.
	Runs    int
	Targets []string
}

// Totals counts the suite's results by verdict and lists its targets.
func (s Suite) Totals() Totals {
	var t Totals
	seen := map[string]bool{}
	for _, r := range s.Results {
		t.Scenarios++
		t.Runs++
		if r.Repeat != nil {
			t.Runs += r.Repeat.Runs - 1
		}
		switch r.Verdict {
		case rules.Pass:
			t.Pass++
		case rules.Fail:
			t.Fail++
		case rules.Skipped:
			t.Skipped++
		default:
			t.Unknown++
		}
		if !seen[r.History.Target] {
			seen[r.History.Target] = true
			t.Targets = append(t.Targets, r.History.Target)
		}
	}
	return t
}

// TotalLine renders the one-line total, for example "12 scenarios on
// builtin:guarded: 12 pass, 0 fail, 0 unknown in 840ms (14.3/s)"; with
// repeated scenarios, "2 scenarios (40 runs) on builtin:guarded: … (47.6
// runs/s)"; with scenarios that did not apply, "…, 0 unknown, 2 skipped (not
// applicable) in …".
func TotalLine(s Suite) string {
	t := s.Totals()
	what := fmt.Sprintf("%d %s", t.Scenarios, word(t.Scenarios, "scenario"))
	rate, unit := t.Scenarios, "scenarios"
	if repeated(s) {
		what += fmt.Sprintf(" (%d %s)", t.Runs, word(t.Runs, "run"))
		rate, unit = t.Runs, "runs"
	}
	if len(t.Targets) > 0 {
		what += " on " + strings.Join(t.Targets, ", ")
	}
	skipped := ""
	if t.Skipped > 0 {
		skipped = fmt.Sprintf(", %d skipped (not applicable)", t.Skipped)
	}
	line := fmt.Sprintf("%s: %d pass, %d fail, %d unknown%s in %s",
		what, t.Pass, t.Fail, t.Unknown, skipped, round(s.Wall.D()))
	if w := s.Wall.D(); w > 0 && rate > 0 {
		line += fmt.Sprintf(" (%.1f %s/s)", float64(rate)/w.Seconds(), unit)
	}
	return line
}

// WriteJSON writes s as indented JSON.
func WriteJSON(w io.Writer, s Suite) error {
	return scrubbed(w, "JSON report", func(w io.Writer) error { return writeJSON(w, s) })
}

// writeJSON is WriteJSON before scrubbing.
func writeJSON(w io.Writer, s Suite) error {
	s.Version = FormatVersion
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("writing JSON report: %w", err)
	}
	return nil
}

// ErrExploreReport is what ReadJSON returns (errors.Is) for the JSON report
// of an explore sweep, which is not a run's.
var ErrExploreReport = errors.New("an explore report (explore --json), not a run report (run --json)")

// ReadJSON reads a suite written by WriteJSON; an explore sweep's report is
// refused (ErrExploreReport).
func ReadJSON(r io.Reader) (Suite, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return Suite{}, fmt.Errorf("reading JSON report: %w", err)
	}
	if err := nesting.CheckJSON("JSON report", b); err != nil {
		return Suite{}, err
	}
	// Cells and bases are an explore report's, which would otherwise read as
	// a run of no results.
	var in struct {
		Suite
		Cells json.RawMessage `json:"cells"`
		Bases json.RawMessage `json:"bases"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var typeErr *json.UnmarshalTypeError
	switch err := dec.Decode(&in); {
	case errors.Is(err, io.EOF):
		return Suite{}, errors.New("reading JSON report: the file is empty; want the JSON of run --json")
	case errors.As(err, &typeErr) && typeErr.Field == "":
		return Suite{}, fmt.Errorf("reading JSON report: a JSON %s, not a run report (the JSON object of run --json)", typeErr.Value)
	case err != nil:
		return Suite{}, fmt.Errorf("reading JSON report: %w", err)
	}
	// One report per file: a second value (reports concatenated) would
	// otherwise be dropped without a word.
	end := dec.InputOffset()
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Suite{}, fmt.Errorf("reading JSON report: more after the report's JSON object, which ends at byte %d (concatenated reports? give each its own file)", end)
	}
	s := in.Suite
	if in.Cells != nil || in.Bases != nil {
		return s, fmt.Errorf("reading JSON report: %w", ErrExploreReport)
	}
	if s.Version == 0 {
		return s, errors.New("reading JSON report: no format version: not a run report (the JSON of run --json)")
	}
	if s.Version != FormatVersion {
		return s, fmt.Errorf("reading JSON report: format version %d, want %d", s.Version, FormatVersion)
	}
	for i, res := range s.Results {
		if res.History == nil {
			return s, fmt.Errorf("reading JSON report: result %d has no history", i+1)
		}
	}
	return s, nil
}

// spawned reports whether a result of s started a stdio MCP server: the
// table and Markdown then show the spawns and exits.
func spawned(s Suite) bool {
	return slices.ContainsFunc(s.Results, func(r rules.Result) bool { return r.Counts.Spawns+r.Counts.Exits > 0 })
}

// statuses renders a result's HTTP statuses, "-" for none.
func statuses(r rules.Result) string {
	if len(r.Counts.Statuses) == 0 {
		return "-"
	}
	parts := make([]string, len(r.Counts.Statuses))
	for i, s := range r.Counts.Statuses {
		if i < len(r.History.Requests) && r.History.Requests[i].Client != nil {
			parts[i] = clientOutcome(r.History.Requests[i].Client)
			continue
		}
		if s == 0 {
			parts[i] = "none"
		} else {
			parts[i] = strconv.Itoa(s)
		}
	}
	return strings.Join(parts, ",")
}

// failedChecks renders the names of the failed and unknown checks; an
// if-judged rule's unknown, which the verdict does not count, is left out.
// A scenario that did not apply is "not applicable".
func failedChecks(r rules.Result) string {
	if r.Verdict == rules.Skipped {
		return "not applicable"
	}
	var parts []string
	for _, v := range r.Verdicts {
		switch {
		case v.Status == rules.Fail:
			parts = append(parts, v.Check)
		case v.Status == rules.Unknown && !v.IfJudged:
			parts = append(parts, v.Check+"?")
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// Timeline renders a history's explained timeline (see Explain), one line
// per step: offset, who sent to whom, and what; a model request names its
// attempt, a tool call the model answer (and tool call id) that asked for it,
// a repeated execution is marked REPLAY, an injected fault FAULT, and the
// app's answer shows the start of its body. Explanations go on lines of
// their own below their step.
func Timeline(h *history.History) []string {
	steps := Explain(h)
	many := len(h.Requests) > 1
	var out []string
	for _, st := range steps {
		out = append(out, fmt.Sprintf("%9s  %-16s %s", "+"+round(st.At), arrow(st), stepText(st, many)))
		for _, n := range st.Notes {
			out = append(out, fmt.Sprintf("%9s  %-16s ↳ %s", "", "", n))
		}
		if st.Kind == StepAnswer && st.Body != "" {
			out = append(out, fmt.Sprintf("%9s  %-16s ↳ body: %s", "", "", capText(oneLine(st.Body), timelineBodyCap)))
		}
	}
	return out
}

// timelineBodyCap caps the excerpt of the app's answer a timeline shows.
const timelineBodyCap = 240

// arrow renders who sent a step to whom: "target → model", or one party
// for a note on its lifeline.
func arrow(st Step) string {
	if st.From == st.To {
		return st.From.String()
	}
	return st.From.String() + " → " + st.To.String()
}

// stepText renders a step's label with what ties it to the run, marks
// first: REPLAY on a repeated execution, FAULT where an injected fault hit.
// many says the run made several app requests, so steps name theirs.
func stepText(st Step, many bool) string {
	var b strings.Builder
	if st.Replay() {
		fmt.Fprintf(&b, "REPLAY #%d (first ran at +%s): ", st.Execution, round(st.FirstAt))
	}
	if st.Fault != "" {
		b.WriteString("FAULT " + st.Fault + ": ")
	}
	if many && st.Request > 0 && (st.Kind == StepRequest || st.Kind == StepAnswer || st.Kind == StepUpstream) {
		fmt.Fprintf(&b, "request %d ", st.Request)
	}
	if st.Kind == StepUpstream {
		fmt.Fprintf(&b, "attempt %d: ", st.Attempt)
	}
	b.WriteString(st.Label)
	switch st.Kind {
	case StepToolCall:
		if t := causeText(st); t != "" {
			b.WriteString(" [" + t + "]")
		}
	case StepModelAnswer:
		fmt.Fprintf(&b, " [answer %d]", st.ModelCall)
	}
	return b.String()
}

// causeText says which model answer asked for a tool call: its id and
// the answer's number and attempt; "" when no answer did.
func causeText(st Step) string {
	var from []string
	if st.CallID != "" {
		from = append(from, st.CallID)
	}
	if st.ModelCall > 0 {
		from = append(from, fmt.Sprintf("from answer %d, attempt %d", st.ModelCall, st.Attempt))
	}
	return strings.Join(from, " ")
}

// oneLine joins text's lines with " ⏎ " so an excerpt stays on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ⏎ ")), " ")
}

// capText cuts s to at most n runes, saying how much it left out.
func capText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + fmt.Sprintf("… (%d more characters)", len(r)-n)
}

// UpstreamCounts renders the seed's `sort upstream.log | uniq -c` view.
func UpstreamCounts(r rules.Result) []string {
	keys := slices.Sorted(maps.Keys(r.Counts.Upstream))
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%7d %s", r.Counts.Upstream[k], k)
	}
	return out
}

// clientOutcome renders a client run's end: "exit 1" or "killed".
func clientOutcome(c *history.ClientRun) string {
	switch {
	case c.Killed:
		return "killed"
	case c.Error != "":
		return "not run"
	}
	return "exit " + strconv.Itoa(c.Exit)
}

func answer(x history.Exchange) string {
	if x.Client != nil {
		if x.Client.Killed || x.Client.Error != "" {
			return clientOutcome(x.Client) + ": " + firstLine(x.TransportError)
		}
		return "client " + clientOutcome(x.Client)
	}
	var parts []string
	if x.Status != 0 {
		parts = append(parts, fmt.Sprintf("HTTP %d", x.Status))
	} else {
		parts = append(parts, "no answer")
	}
	if x.Stream {
		parts = append(parts, plural(x.DataChunks, "data chunk"))
		if x.ErrorEvents > 0 {
			parts = append(parts, plural(x.ErrorEvents, "error event"))
		}
		if x.Done {
			parts = append(parts, "done")
		} else {
			parts = append(parts, "no end event")
		}
	}
	if x.TimedOut {
		parts = append(parts, "timed out")
	} else if x.TransportError != "" {
		parts = append(parts, "error: "+x.TransportError)
	}
	return strings.Join(parts, ", ")
}

func headerValue(h map[string]string, names ...string) string {
	var parts []string
	for _, n := range names {
		for k, v := range h {
			if strings.EqualFold(k, n) {
				parts = append(parts, n+": "+v)
			}
		}
	}
	return strings.Join(parts, ", ")
}

func plural(n int, word string) string {
	if n == 1 {
		return strconv.Itoa(n) + " " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// round renders a duration compactly for reports.
func round(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	default:
		return d.Round(time.Microsecond).String()
	}
}

func word(n int, w string) string {
	if n == 1 {
		return w
	}
	return w + "s"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
