package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// These are the facts of a run that keep a rule from passing, and the note
// on traffic no run could own. Check applies them to every rule verdict, once,
// so no rule has to remember them:
//   - an armed fault that never fired: the rule judged a run without the
//     failure the scenario is about, so its pass proves nothing;
//   - a script call that matched no tool the request offered: the fake model
//     never made the call the scenario is about;
//   - a re-ask the model was due to make (again_if_failed) that matched no
//     tool the follow-up offered: the model never asked again;
//   - a call a replayed cassette (MCP or model) had no recording for: the
//     run left the recording, and what the target did next answers an error
//     the real server or model never gave (cassetteMisses).
// A failing verdict stays a failure: a duplicate write is one whether or not
// the scenario's fault fired. A history with no fault reports and no offered
// tools (one saved before they were recorded) is judged as before.

// maxNames caps the tool names and paths a reason lists.
const maxNames = 8

// passBlockers returns why no rule may pass on h: one sentence per fact, or
// nil when nothing holds a pass back.
func passBlockers(h *history.History) []string {
	var out []string
	up, mcp := unfiredFaults(h)
	if len(up) > 0 {
		out = append(out, unfired(up)+": "+upstreamActivity(h))
	}
	if len(mcp) > 0 {
		out = append(out, unfired(mcp)+": "+mcpActivity(h))
	}
	out = append(out, scriptCauses(h)...)
	return append(out, cassetteMisses(h)...)
}

// scriptCauses returns why the script did not play out as written, one
// sentence per fact: calls that matched no offered tool (unmatchedCalls)
// and re-asks the model could not make (againUnmatched); nil when it played
// out. Besides holding a pass back, they explain a count that failed and a
// rule that could not judge (explain).
func scriptCauses(h *history.History) []string {
	var out []string
	for _, s := range []string{unmatchedCalls(h), againUnmatched(h)} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// explain returns v with causes, the facts that explain its observation,
// after its observation; v as it is when there are none.
func explain(v Verdict, causes []string) Verdict {
	if len(causes) == 0 {
		return v
	}
	v.Observed += "; " + strings.Join(causes, "; ")
	v.Message = message(v.Status, v.Expected, v.Observed)
	return v
}

// unfired names faults that never fired: "upstream fault 1 {on: follow_up,
// respond: {status: 500}} never fired (it matched no request)".
func unfired(fs []wire.FaultReport) string {
	parts := make([]string, len(fs))
	whys := make([]string, len(fs))
	for i, f := range fs {
		unit := "request"
		switch {
		case f.Side == wire.FaultMCP && f.Method != "":
			unit = f.Method + " request"
		case f.Side == wire.FaultMCP:
			unit = "tools/call"
		}
		whys[i] = "it matched no " + unit
		if f.Matched > 0 {
			whys[i] = fmt.Sprintf("it matched %s and fired on none", plural(f.Matched, unit))
		}
		parts[i] = fmt.Sprintf("%s fault %d %s", f.Side, f.Index, compactJSON(f.Fault))
	}
	if len(fs) == 1 {
		return parts[0] + " never fired (" + whys[0] + ")"
	}
	for i := range parts {
		parts[i] += " (" + whys[i] + ")"
	}
	return joinAnd(parts) + " never fired"
}

// upstreamActivity says what model requests the target sent: "the target sent
// 2 initial requests and no follow-up (/v1/messages, streamed)".
func upstreamActivity(h *history.History) string {
	if len(h.Upstream) == 0 {
		return "the target sent no model request"
	}
	initial, follow := 0, 0
	var paths []string
	streamed, plain := false, false
	for _, u := range h.Upstream {
		switch u.Kind {
		case wire.KindInitial:
			initial++
		case wire.KindFollowUp:
			follow++
		}
		paths = appendNew(paths, u.Path)
		if u.Stream {
			streamed = true
		} else {
			plain = true
		}
	}
	var kinds []string
	switch {
	case initial == 0:
		kinds = append(kinds, "no initial request")
	default:
		kinds = append(kinds, plural(initial, "initial request"))
	}
	switch follow {
	case 0:
		kinds = append(kinds, "no follow-up")
	case 1:
		kinds = append(kinds, "1 follow-up")
	default:
		kinds = append(kinds, fmt.Sprintf("%d follow-ups", follow))
	}
	if other := len(h.Upstream) - initial - follow; other > 0 {
		kinds = append(kinds, plural(other, "other request"))
	}
	mode := "not streamed"
	switch {
	case streamed && plain:
		mode = "streamed and not"
	case streamed:
		mode = "streamed"
	}
	return fmt.Sprintf("the target sent %s (%s, %s)", joinAnd(kinds), capped(paths), mode)
}

// mcpActivity says what the target did on the MCP server: "the target called
// read_ledger ×2" or "the target made no tools/call (session: initialize,
// tools/list)".
func mcpActivity(h *history.History) string {
	calls := h.Calls("")
	var methods []string
	for _, e := range h.MCP {
		switch e.Kind {
		case wire.MCPSession:
			methods = appendNew(methods, e.Method)
		case wire.MCPSessionRefused:
			methods = appendNew(methods, e.Method+" refused")
		}
	}
	session := ""
	if len(methods) > 0 {
		session = " (session: " + capped(methods) + ")"
	}
	did := "the target called " + tally(byTool(calls))
	if len(calls) == 0 {
		did = "the target made no tools/call" + session
	}
	if given := undeliveredActivity(h); given != "" {
		did += "; " + given
	}
	return did
}

// unmatchedCalls names the script's calls that matched no offered tool, with
// the tools the requests offered; "" when every call matched. A call of a
// tool that a change_tools fault removed, renamed or added before the request
// is not named: a target that offers the changed list does not offer it.
func unmatchedCalls(h *history.History) string {
	changed := changedTools(h)
	var missed, offered []string
	anyOffered := false
	for _, u := range h.Upstream {
		anyOffered = anyOffered || len(u.Offered) > 0
	}
	for _, u := range h.Upstream {
		// A request that offers no tools at all is a client's side request
		// (a title, a summary, a quota check), not its tool loop; it counts
		// only when no request offered any tool.
		if anyOffered && len(u.Offered) == 0 {
			continue
		}
		for _, t := range u.Unmatched {
			if at, ok := changed[t]; ok && u.At >= at {
				continue
			}
			missed = appendNew(missed, t)
		}
		for _, t := range u.Offered {
			offered = appendNew(offered, t)
		}
	}
	if len(missed) == 0 {
		return ""
	}
	list := offeredText(offered, "none (the requests offered no tools)")
	hint := ""
	for _, t := range offered {
		if strings.EqualFold(strings.ReplaceAll(t, "_", ""), "toolsearch") {
			hint = fmt.Sprintf(" (the client offers %s: it defers its MCP tools behind a tool search, which the scripted model does not use; offer them directly, e.g. ENABLE_TOOL_SEARCH=false for Claude Code)", t)
			break
		}
	}
	if len(missed) == 1 {
		return fmt.Sprintf("the script's call %s matched no offered tool; offered: %s%s", missed[0], list, hint)
	}
	return fmt.Sprintf("the script's calls %s matched no offered tool; offered: %s%s", joinAnd(missed), list, hint)
}

// changedTools returns the tools a change_tools fault removed or added, with
// the time of their first change.
func changedTools(h *history.History) map[string]history.Duration {
	out := map[string]history.Duration{}
	for _, e := range h.MCP {
		if _, seen := out[e.Tool]; e.Kind == wire.MCPToolsChanged && !seen {
			out[e.Tool] = e.At
		}
	}
	return out
}

// unattributedNote is the note a verdict carries when traffic no run could
// own reached the fakes during the run; "" when there was none.
func unattributedNote(h *history.History) string {
	u := h.Unattributed
	if u == nil || u.Upstream+u.MCP == 0 {
		return ""
	}
	return fmt.Sprintf("%s and %s with no run reached the fakes during this run; they may be this target's or a parallel run's",
		plural(u.Upstream, "model request"), plural(u.MCP, "MCP message"))
}

// appendNew appends s to list unless it is empty or already there.
func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	if s == "" {
		return list
	}
	return append(list, s)
}

// offeredText lists the offered tool names for a reason (capped), or says
// none when there are none.
func offeredText(offered []string, none string) string {
	if len(offered) == 0 {
		return none
	}
	return capped(offered)
}

// capped joins names with commas, at most maxNames of them: "a, b, c and 4 more".
func capped(names []string) string {
	if len(names) <= maxNames {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:maxNames], ", ") + fmt.Sprintf(" and %d more", len(names)-maxNames)
}

// joinAnd joins parts as "a", "a and b", "a, b and c".
func joinAnd(parts []string) string {
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// bareWord matches a JSON string compactJSON may show without quotes.
var bareWord = regexp.MustCompile(`^[A-Za-z0-9_./-]+$`)

// compactJSON renders a fault as armed in YAML's flow style, keys in their
// order: {on: follow_up, respond: {status: 500}}. JSON it cannot read is
// shown as it is.
func compactJSON(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "{}"
	}
	var b strings.Builder
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := writeCompact(&b, dec); err != nil {
		return string(raw)
	}
	return b.String()
}

// writeCompact writes the next JSON value of dec to b.
func writeCompact(b *strings.Builder, dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		closing := "}"
		if t == '[' {
			closing = "]"
		}
		b.WriteString(t.String())
		for i := 0; dec.More(); i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			if t == '{' {
				key, err := dec.Token()
				if err != nil {
					return err
				}
				b.WriteString(scalar(key))
				b.WriteString(": ")
			}
			if err := writeCompact(b, dec); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		b.WriteString(closing)
	default:
		b.WriteString(scalar(t))
	}
	return nil
}

// scalar renders one JSON scalar token: a string bare when it is one word,
// quoted otherwise.
func scalar(tok json.Token) string {
	switch v := tok.(type) {
	case string:
		if bareWord.MatchString(v) {
			return v
		}
		return strconv.Quote(v)
	case nil:
		return "null"
	default:
		return fmt.Sprint(v)
	}
}
