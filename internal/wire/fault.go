package wire

import (
	"encoding/json"
	"slices"
	"strings"
)

// Fault sides, for FaultReport.Side.
const (
	FaultUpstream = "upstream"
	FaultMCP      = "mcp"
)

// FaultReport is what became of one armed fault: as a fake reports it (its
// FaultReports, the control API), and as a run's history keeps it (OfRun).
type FaultReport struct {
	// Side is FaultUpstream or FaultMCP; Index the fault's place in its
	// list (in a run, the scenario's list for that side), from 1 as a
	// person counts (upstream fault 1 is faults.upstream[0]), as every
	// report numbers it.
	Side  string `json:"side"`
	Index int    `json:"index"`
	// ID identifies the armed fault on its fake for its life: ids are never
	// reused, and arming again gives new ones. 0 in a history.
	ID uint64 `json:"id,omitempty"`
	// Fault is the fault as armed.
	Fault json.RawMessage `json:"fault"`
	// Method is the MCP session step an mcp fault applies to (initialize,
	// tools/list); "" for tools/call and for upstream faults.
	Method string `json:"method,omitempty"`
	// Endpoint and Stream are an upstream fault's filters: the only dialect
	// (chat, responses, messages, gemini) and stream mode it matches; ""
	// and nil match every one.
	Endpoint string `json:"endpoint,omitempty"`
	Stream   *bool  `json:"stream,omitempty"`
	// Matched counts the requests (tool calls, or the method's requests)
	// the fault matched; Fired how many of them it acted on.
	Matched int `json:"matched"`
	Fired   int `json:"fired"`
	// Runs are Matched and Fired per run token, in token order (a global
	// fault matches the requests of every run); nil in a history.
	Runs []FaultRunCounts `json:"runs,omitempty"`
}

// OfRun returns r as a run's history keeps it: without the fake's id and
// the per-run counts (a history is one run's).
func (r FaultReport) OfRun() FaultReport {
	r.ID, r.Runs = 0, nil
	return r
}

// FaultRunCounts are what one armed fault did to the requests of one run
// token ("" = requests that carried none): how many it matched, and how
// many of them it acted on.
type FaultRunCounts struct {
	Run     string `json:"run"`
	Matched int    `json:"matched"`
	Fired   int    `json:"fired"`
}

// FaultRuns counts, per run token, the requests one armed fault matched and
// acted on, next to its totals. The zero value is empty and ready; it is not
// safe for concurrent use (a fake guards it with its own lock).
type FaultRuns struct {
	byRun map[string]*FaultRunCounts
}

// Match counts one request of run that the fault matched.
func (f *FaultRuns) Match(run string) { f.of(run).Matched++ }

// Fire counts one request of run that the fault acted on.
func (f *FaultRuns) Fire(run string) { f.of(run).Fired++ }

func (f *FaultRuns) of(run string) *FaultRunCounts {
	if f.byRun == nil {
		f.byRun = make(map[string]*FaultRunCounts)
	}
	c, ok := f.byRun[run]
	if !ok {
		c = &FaultRunCounts{Run: run}
		f.byRun[run] = c
	}
	return c
}

// Forget drops the counts of run.
func (f *FaultRuns) Forget(run string) { delete(f.byRun, run) }

// List returns a copy of the counts, one per run token seen, in token order;
// nil when the fault matched nothing.
func (f *FaultRuns) List() []FaultRunCounts {
	if len(f.byRun) == 0 {
		return nil
	}
	out := make([]FaultRunCounts, 0, len(f.byRun))
	for _, c := range f.byRun {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b FaultRunCounts) int { return strings.Compare(a.Run, b.Run) })
	return out
}
