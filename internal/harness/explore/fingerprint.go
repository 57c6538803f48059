package explore

import (
	"fmt"
	"slices"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// FingerprintRow is a target's answer to one failing model request: a fault
// kind armed on every attempt of the initial or the follow-up request, and
// what the target did about it, as the upstream saw it. Where a client runs
// through a proxy, the attempts are the product of both layers' retries. On
// a target that spawns the ledger over stdio, a row is also its answer to a
// stdio server that dies (or hangs, or garbles its output) on every
// tools/call of Tool: the attempts are the calls the ledger received, and
// Spawns shows the respawns.
type FingerprintRow struct {
	Base string `json:"base"`
	// Request is the model request the fault was armed on: initial or
	// follow_up, with its endpoint and stream flag; "" for a tools/call.
	Request  wire.RequestKind `json:"request,omitempty"`
	Endpoint string           `json:"endpoint,omitempty"`
	Stream   bool             `json:"stream,omitempty"`
	// Tool is the tool whose tools/call the fault was armed on; "" for a
	// model request.
	Tool string `json:"tool,omitempty"`
	// Fault is the fault kind, for example 429-retry-after.
	Fault string `json:"fault"`
	// Attempts counts the upstream requests of that kind; Incomplete is
	// set when the run hit its deadline (--timeout) before the target gave
	// up, so more attempts may have followed.
	Attempts   int  `json:"attempts"`
	Incomplete bool `json:"incomplete,omitempty"`
	// Gaps are the waits between consecutive attempts (min, median, max;
	// zero with one attempt) of the innermost retry loop: all of them, but
	// for the outer loop's.
	GapMin    history.Duration `json:"gap_min"`
	GapMedian history.Duration `json:"gap_median"`
	GapMax    history.Duration `json:"gap_max"`
	// OuterGaps are the waits of an outer retry loop, in order, where the
	// attempts come in bursts (see outerGaps): an agent's own backoff
	// around its SDK's retries. Nil for a single loop.
	OuterGaps []history.Duration `json:"outer_gaps,omitempty"`
	// RetryAfter says whether every retry waited the Retry-After (or
	// retry-after-ms) the answer asked for: honoured, ignored, or "" when
	// the fault asked for no wait or nothing was retried.
	RetryAfter string `json:"retry_after,omitempty"`
	// Total is the time from the first attempt to the last.
	Total history.Duration `json:"total"`
	// Outcome is what the app got: an HTTP status, or a client's exit code.
	Outcome string `json:"outcome"`
	// Executions counts the tool calls the ledger executed (writes).
	Executions int `json:"executions"`
	// Spawns counts the stdio server processes the target started; 0 when
	// it reached the ledger over HTTP.
	Spawns int `json:"spawns,omitempty"`
}

// FingerprintKinds are the kinds of a retry-policy fingerprint: every status
// and the reset, and, on a base that reaches the ledger over stdio, the stdio
// server's deaths at a tools/call.
func FingerprintKinds() []Kind {
	return slices.DeleteFunc(Kinds(), func(k Kind) bool {
		if k.Optional || k.kill != "" {
			return true
		}
		return k.at != fault.AtRequest && (k.at != fault.AtToolCall || k.Transport != wire.MCPTransportStdio)
	})
}

// fingerprinted reports whether a fingerprint arms its kinds at p: the first
// occurrence of each model request, or of each tools/call (whose kinds, by
// FingerprintKinds, are the stdio ones).
func fingerprinted(p Point) bool {
	return p.Nth == 1 && !p.Cut && (p.Side == SideUpstream || p.Method == "")
}

// Fingerprint returns the retry policy the sweep's cells show: one row per
// cell that armed a single fault on every attempt of a model request or of
// a tools/call, in sweep order.
func Fingerprint(rep *Report) []FingerprintRow {
	var out []FingerprintRow
	for _, c := range rep.Cells {
		if len(c.Schedule) != 1 || c.Schedule[0].Times != fault.Always || !fingerprinted(c.Schedule[0].Point) {
			continue
		}
		a, h := c.Schedule[0], c.Result.History
		if h == nil {
			continue
		}
		p := a.Point
		row := FingerprintRow{Base: c.Base, Request: p.Kind, Endpoint: p.Endpoint, Stream: p.Stream, Tool: p.Tool, Fault: a.Kind,
			Outcome: outcome(h), Executions: len(h.Writes()), Incomplete: h.Error != ""}
		var at []time.Duration
		var wait time.Duration
		for _, e := range h.MCP {
			switch {
			case e.Kind == wire.MCPSpawn:
				row.Spawns++
			case p.Side == SideMCP && e.Kind == wire.MCPCall && e.Tool == p.Tool:
				at = append(at, e.At.D())
			}
		}
		for _, u := range h.Upstream {
			if p.Side != SideUpstream || u.Kind != p.Kind || u.Endpoint != p.Endpoint || u.Stream != p.Stream {
				continue
			}
			at = append(at, u.At.D())
			if w, ok := u.AskedWait(); ok {
				wait = w
			}
		}
		row.Attempts = len(at)
		if len(at) > 1 {
			gaps := make([]time.Duration, len(at)-1)
			for i := range gaps {
				gaps[i] = at[i+1] - at[i]
			}
			outer := outerGaps(gaps)
			for _, i := range outer {
				row.OuterGaps = append(row.OuterGaps, history.Duration(gaps[i]))
			}
			for _, i := range slices.Backward(outer) {
				gaps = slices.Delete(gaps, i, i+1)
			}
			slices.Sort(gaps)
			row.GapMin, row.GapMedian, row.GapMax = history.Duration(gaps[0]), history.Duration(gaps[len(gaps)/2]), history.Duration(gaps[len(gaps)-1])
			row.Total = history.Duration(at[len(at)-1] - at[0])
			if wait > 0 {
				row.RetryAfter = "ignored"
				if gaps[0] >= wait {
					row.RetryAfter = "honoured"
				}
			}
		}
		out = append(out, row)
	}
	return out
}

// outerGapFactor is how much longer than the median gap a gap must be to
// end a burst of attempts.
const outerGapFactor = 2

// outerGaps returns the indexes, in order, of the gaps that separate bursts
// of attempts: each gap longer than both its neighbours and at least
// outerGapFactor times the median gap. An inner loop's backoff grows (or
// stays flat) within a burst and starts short again after the outer wait,
// so the outer waits are those peaks; a single loop, whose gaps only grow,
// has none (its longest gap is its last).
func outerGaps(gaps []time.Duration) []int {
	if len(gaps) < 3 {
		return nil
	}
	sorted := slices.Sorted(slices.Values(gaps))
	median := sorted[len(sorted)/2]
	var out []int
	for i := 1; i < len(gaps)-1; i++ {
		if gaps[i] > gaps[i-1] && gaps[i] > gaps[i+1] && gaps[i] >= outerGapFactor*median {
			out = append(out, i)
		}
	}
	return out
}

// outcome is what the app got in the run's first exchange.
func outcome(h *history.History) string {
	if len(h.Requests) == 0 {
		return "no answer"
	}
	x := h.Requests[0]
	switch {
	case x.Client != nil:
		return fmt.Sprintf("exit %d", x.Client.Exit)
	case x.TimedOut:
		return "no answer (hang)"
	case x.Status == 0:
		return "no answer: " + x.TransportError
	case x.ErrorEvents > 0:
		return fmt.Sprintf("HTTP %d, error event", x.Status)
	}
	return fmt.Sprintf("HTTP %d", x.Status)
}
