package rules

import (
	"fmt"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/history"
)

// Starvation: a timeout measures the wall clock, so on a machine whose CPU
// is taken a target's timeout (or the run's deadline) can expire before the
// work it waits for got the CPU to happen. The harness measures how late its
// own timers fired during each run (history.Harness), and how long a client
// killed at the deadline had waited for a CPU (history.ClientRun.RunDelay);
// where either is comparable to the timeout that decided a failure, the
// failure says how fast the machine ran, not what the target decided, and
// the run cannot be judged.

// starveFloor is the least lateness that counts as starvation, however short
// the deciding timeout: a machine with CPU to spare wakes the harness's
// timers within a few tens of milliseconds, also under the race detector.
const starveFloor = 100 * time.Millisecond

// starveShare is the share of the deciding timeout from which the harness's
// lateness makes that timeout's verdict untrustworthy: a timer late by half
// a timeout means whatever it timed could have lost as much, and more (a
// process needs the CPU for longer than a timer does).
const starveShare = 2

// starvedThreshold is the lateness from which a run decided by a timeout of
// d was starved.
func starvedThreshold(d time.Duration) time.Duration {
	return max(starveFloor, d/starveShare)
}

// starved returns why h's failures cannot be judged, or "" when they can:
// every failed verdict of vs is one a timeout can explain (see timingTimeout)
// and the harness's timers ran late during the run by at least
// starvedThreshold of that timeout. A failed replay rule, a count above its
// most (a write that ran twice), a run that did not complete for another
// reason, or a harness that kept time, leave the failures as they are.
// short names the count checks a timeout can explain (see counts).
func starved(h *history.History, vs []Verdict, short map[string]bool) string {
	if h.Harness == nil {
		return ""
	}
	late := h.Harness.Lateness.D()
	waited, life := starvedClient(h)
	var deciding time.Duration
	what := ""
	failed := false
	for _, v := range vs {
		if v.Status != Fail {
			continue
		}
		failed = true
		d, name := timingTimeout(h, v, short)
		if d <= 0 || life == 0 && late < starvedThreshold(d) {
			return ""
		}
		// The longest of the deciding timeouts: the one whose lateness
		// threshold was the hardest to reach (a hang's deadline beside the
		// tool timeout that also expired).
		if d > deciding {
			deciding, what = d, name
		}
	}
	if !failed {
		return ""
	}
	if life > 0 {
		return fmt.Sprintf("the machine was starved: the client's processes waited up to %s for a CPU in the %s before it was killed; re-run on a quieter machine or with a lower --parallel",
			waited.Round(time.Millisecond), life.Round(time.Millisecond))
	}
	return fmt.Sprintf("the harness was starved: its timers ran up to %s late while the %s %s decided this run; re-run on a quieter machine or with a lower --parallel",
		late.Round(time.Millisecond), deciding, what)
}

// starvedClient returns how long a client standing for one of h's
// requests, killed at its deadline, had waited for a CPU by then
// (history.ClientRun.RunDelay) and how long it had run, when that wait was
// starvedThreshold of its run or more; zeros when no client was so
// starved. Such a client was cut by the machine's load, not by what it
// decided, however punctual the harness's own timers: whatever timeout
// decided the run, it got no CPU for half of it.
func starvedClient(h *history.History) (waited, life time.Duration) {
	for _, r := range h.Requests {
		if r.Client == nil || !r.Client.Killed {
			continue
		}
		w, l := r.Client.RunDelay.D(), r.End.D()-r.Start.D()
		if l > 0 && w >= starvedThreshold(l) {
			return w, l
		}
	}
	return 0, 0
}

// timingTimeout returns the timeout that can explain the failed verdict v
// and what it is ("tool timeout", "deadline"), or 0 when no timeout can: a
// run that did not complete because its deadline passed (the deadline); a
// count below its least, a status that was an error answer or none, or a
// client killed at the deadline (the shortest of the target's known
// timeouts, else the deadline). A failed replay rule, and a count above its most, are evidence
// whatever the timing: 0.
func timingTimeout(h *history.History, v Verdict, short map[string]bool) (time.Duration, string) {
	deadline := h.Harness.Deadline.D()
	switch {
	case v.Kind == KindRun && v.Check == "completed" && deadlinePassed(h):
		return deadline, "deadline"
	case v.Kind != KindCount || !short[v.Check]:
		return 0, ""
	}
	d, name := deadline, "deadline"
	for _, t := range []struct {
		d    time.Duration
		name string
	}{{h.Setup.ToolTimeout.D(), "tool timeout"}, {h.Setup.StreamIdleTimeout.D(), "stream idle timeout"}} {
		if t.d > 0 && (d <= 0 || t.d < d) {
			d, name = t.d, t.name
		}
	}
	return d, name
}

// deadlinePassed reports whether the run ended at its deadline: its last
// request timed out, or the client standing for it was killed at it.
func deadlinePassed(h *history.History) bool {
	return !h.NotStarted && cutAtDeadline(h, len(h.Requests)-1)
}

// cutAtDeadline reports whether the client exchange h.Requests[x] ended at
// the run's deadline: it timed out, or the client standing for it was
// killed at it. Whatever the target would have done next, it had no time
// to.
func cutAtDeadline(h *history.History, x int) bool {
	if x < 0 || x >= len(h.Requests) {
		return false
	}
	r := h.Requests[x]
	return r.TimedOut || r.Client != nil && r.Client.Killed
}

// retryHops is how many times a retry waits for the harness's CPU on its
// way between the answer that asked for a wait and the retry's arrival:
// the answer reaches the target, and the retry reaches the fake. Each
// wake-up can come as late as the harness's lateness at that moment.
const retryHops = 2

// starvedWait returns why a retry that came between from and to (offsets
// from the run's start) after an answer asking for wait cannot be credited
// with waiting, or "" when it can. A wait is judged by the clock, and a
// starved machine lengthens every gap: a target that retried at once can
// arrive as late as one that waited, by retryHops wake-ups each as late as
// the harness ran between the two (history.Harness.LateWithin; lateness
// outside the gap does not lengthen it). The retry is credited when that
// is under starvedThreshold of the wait, or when the gap is the wait or
// more without it. A gap shorter than the wait needs no such care;
// starvation only lengthens gaps.
func starvedWait(h *history.History, from, to, wait time.Duration) string {
	if h.Harness == nil {
		return ""
	}
	gap := to - from
	most := h.Harness.LateWithin(from, to)
	late := retryHops * most
	if late < starvedThreshold(wait) || gap-late >= wait {
		return ""
	}
	return fmt.Sprintf("the harness was starved: its wake-ups came up to %s late between the answer and the retry, so up to %s of the gap (%d wake-ups) may be the machine's: as much as half the %s wait asked for and more than the retry's %s margin over it; re-run on a quieter machine or with a lower --parallel",
		most.Round(time.Millisecond), late.Round(time.Millisecond), retryHops, wait, (gap - wait).Round(time.Millisecond))
}

// unjudged turns the failed verdicts of vs into unknown ones that say why
// (a starved harness, see starved and undelivered), keeping what each
// expected and observed.
func unjudged(vs []Verdict, why string) []Verdict {
	out := make([]Verdict, len(vs))
	for i, v := range vs {
		if v.Status == Fail {
			v.Status, v.Starved = Unknown, true
			v.Observed = fmt.Sprintf("%s (expected %s, observed %s)", why, v.Expected, v.Observed)
			v.Message = message(v.Status, v.Expected, v.Observed)
			if v.Note != "" {
				v.Message += "; note: " + v.Note
			}
		}
		out[i] = v
	}
	return out
}

// Starved returns why r cannot be judged when the harness's own starvation
// is the cause: r is unknown, and a check that would have failed was turned
// unknown because the harness ran late (Verdict.Starved); "" otherwise. Such
// a run says how busy the machine was, not what the target did: run again,
// it may be judged.
func (r Result) Starved() string {
	if r.Verdict != Unknown {
		return ""
	}
	for _, v := range r.Verdicts {
		if v.Starved {
			return v.Message
		}
	}
	return ""
}
