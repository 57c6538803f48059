package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/internal/dialect"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// CheckApplies names the verdict of a run whose scenario did not apply to
// its target (see Evaluate); its status is Skipped.
const CheckApplies = "applies"

// notApplicable says why h's scenario could not apply to its target: every
// armed fault is an upstream fault that never fired and acts only on a
// dialect or stream mode that no model request of the run used ("the target
// spoke OpenAI Chat Completions, not streamed; this scenario's faults act on
// Gemini generateContent, streamed"). It is "" when the scenario applied: a
// fault fired, a fault could have met the target's requests, or the target
// sent no model request at all (what it speaks is then not known).
func notApplicable(h *history.History) string {
	if len(h.Faults) == 0 || len(h.Upstream) == 0 {
		return ""
	}
	var acts []string
	for _, f := range h.Faults {
		if f.Fired > 0 || f.Side != wire.FaultUpstream || (f.Endpoint == "" && f.Stream == nil) {
			return ""
		}
		if slices.ContainsFunc(h.Upstream, func(u wire.UpstreamRequest) bool { return couldMeet(f, u) }) {
			return ""
		}
		acts = appendNew(acts, modeText(f.Endpoint, f.Stream))
	}
	var spoke []string
	for _, u := range h.Upstream {
		stream := u.Stream
		spoke = appendNew(spoke, modeText(u.Endpoint, &stream))
	}
	return fmt.Sprintf("the target spoke %s; this scenario's faults act on %s", joinAnd(spoke), joinAnd(acts))
}

// couldMeet reports whether upstream fault f's dialect and stream filters
// admit request u.
func couldMeet(f wire.FaultReport, u wire.UpstreamRequest) bool {
	return (f.Endpoint == "" || f.Endpoint == u.Endpoint) && (f.Stream == nil || *f.Stream == u.Stream)
}

// modeText names a dialect and stream mode for people: "OpenAI Chat
// Completions, not streamed", "Gemini generateContent, streamed", "any
// dialect, streamed".
func modeText(endpoint string, stream *bool) string {
	name := "any dialect"
	if endpoint != "" {
		name = endpoint
		if d, ok := dialect.ByName(endpoint); ok {
			name = d.Title
		}
	}
	switch {
	case stream == nil:
		return name
	case *stream:
		return name + ", streamed"
	default:
		return name + ", not streamed"
	}
}

// skippedVerdict is the one verdict of a run whose scenario did not apply:
// why, in the words of notApplicable.
func skippedVerdict(why string) Verdict {
	v := Verdict{Check: CheckApplies, Kind: KindRun, Status: Skipped,
		Expected: "a fault the target's model requests can meet", Observed: why}
	v.Message = message(Skipped, v.Expected, v.Observed)
	return v
}

// ruleBroken reports whether a replay rule failed among vs: a duplicate
// write is one whether or not the scenario applied.
func ruleBroken(vs []Verdict) bool {
	return slices.ContainsFunc(vs, func(v Verdict) bool { return v.Kind == KindRule && v.Status == Fail })
}

// skipText is the message of a skipped verdict: "not applicable: why".
func skipText(why string) string {
	return "not applicable: " + strings.TrimSpace(why)
}
