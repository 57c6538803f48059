package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// lostOnResume judges no-lost-call on a run that killed the target and
// resumed it (history.TargetEvents): a tools/call the script asked for
// that never ran in any life while the last resumed life reported success
// (exit 0, a final answer) is a lost call; unknown when that life said
// nothing (killed again, past the deadline); a life that reported failure
// told the user. ok is false on a run that killed nothing.
func lostOnResume(h *history.History) (v Verdict, ok bool) {
	kills := h.Kills()
	if len(kills) == 0 {
		return Verdict{}, false
	}
	const expected = "every tool call the model asked for runs once across the target's lives, or the resumed run reports it did not"
	var last *history.TargetEvent
	for i := range h.TargetEvents {
		if e := &h.TargetEvents[i]; e.Kind == history.TargetResumed {
			last = e
		}
	}
	if len(h.Upstream) == 0 {
		return unknown(expected, "the target never asked the model, so it was asked for no tool call"), true
	}
	ran, dedup := wrote(h), deduplicated(h)
	executed := map[string]int{}
	for j, c := range h.MCP {
		if c.Kind == wire.MCPCall && (ran[j] || dedup[j]) {
			executed[c.Tool]++
		}
	}
	var missing []string
	tools := slices.Clone(h.Setup.Tools)
	slices.Sort(tools)
	for _, t := range slices.Compact(tools) {
		if n := countOf(h.Setup.Tools, t, 1) - executed[t]; n > 0 {
			missing = append(missing, fmt.Sprintf("%s ×%d", t, n))
		}
	}
	killed := killText(kills[0])
	if len(missing) == 0 {
		return judged(true, expected, fmt.Sprintf("every asked call ran (%s; %s)", plural(len(h.Writes()), "write"), killed)), true
	}
	never := strings.Join(missing, ", ") + " never ran"
	switch {
	case last == nil || last.Exit == nil:
		return unknown(expected, never+"; the target was not resumed, so it reported nothing ("+killed+")"), true
	case last.Success:
		return judged(false, expected, fmt.Sprintf("lost call: %s while the resumed run (life %d) reported success%s (%s)", never, last.Life, saidText(last), killed)), true
	case *last.Exit == -1:
		return unknown(expected, fmt.Sprintf("%s and the resumed run (life %d) said nothing: it did not end by itself (%s)", never, last.Life, killed)), true
	}
	return judged(true, expected, fmt.Sprintf("%s, and the resumed run (life %d) reported failure (exit %d): the user was told (%s)", never, last.Life, *last.Exit, killed)), true
}

// resumedReplayText says how many of the executions execs (indexes of
// h.MCP) ran after the target was killed, replayed by the resumed run; ""
// when none did.
func resumedReplayText(h *history.History, execs []int) string {
	kills := h.Kills()
	if len(kills) == 0 || len(execs) < 2 {
		return ""
	}
	first := kills[0].At
	after := 0
	for _, i := range execs {
		if h.MCP[i].At > first {
			after++
		}
	}
	if after == 0 {
		return ""
	}
	return fmt.Sprintf("replayed by the resumed run: %s after the target was %s", plural(after, "execution"), killText(kills[0]))
}

// killText describes a kill: "killed (SIGKILL) after tools/call
// commit_write ran".
func killText(e history.TargetEvent) string {
	return fmt.Sprintf("killed (%s) %s", e.Signal, KillPointText(e))
}

// KillPointText says where a kill happened, as reports word it: "after
// tools/call commit_write ran", "when its follow-up model request arrived".
func KillPointText(e history.TargetEvent) string {
	switch e.Point {
	case history.KillAfterExecute:
		return "after tools/call " + e.Tool + " ran"
	case history.KillAtFollowUp:
		return "when its follow-up model request arrived"
	case history.KillInStream:
		return "while it read a model stream"
	case history.KillAfterDelay:
		return "after a delay"
	}
	return "at " + string(e.Point)
}

// saidText is ": SAID" for a resumed life that said something.
func saidText(e *history.TargetEvent) string {
	if e.Said == "" {
		return ""
	}
	s := strings.Join(strings.Fields(e.Said), " ")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:80]) + "…"
	}
	return fmt.Sprintf(": %q", s)
}

// killHolds returns the indexes in h.MCP of the holds of the kill points
// after execute: the harness holds the answer of the tool's call a kill
// comes after (a delay fault of its own), so that the kill is exact. They
// are not a slow tool a caller gave up on.
func killHolds(h *history.History) map[int]bool {
	out := map[int]bool{}
	for _, k := range h.Kills() {
		if k.Point != history.KillAfterExecute {
			continue
		}
		hold := -1
		for i, e := range h.MCP {
			if e.At > k.At {
				break
			}
			if m, ok := e.FaultMeaning(); ok && m.ClientSees == wire.ClientSeesLateAnswer && e.Tool == k.Tool && !out[i] {
				hold = i
			}
		}
		if hold >= 0 {
			out[hold] = true
		}
	}
	return out
}
