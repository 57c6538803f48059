package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

func modelHonoredRule() Rule {
	return Rule{
		Name:    "model-honored",
		Summary: "the app's answer names the model that actually served it",
		Doc: "An answer the upstream served with another model than it was asked for (a provider's silent fallback, a " +
			"retired model id quietly served by its successor) is not passed off as the requested model: the answer the app " +
			"gets names the model that actually served it, and names no model that served nothing in that exchange — not the " +
			"requested model, not the model group. A target must surface the served model (pass the upstream's model id " +
			"through, or say the switch in its answer), never rewrite it to the name the app asked for; a conversation whose " +
			"turns were served by different models shows each turn's own model. Cannot judge when no upstream answer named " +
			"another model than it was asked for, or when no answer to the app in such an exchange named a model.",
		Seed: "004 #7 (silent model rerouting): \"a retired model ID quietly served by a different model with different cost and " +
			"behavior\"; the fix is to pin and verify the served model and surface a switch instead of hiding it",
		Fix: "Pass the upstream's model id through to the app (or say the switch in the answer); never " +
			"rewrite it to the model or model group the app asked for.",
		Example: `# scenarios/model/served-model.yaml, trimmed
name: served model (chat)
request: {endpoint: chat}
faults:
  upstream: [{serve_model: fallback-mini}]
expect:
  status: 200
  rules: [model-honored]
`,
		Check: modelHonored,
	}
}

// rerouted reports whether the upstream answered u with another model than
// the request named.
func rerouted(u wire.UpstreamRequest) bool {
	return u.ServedModel != "" && u.Model != "" && u.ServedModel != u.Model
}

// modelHonored judges each client exchange in which an upstream answer was
// served by another model than requested: the models the app's answer named
// must all have served an upstream answer of that exchange, and must include
// the model of its last served answer (the one the app got).
func modelHonored(h *history.History) Verdict {
	const expected = "the answer to the app to name the model the upstream served"
	why := "no upstream answer was served by another model than it was asked for"
	judgedAny := false
	var observed []string
	for i, x := range h.Requests {
		var served []string
		var reroutes []string
		last := ""
		for _, u := range upstreamIn(h, i) {
			if u.ServedModel == "" {
				continue
			}
			last = u.ServedModel
			if !slices.Contains(served, u.ServedModel) {
				served = append(served, u.ServedModel)
			}
			if rerouted(u) {
				reroutes = append(reroutes, fmt.Sprintf("%s served by %s", u.Model, u.ServedModel))
			}
		}
		if len(reroutes) == 0 {
			continue
		}
		if len(x.Models) == 0 {
			why = "the answer to the app named no model where the upstream served another model than requested"
			continue
		}
		judgedAny = true
		got := fmt.Sprintf("request %d: upstream %s; the app was told %s", i+1, strings.Join(reroutes, ", "), strings.Join(x.Models, ", "))
		for _, m := range x.Models {
			if !slices.Contains(served, m) {
				return judged(false, expected, got+fmt.Sprintf(" — %s served no answer of that request, so the switch to %s was hidden", m, last))
			}
		}
		if !slices.Contains(x.Models, last) {
			return judged(false, expected, got+fmt.Sprintf(" — not %s, which served the answer it got", last))
		}
		observed = append(observed, got)
	}
	if !judgedAny {
		return unknown(expected, why)
	}
	return judged(true, expected, strings.Join(observed, "; "))
}
