// Package rules is the replay-rule checker: a pure function from a run's
// history to verdicts. Each rule is one documented function in its own file,
// collected in one table keyed by its YAML name (see All). Plain count
// expectations (writes, status, upstream and MCP counts, stream chunks) are
// checks of the same shape.
//
// Adding a rule NAME takes these files:
//   - internal/harness/rules/NAME.go: the Rule (Name, Summary, Doc, Seed,
//     Fix, Example) and its check function, which says Unknown with the
//     reason when the history holds nothing to judge;
//   - internal/harness/rules/rules.go: its row in All;
//   - internal/harness/rules/rules_test.go: its pass, fail and unknown
//     cases.
//
// Generated from All, not written: internal/harness/rules/rules.md (go test
// ./internal/harness/rules -update) and the rule-name enum of
// schemas/scenario.schema.json (go test ./internal/harness/targetfile
// -update). Scenarios that expect it (scenarios/) are its use, not its
// cost; internal/checklist's TestChecklists adds a throwaway rule this way.
package rules

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/internal/harness/history"
)

// Status is the outcome of one check.
type Status string

// The outcomes of a check. Unknown means the history held nothing the check
// could judge; it is never counted as a pass. Skipped means the scenario did
// not apply to the target (its faults act only on a dialect the target did
// not use): neither a pass nor a failure, and never a reason to exit 1.
const (
	Pass    Status = "pass"
	Fail    Status = "fail"
	Unknown Status = "unknown"
	Skipped Status = "skipped"
)

// CheckCompleted is the check of a run that fails when the run did not
// complete before its deadline (the target hung, or the harness gave up).
const CheckCompleted = "completed"

// Check kinds.
const (
	KindRule  = "rule"  // a named replay rule
	KindCount = "count" // a plain count expectation
	KindRun   = "run"   // the run itself completed
)

// Verdict is the outcome of one check over one history.
type Verdict struct {
	// Check names the rule ("no-replay-after-dispatch") or the count
	// ("writes", "upstream.follow_up").
	Check string `json:"check"`
	// Kind is rule, count or run.
	Kind   string `json:"kind"`
	Status Status `json:"status"`
	// Expected and Observed are short phrases; Message joins them into one
	// sentence with counts.
	Expected string `json:"expected"`
	Observed string `json:"observed"`
	Message  string `json:"message"`
	// Note, when set, is a fact of the run the verdict did not weigh (traffic
	// no run could own); Message ends with it.
	Note string `json:"note,omitempty"`
	// IfJudged marks a rule the scenario expects only if the run can judge
	// it (expect.rules_if_judged): its unknown does not make the run
	// unknown (see Overall).
	IfJudged bool `json:"if_judged,omitempty"`
	// Starved marks a check that failed while the harness was starved and
	// says unknown instead: a timeout decided it, and the harness's own
	// timers ran late by a share of that timeout, or its stdio server never
	// forwarded a call the target sent before the target gave it up (see
	// Check); Observed says so and what was observed.
	Starved bool `json:"starved,omitempty"`
}

// Rule is one replay rule of the catalogue.
type Rule struct {
	// Name is the rule's YAML name.
	Name string
	// Summary is the rule in one short line, for the catalogue.
	Summary string
	// Doc states what the rule requires and when it cannot judge (from
	// its sentence that begins "Cannot judge"; see Rule.Requirement).
	Doc string
	// Seed names the seed case the rule comes from.
	Seed string
	// Fix says in a sentence or two what a target that breaks the rule
	// changes.
	Fix string
	// Example is a small scenario (YAML) that exercises the rule: a target
	// with the fix passes it.
	Example string
	// Check judges a history.
	Check func(h *history.History) Verdict
}

// All returns the rule catalogue in its documented order. The slice is new on
// every call.
func All() []Rule {
	return []Rule{
		noReplayAfterDispatchRule(),
		retryBeforeDispatchRule(),
		errorSurfacesRule(),
		noSpliceRule(),
		noReplayAmbiguousMCPRule(),
		keyedRetrySameKeyRule(),
		isErrorNotRetriedRule(),
		nonRetryableNotRetriedRule(),
		retryAfterHonoredRule(),
		boundedAttemptsRule(),
		cancelPropagatesRule(),
		modelHonoredRule(),
		noStaleToolCallRule(),
		reauthAtMostOnceRule(),
		noLostCallRule(),
	}
}

// Lookup returns the rule called name.
func Lookup(name string) (Rule, bool) {
	for _, r := range All() {
		if r.Name == name {
			return r, true
		}
	}
	return Rule{}, false
}

// Names returns the names of all rules, in catalogue order.
func Names() []string {
	rs := All()
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Name
	}
	return out
}

// Check judges h: first whether the run completed, then its plain count
// expectations, then each rule it names, in order (expect.rules, then
// expect.rules_if_judged, whose verdicts are marked IfJudged). A rule name that is not in
// the catalogue gives a failing verdict. A rule that would pass says unknown
// instead when an armed fault never fired, a script call (or a re-ask)
// matched no offered tool or a replayed cassette had no answer
// (passBlockers); a failure stays a failure. A count that failed and a rule
// that cannot judge name, beside their own observation, the script calls
// and re-asks that matched no offered tool and any cassette miss. Rule
// verdicts that pass or cannot judge note traffic no run could own
// (unattributedNote). A run whose every failure a timeout can explain, while
// the harness's own timers ran late by a share of that timeout, cannot be
// judged: those checks say unknown with the reason (see starved); so can a
// run whose every failure is a count short of its least while the harness's
// stdio server never forwarded a call the target sent (see undelivered).
func Check(h *history.History) []Verdict {
	var out []Verdict
	if h.Error != "" {
		observed := h.Error
		if why := stuckOnCutStream(h); why != "" {
			observed += "; " + why
		}
		out = append(out, verdict(CheckCompleted, KindRun, Fail, "the run to complete before its deadline", observed))
	}
	blockers := passBlockers(h)
	causes := slices.Concat(scriptCauses(h), cassetteMisses(h))
	cs, short := counts(h)
	for _, v := range cs {
		if v.Status == Fail {
			v = explain(v, causes)
		}
		out = append(out, v)
	}
	note := unattributedNote(h)
	names := slices.Concat(h.Expect.Rules, h.Expect.RulesIfJudged)
	for i, name := range names {
		r, ok := Lookup(name)
		if !ok {
			out = append(out, verdict(name, KindRule, Fail, "a known rule", "no rule of that name"))
			continue
		}
		v := r.Check(h)
		v.Check, v.Kind, v.IfJudged = r.Name, KindRule, i >= len(h.Expect.Rules)
		if v.Status == Unknown {
			v = explain(v, causes)
		}
		if v.Status == Pass && len(blockers) > 0 {
			v.Status = Unknown
			v.Observed = strings.Join(blockers, "; ") + "; without that the rule would pass: expected " + v.Expected + ", observed " + v.Observed
		}
		v.Message = message(v.Status, v.Expected, v.Observed)
		if v.Status != Fail && note != "" {
			v.Note = note
			v.Message += "; note: " + note
		}
		out = append(out, v)
	}
	if why := undelivered(h, out, short); why != "" {
		out = unjudged(out, why)
	}
	if why := starved(h, out, short); why != "" {
		out = unjudged(out, why)
	}
	return out
}

// Overall folds verdicts into one: fail if any failed, else skipped if the
// scenario did not apply, else unknown if any could not judge (an IfJudged
// rule's unknown aside), else pass if one passed. No verdicts at all, or
// only IfJudged ones that could not judge, is unknown: a pass needs evidence.
func Overall(vs []Verdict) Status {
	s, passed, skipped := Pass, false, false
	for _, v := range vs {
		switch {
		case v.Status == Fail:
			return Fail
		case v.Status == Skipped:
			skipped = true
		case v.Status == Pass:
			passed = true
		case !v.IfJudged:
			s = Unknown
		}
	}
	switch {
	case skipped:
		return Skipped
	case !passed:
		return Unknown
	}
	return s
}

// Failed returns the names of the checks that failed, in order.
func Failed(vs []Verdict) []string {
	var out []string
	for _, v := range vs {
		if v.Status == Fail {
			out = append(out, v.Check)
		}
	}
	return out
}

func verdict(check, kind string, s Status, expected, observed string) Verdict {
	return Verdict{Check: check, Kind: kind, Status: s, Expected: expected, Observed: observed, Message: message(s, expected, observed)}
}

func message(s Status, expected, observed string) string {
	switch s {
	case Unknown:
		return "cannot judge: " + observed
	case Skipped:
		return skipText(observed)
	}
	return "expected " + expected + ", observed " + observed
}

func judged(ok bool, expected, observed string) Verdict {
	s := Fail
	if ok {
		s = Pass
	}
	return Verdict{Status: s, Expected: expected, Observed: observed}
}

func unknown(expected, why string) Verdict {
	return Verdict{Status: Unknown, Expected: expected, Observed: why}
}

// plural renders "1 write", "3 writes".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// tally renders counts by key, sorted: "commit_write 3, read_ledger 1".
func tally(m map[string]int) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ×%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
