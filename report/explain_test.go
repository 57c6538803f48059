package report

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// naiveRun is a real run of seed and MCP scenarios on builtin:naive, saved
// with run --json (testdata/naive-run.json).
func naiveRun(t testing.TB) Suite {
	t.Helper()
	f, err := os.Open("testdata/naive-run.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// naiveResult returns the saved naive run's result of scenario.
func naiveResult(t testing.TB, scenario string) rules.Result {
	t.Helper()
	for _, r := range naiveRun(t).Results {
		if r.History.Scenario == scenario {
			return r
		}
	}
	t.Fatalf("no result of %q in testdata/naive-run.json", scenario)
	return rules.Result{}
}

// countWhere counts the lines for which match(line, s) holds.
func countWhere(lines []string, match func(line, s string) bool, s string) int {
	n := 0
	for _, l := range lines {
		if match(l, s) {
			n++
		}
	}
	return n
}

func stepsOf(steps []Step, kind StepKind) []Step {
	var out []Step
	for _, s := range steps {
		if s.Kind == kind {
			out = append(out, s)
		}
	}
	return out
}

// Seed 000 on the naive gateway: three loops, each a new attempt whose
// model answer asks for the tool again; the second and third executions are
// replays of the first, each tied to the answer (and call id) that asked.
func TestExplainSeed000(t *testing.T) {
	h := naiveResult(t, "seed messages fault_on").History
	steps := Explain(h)

	type up struct {
		Attempt, Try, ModelCall int
		Label                   string
	}
	var ups []up
	for _, s := range stepsOf(steps, StepUpstream) {
		ups = append(ups, up{s.Attempt, s.Try, s.ModelCall, s.Label})
	}
	ids := make([]string, 0, 3)
	for _, u := range h.Upstream {
		if len(u.Calls) == 1 {
			ids = append(ids, u.Calls[0].ID)
		}
	}
	if len(ids) != 3 {
		t.Fatalf("the saved run's model answers made %d calls with ids, want 3", len(ids))
	}
	wantUps := []up{
		{1, 1, 1, "POST /v1/responses initial"},
		{1, 1, 2, "POST /v1/responses follow-up with the result of " + ids[0]},
		{2, 1, 3, "POST /v1/responses initial"},
		{2, 1, 4, "POST /v1/responses follow-up with the result of " + ids[1]},
		{3, 1, 5, "POST /v1/responses initial"},
		{3, 1, 6, "POST /v1/responses follow-up with the result of " + ids[2]},
	}
	if d := cmp.Diff(wantUps, ups); d != "" {
		t.Errorf("model requests (-want +got):\n%s", d)
	}

	first := stepsOf(steps, StepUpstream)[0]
	wantNote := "translated: the app sent Anthropic Messages (/v1/messages); the target asked the model in OpenAI Responses (/v1/responses)"
	if !slices.Contains(first.Notes, wantNote) {
		t.Errorf("first model request's notes %q lack %q", first.Notes, wantNote)
	}
	for _, s := range stepsOf(steps, StepUpstream)[1:] {
		if len(s.Notes) > 0 {
			t.Errorf("model request %d: notes %q, want the translation explained once", s.ModelCall, s.Notes)
		}
	}

	type call struct {
		CallID                        string
		ModelCall, Attempt, Execution int
		Replay                        bool
	}
	var calls []call
	tc := stepsOf(steps, StepToolCall)
	for _, s := range tc {
		calls = append(calls, call{s.CallID, s.ModelCall, s.Attempt, s.Execution, s.Replay()})
	}
	wantCalls := []call{{ids[0], 1, 1, 1, false}, {ids[1], 3, 2, 2, true}, {ids[2], 5, 3, 3, true}}
	if d := cmp.Diff(wantCalls, calls); d != "" {
		t.Errorf("tool calls (-want +got):\n%s", d)
	}
	for _, s := range tc[1:] {
		if s.FirstAt != tc[0].At {
			t.Errorf("replay at %v: first ran at %v, want %v", s.At, s.FirstAt, tc[0].At)
		}
	}

	var faults []int
	for _, s := range stepsOf(steps, StepModelAnswer) {
		if s.Fault != "" {
			faults = append(faults, s.ModelCall)
		}
	}
	if d := cmp.Diff([]int{2, 4, 6}, faults); d != "" {
		t.Errorf("model answers an injected fault hit (-want +got):\n%s", d)
	}

	ans := stepsOf(steps, StepAnswer)
	if len(ans) != 1 || !ans[0].Failed || !strings.Contains(ans[0].Body, "injected follow-up failure") || ans[0].Label != "HTTP 500" {
		t.Errorf("the app's answer: %+v", ans)
	}
	if last := steps[len(steps)-1]; last.Kind != StepAnswer {
		t.Errorf("last step is %s %q, want the app's answer", last.Kind, last.Label)
	}
}

// Seed 001 on the naive gateway: the ledger's answer is cut after the tool
// ran, and the gateway sends the same tool call (same id) again on a new
// session: a replay, and the cut is marked where it hit.
func TestExplainResentCall(t *testing.T) {
	steps := Explain(naiveResult(t, "mcp ambiguous disconnect").History)
	tc := stepsOf(steps, StepToolCall)
	if len(tc) != 2 {
		t.Fatalf("%d tool calls, want 2", len(tc))
	}
	if tc[0].CallID == "" || tc[1].CallID != tc[0].CallID {
		t.Errorf("call ids %q and %q: want the same id twice", tc[0].CallID, tc[1].CallID)
	}
	if tc[0].Replay() || !tc[1].Replay() || tc[1].Execution != 2 {
		t.Errorf("executions %d, %d: want 1, then a replay 2", tc[0].Execution, tc[1].Execution)
	}
	if !slices.Contains(tc[1].Notes, "the same tool call sent again") {
		t.Errorf("re-sent call's notes %q", tc[1].Notes)
	}
	var cut []Step
	for _, s := range stepsOf(steps, StepLedger) {
		if s.Fault != "" {
			cut = append(cut, s)
		}
	}
	if len(cut) != 1 || cut[0].Fault != wire.MCPFaultDropAfterExecute || cut[0].At < tc[0].At || cut[0].At > tc[1].At {
		t.Errorf("ledger faults %+v: want one drop_after_execute between the two calls", cut)
	}
	if s := stepsOf(steps, StepSession); len(s) != 3 || !strings.HasPrefix(s[0].Label, "MCP session: ") {
		t.Errorf("session steps %+v: want each run of session steps joined: the first session, the second, its DELETE", s)
	}
}

// A call the ledger refused before it ran, or answered from an earlier call
// with the same key, is not an execution: what follows is no replay.
func TestExplainNotExecuted(t *testing.T) {
	call := func(at float64, id string) wire.MCPEvent {
		return wire.MCPEvent{At: ms(at), Kind: wire.MCPCall, Tool: "commit_write_keyed", RequestID: id}
	}
	h := &history.History{
		Setup:    history.Setup{ToolCalls: 1, Tools: []string{"commit_write_keyed"}},
		Requests: []history.Exchange{{Endpoint: "chat", Path: "/v1/chat/completions", Start: ms(0), End: ms(20), Status: 200}},
		MCP: []wire.MCPEvent{
			call(1, "1"),
			{At: ms(1.1), Kind: wire.MCPFault, Tool: "commit_write_keyed", RequestID: "1", Fault: wire.MCPFaultFailBeforeExecute},
			call(2, "2"),
			{At: ms(2.1), Kind: wire.MCPWrite, Tool: "commit_write_keyed", RequestID: "2", Entry: "alpha", Key: "k1"},
			{At: ms(2.2), Kind: wire.MCPResult, Tool: "commit_write_keyed", RequestID: "2"},
			call(3, "3"),
			{At: ms(3.1), Kind: wire.MCPResult, Tool: "commit_write_keyed", RequestID: "3", Dedup: true},
		},
	}
	var got []int
	var notes [][]string
	for _, s := range stepsOf(Explain(h), StepToolCall) {
		got = append(got, s.Execution)
		notes = append(notes, s.Notes)
	}
	if d := cmp.Diff([]int{0, 1, 0}, got); d != "" {
		t.Errorf("executions (-want +got):\n%s", d)
	}
	if len(notes) != 3 || !slices.Contains(notes[0], "refused before it ran") || !strings.Contains(strings.Join(notes[2], ""), "same idempotency key") {
		t.Errorf("notes %q", notes)
	}
}

// The -v timeline of seed 000 says it all in text: each model request's
// attempt, each tool call's id and the answer that asked for it, the
// replays and the faults marked, the translation, and the app's answer,
// capped.
func TestTimelineExplainsSeed000(t *testing.T) {
	h := naiveResult(t, "seed messages fault_on").History
	lines := Timeline(h)
	text := strings.Join(lines, "\n")
	count := func(sub string) int { return countWhere(lines, strings.Contains, sub) }
	for _, tt := range []struct {
		sub  string
		want int
	}{
		{"target → model   attempt 1: POST /v1/responses initial", 1},
		{"target → model   attempt 2: POST /v1/responses initial", 1},
		{"target → model   attempt 3: POST /v1/responses initial", 1},
		{"tools/call commit_write [call_", 3},
		{"REPLAY #2 (first ran at +", 1},
		{"REPLAY #3 (first ran at +", 1},
		{"REPLAY", 2},
		{"model → target   FAULT follow_up respond 500 always: HTTP 500", 3},
		{"↳ translated: the app sent Anthropic Messages (/v1/messages); the target asked the model in OpenAI Responses (/v1/responses)", 1},
		{"target → app     HTTP 500", 1},
		{"↳ body: {", 1},
	} {
		if got := count(tt.sub); got != tt.want {
			t.Errorf("%d lines with %q, want %d:\n%s", got, tt.sub, tt.want, text)
		}
	}
	// Each tool call names the id its model answer gave, on an earlier line.
	for i, l := range lines {
		_, rest, ok := strings.Cut(l, "tools/call commit_write [")
		if !ok {
			continue
		}
		id, _, _ := strings.Cut(rest, " ")
		if !strings.Contains(strings.Join(lines[:i], "\n"), "asks for ledger-commit_write "+id) {
			t.Errorf("tool call %s: no earlier model answer asks for it:\n%s", id, text)
		}
	}
	for _, l := range lines {
		if strings.Contains(l, "↳ body:") && len([]rune(l)) > 60+timelineBodyCap {
			t.Errorf("body line of %d characters, want it capped near %d: %s", len([]rune(l)), timelineBodyCap, l)
		}
	}
}

// An answer body with a code fence in it stays inside the Markdown
// timeline's code block: the block's fence is longer.
func TestMarkdownTimelineFence(t *testing.T) {
	h := seedRun("builtin:naive", 2)
	h.Requests[0].Body = "```\n# not a heading"
	var b strings.Builder
	if err := WriteMarkdown(&b, Suite{Results: []rules.Result{rules.Evaluate(h)}}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	open := strings.Index(out, "<details><summary>timeline</summary>\n\n````\n")
	body := strings.Index(out, "↳ body: ``` ⏎ # not a heading")
	end := strings.LastIndex(out, "\n````\n\n</details>")
	if open < 0 || body < open || end < body {
		t.Errorf("timeline block not fenced past the body's fence:\n%s", out)
	}
}

// What the ledger did is said in words, each injected fault marked.
func TestExplainLedgerSteps(t *testing.T) {
	h := &history.History{
		Requests: []history.Exchange{{Endpoint: "chat", Path: "/v1/chat/completions", Start: ms(0), End: ms(10), Status: 200}},
		MCP: []wire.MCPEvent{
			{At: ms(0), Kind: wire.MCPSpawn, PID: "4711"},
			{At: ms(1), Kind: wire.MCPToolsChanged, Tool: "commit_write", Change: wire.MCPToolRemoved},
			{At: ms(2), Kind: wire.MCPCall, Tool: "commit_write", RequestID: "3", UnknownTool: true},
			{At: ms(3), Kind: wire.MCPFault, Tool: "commit_write", RequestID: "3", Fault: wire.MCPFaultExpireSessionAfterExecute},
			{At: ms(4), Kind: wire.MCPFault, Tool: "commit_write", RequestID: "4", Fault: wire.MCPFaultUnauthorized},
			{At: ms(5), Kind: wire.MCPFault, Tool: "commit_write", RequestID: "5", PID: "4711", Fault: wire.MCPFaultStdioExitAfterExecute},
			{At: ms(5), Kind: wire.MCPExit, Tool: "commit_write", RequestID: "5", PID: "4711", End: wire.MCPExitFault, Fault: wire.MCPFaultStdioExitAfterExecute},
			{At: ms(6), Kind: wire.MCPSpawn, PID: "4712"},
			{At: ms(6), Kind: wire.MCPFault, PID: "4712", Fault: wire.MCPFaultStdioExitAtStart},
			{At: ms(6), Kind: wire.MCPExit, PID: "4712", End: wire.MCPExitFault, Fault: wire.MCPFaultStdioExitAtStart},
			{At: ms(7), Kind: wire.MCPExit, Tool: "commit_write", RequestID: "8", PID: "4713", End: wire.MCPExitFault, Fault: wire.MCPFaultStdioExitAfterAnswer},
			{At: ms(8), Kind: wire.MCPUnforwarded, Tool: "commit_write", PID: "4714"},
			{At: ms(8), Kind: wire.MCPExit, Tool: "commit_write", RequestID: "9", PID: "4714", End: wire.MCPExitStdinClosed},
			{At: ms(9), Kind: wire.MCPExit, PID: "4715", End: wire.MCPExitGone},
			{At: ms(9.5), Kind: wire.MCPFault, Tool: "create_item", RequestID: "10", Fault: wire.MCPFaultForwardUnknown},
		},
	}
	type step struct {
		Kind         StepKind
		Label, Fault string
	}
	var got []step
	for _, s := range Explain(h) {
		if s.Kind == StepLedger || s.Kind == StepToolCall {
			got = append(got, step{s.Kind, s.Label, s.Fault})
		}
	}
	want := []step{
		{StepLedger, "stdio server spawned (pid 4711)", ""},
		{StepLedger, "tool list changed: commit_write removed", ""},
		{StepToolCall, "tools/call commit_write (a tool the server did not offer)", ""},
		{StepLedger, "session expired after the tool ran, connection closed", wire.MCPFaultExpireSessionAfterExecute},
		{StepLedger, "refused: 401 unauthorized", wire.MCPFaultUnauthorized},
		{StepLedger, "stdio server told to exit after the tool ran, before answering", wire.MCPFaultStdioExitAfterExecute},
		{StepLedger, "stdio server pid 4711 exited before answering tools/call commit_write [5] (fault stdio_exit_after_execute)", wire.MCPFaultStdioExitAfterExecute},
		{StepLedger, "stdio server spawned (pid 4712)", ""},
		{StepLedger, "stdio server told to exit as it starts", wire.MCPFaultStdioExitAtStart},
		{StepLedger, "stdio server pid 4712 exited as it started, before serving (fault stdio_exit_at_start)", wire.MCPFaultStdioExitAtStart},
		{StepLedger, "stdio server pid 4713 exited after answering tools/call commit_write [8] (fault stdio_exit_after_answer)", wire.MCPFaultStdioExitAfterAnswer},
		{StepLedger, "tools/call commit_write given up before stdio server pid 4714 forwarded it (never ran)", ""},
		{StepLedger, "stdio server pid 4714 exited before answering tools/call commit_write [9] (stdin closed)", ""},
		{StepLedger, "stdio server pid 4715 exited (went away without closing its session: killed or crashed)", ""},
		{StepLedger, "forwarded tools/call create_item: the server's answer never came back — unknown whether it ran", wire.MCPFaultForwardUnknown},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ledger steps (-want +got):\n%s", d)
	}
}

// A client command's answer is its exit and the end of its output; it
// failed when it did not exit 0.
func TestExplainClientAnswer(t *testing.T) {
	for _, tt := range []struct {
		exit       int
		wantFailed bool
	}{{0, false}, {1, true}} {
		h := &history.History{Requests: []history.Exchange{{Start: ms(0), End: ms(5), Paths: []string{"/v1/messages"},
			Client: &history.ClientRun{Exit: tt.exit, Stdout: "one\ntwo\n"}}}}
		var got []Step
		for _, s := range Explain(h) {
			got = append(got, Step{Kind: s.Kind, Label: s.Label, Body: s.Body, Failed: s.Failed})
		}
		want := []Step{
			{Kind: StepRequest, Label: "run of the client command (called /v1/messages)"},
			{Kind: StepAnswer, Label: "client exit " + strconv.Itoa(tt.exit), Body: "one\ntwo", Failed: tt.wantFailed},
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("exit %d (-want +got):\n%s", tt.exit, d)
		}
	}
}

// A model that asks again: the follow-up line says what the client told
// the model about each call, the answer marks the re-ask, the re-asked
// call's tools/call says why it came, and the next follow-up (a new result)
// is no try 2 of the first.
func TestExplainAskedAgain(t *testing.T) {
	initial := wire.UpstreamRequest{At: ms(1), Path: "/v1/messages", Kind: wire.KindInitial, Outcome: wire.OutcomeForwarded, Status: 200,
		Calls: []wire.ToolCall{{Tool: "commit_write", ID: "toolu_1"}}}
	failed := wire.UpstreamRequest{At: ms(3), Path: "/v1/messages", Kind: wire.KindFollowUp, Outcome: wire.OutcomeForwarded, Status: 200,
		ResultIDs: []string{"toolu_1"}, Results: []wire.ToolResult{{ID: "toolu_1", Error: true, Text: "connection closed", Read: wire.ResultFailed}},
		Calls: []wire.ToolCall{{Tool: "commit_write", ID: "toolu_2", AgainFor: "toolu_1"}}}
	last := wire.UpstreamRequest{At: ms(5), Path: "/v1/messages", Kind: wire.KindFollowUp, Outcome: wire.OutcomeForwarded, Status: 200,
		ResultIDs: []string{"toolu_1", "toolu_2"}, Results: []wire.ToolResult{{ID: "toolu_1", Error: true, Text: "connection closed"}, {ID: "toolu_2", Text: "wrote alpha"}}}
	h := &history.History{
		Setup:    history.Setup{ToolCalls: 1, Tools: []string{"commit_write"}},
		Requests: []history.Exchange{{Endpoint: "messages", Path: "/v1/messages", Start: ms(0), End: ms(10), Status: 200}},
		Upstream: []wire.UpstreamRequest{initial, failed, last},
		MCP: []wire.MCPEvent{
			{At: ms(2), Kind: wire.MCPCall, Tool: "commit_write", RequestID: "1"},
			{At: ms(2.1), Kind: wire.MCPWrite, Tool: "commit_write", RequestID: "1", Entry: "alpha"},
			{At: ms(4), Kind: wire.MCPCall, Tool: "commit_write", RequestID: "2"},
			{At: ms(4.1), Kind: wire.MCPWrite, Tool: "commit_write", RequestID: "2", Entry: "alpha"},
		},
	}
	steps := Explain(h)
	ups := stepsOf(steps, StepUpstream)
	if len(ups) != 3 {
		t.Fatalf("%d model requests, want 3", len(ups))
	}
	if d := cmp.Diff([]string{
		"POST /v1/messages initial",
		`POST /v1/messages follow-up with the result of toolu_1: error "connection closed"`,
		`POST /v1/messages follow-up with the result of toolu_1: error "connection closed"; toolu_2: "wrote alpha"`,
	}, []string{ups[0].Label, ups[1].Label, ups[2].Label}); d != "" {
		t.Errorf("model request labels (-want +got):\n%s", d)
	}
	if ups[2].Try != 1 {
		t.Errorf("the follow-up with the re-ask's result is try %d, want 1: it carries a new result", ups[2].Try)
	}
	answers := stepsOf(steps, StepModelAnswer)
	if !slices.Contains(answers[1].Notes, "model asks again for commit_write after the client reported toolu_1 failed") {
		t.Errorf("re-ask answer's notes %q", answers[1].Notes)
	}
	tc := stepsOf(steps, StepToolCall)
	if len(tc) != 2 || tc[1].CallID != "toolu_2" || tc[1].Execution != 2 ||
		!slices.Contains(tc[1].Notes, "a new call the model asked for because the client reported toolu_1 failed") {
		t.Errorf("tool calls %+v: want the second tied to toolu_2, execution 2, its note", tc)
	}
}

// A script call and a re-ask that matched no offered tool: each answer's
// notes say what the model could not ask for.
func TestExplainUnmatched(t *testing.T) {
	initial := wire.UpstreamRequest{At: ms(1), Path: "/v1/messages", Kind: wire.KindInitial, Outcome: wire.OutcomeForwarded, Status: 200,
		Calls: []wire.ToolCall{{Tool: "commit_write", ID: "toolu_1"}}, Unmatched: []string{"read_ledgr"}}
	failed := wire.UpstreamRequest{At: ms(3), Path: "/v1/messages", Kind: wire.KindFollowUp, Outcome: wire.OutcomeForwarded, Status: 200,
		ResultIDs: []string{"toolu_1"}, Results: []wire.ToolResult{{ID: "toolu_1", Error: true, Text: "connection closed", Read: wire.ResultFailed}},
		AgainUnmatched: []wire.ToolCall{{Tool: "commit_write", AgainFor: "toolu_1", Step: 1, Attempt: 1}}}
	h := &history.History{
		Requests: []history.Exchange{{Endpoint: "messages", Path: "/v1/messages", Start: ms(0), End: ms(10), Status: 200}},
		Upstream: []wire.UpstreamRequest{initial, failed},
	}
	answers := stepsOf(Explain(h), StepModelAnswer)
	if d := cmp.Diff([][]string{
		{"the script's call read_ledgr matched no offered tool: left out of the answer"},
		{"model cannot ask again for commit_write after the client reported toolu_1 failed: no offered tool matches it"},
	}, [][]string{answers[0].Notes, answers[1].Notes}); d != "" {
		t.Errorf("answer notes (-want +got):\n%s", d)
	}
}

// TestExplainReplayNumbersByAsk: replays are numbered against the model's
// asks of each call (tool and arguments), as no-replay-after-dispatch
// counts them, not against the script's calls of the tool: the model asked
// for create_item twice with other arguments, and a re-sent turn ran each
// once more, so each is a first run and then REPLAY #2 — not #2, #3, #4.
func TestExplainReplayNumbersByAsk(t *testing.T) {
	asks := []wire.ToolCall{{Tool: "create_item", ID: "call_1", Args: `{"name":"a"}`, Step: 1}, {Tool: "create_item", ID: "call_2", Args: `{"name":"b"}`, Step: 2}}
	resent := []wire.ToolCall{{Tool: "create_item", ID: "call_3", Args: `{"name":"a"}`, Step: 1}, {Tool: "create_item", ID: "call_4", Args: `{"name":"b"}`, Step: 2}}
	call := func(at float64, id, args string) wire.MCPEvent {
		return wire.MCPEvent{At: ms(at), Kind: wire.MCPCall, Tool: "create_item", RequestID: id, Args: args}
	}
	h := &history.History{
		Setup:    history.Setup{ToolCalls: 1, Tools: []string{"create_item"}},
		Requests: []history.Exchange{{Endpoint: "chat", Path: "/v1/chat/completions", Start: ms(0), End: ms(20), Status: 500}},
		Upstream: []wire.UpstreamRequest{
			{At: ms(1), Path: "/v1/chat/completions", Kind: wire.KindInitial, Outcome: wire.OutcomeForwarded, Status: 200, Calls: asks},
			{At: ms(5), Path: "/v1/chat/completions", Kind: wire.KindInitial, Outcome: wire.OutcomeForwarded, Status: 200, Calls: resent},
		},
		MCP: []wire.MCPEvent{call(2, "1", `{"name":"a"}`), call(3, "2", `{"name":"b"}`), call(6, "3", `{"name":"a"}`), call(7, "4", `{"name":"b"}`)},
	}
	var got []int
	var firsts []time.Duration
	for _, s := range stepsOf(Explain(h), StepToolCall) {
		got = append(got, s.Execution)
		firsts = append(firsts, s.FirstAt)
	}
	if d := cmp.Diff([]int{1, 1, 2, 2}, got); d != "" {
		t.Errorf("executions (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]time.Duration{0, 0, ms(2).D(), ms(3).D()}, firsts); d != "" {
		t.Errorf("first ran at (-want +got):\n%s", d)
	}
}

// TestExplainProtocol: the timeline names the MCP protocol version where a
// session chose it (or the first call that says one, when no session step
// did), and again only when it changes.
func TestExplainProtocol(t *testing.T) {
	v26, v25 := wire.MCPProtocol20260728, wire.MCPProtocol20251125
	tests := []struct {
		name      string
		mcp       []wire.MCPEvent
		want      []string
		wantNotes []string
	}{
		{name: "a fallback to initialize", mcp: []wire.MCPEvent{
			{At: ms(1), Kind: wire.MCPSessionRefused, Method: "server/discover", Protocol: v26},
			{At: ms(2), Kind: wire.MCPSession, Method: "initialize", Protocol: v25},
			{At: ms(3), Kind: wire.MCPSession, Method: "notifications/initialized", Protocol: v25},
			{At: ms(4), Kind: wire.MCPSession, Method: "tools/list", Protocol: v25},
			{At: ms(5), Kind: wire.MCPCall, Tool: "commit_write", RequestID: "2", Protocol: v25},
		}, want: []string{"MCP session: server/discover refused (asked 2026-07-28), initialize (negotiated 2025-11-25), notifications/initialized, tools/list", "tools/call commit_write"}},
		{name: "stateless", mcp: []wire.MCPEvent{
			{At: ms(1), Kind: wire.MCPSession, Method: "server/discover", Protocol: v26},
			{At: ms(2), Kind: wire.MCPSession, Method: "tools/list", Protocol: v26},
			{At: ms(3), Kind: wire.MCPCall, Tool: "commit_write", RequestID: "2", Protocol: v26},
		}, want: []string{"MCP session: server/discover (negotiated 2026-07-28), tools/list", "tools/call commit_write"}},
		{name: "calls only", mcp: []wire.MCPEvent{
			{At: ms(1), Kind: wire.MCPCall, Tool: "commit_write", RequestID: "1", Protocol: v26},
			{At: ms(2), Kind: wire.MCPCall, Tool: "commit_write", RequestID: "2", Protocol: v26},
		}, want: []string{"tools/call commit_write", "tools/call commit_write"}, wantNotes: []string{"at MCP protocol 2026-07-28"}},
		{name: "a history that predates protocols", mcp: []wire.MCPEvent{
			{At: ms(1), Kind: wire.MCPSession, Method: "initialize"},
			{At: ms(2), Kind: wire.MCPCall, Tool: "commit_write", RequestID: "1"},
		}, want: []string{"MCP session: initialize", "tools/call commit_write"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &history.History{MCP: tt.mcp, Duration: history.Duration(10 * time.Millisecond)}
			var got, notes []string
			for _, s := range Explain(h) {
				if s.Kind == StepSession || s.Kind == StepToolCall {
					got = append(got, s.Label)
					notes = append(notes, s.Notes...)
				}
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("labels (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantNotes, notes); d != "" {
				t.Errorf("notes (-want +got):\n%s", d)
			}
		})
	}
}
