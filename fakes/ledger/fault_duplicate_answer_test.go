package ledger

import (
	"bytes"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestDuplicateAnswerOnTheWire posts a tools/call by hand, so the test sees
// the POST's SSE stream: the event answering the call comes twice, byte for
// byte, while the ledger counts one call, one write and one fault.
func TestDuplicateAnswerOnTheWire(t *testing.T) {
	cfg := fileLedger(t)
	s, url := newLedger(t, cfg)
	const tok = "rc00000000e1"
	mustArm(t, s, tok, "{tool: commit_write, duplicate_answer: {}}")
	cs := connect(t, url, "")

	ctx, cancel := contextT()
	defer cancel()
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"commit_write","arguments":{"entry":"alpha ` + tok + `"}}}`
	resp, err := postMessage(ctx, url, cs.ID(), body)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	var answers [][]byte
	for _, ev := range bytes.Split(got, []byte("\n\n")) {
		if id, ok := answerID(append(ev, "\n\n"...)); ok && id.Raw() == int64(7) {
			answers = append(answers, ev)
		}
	}
	if len(answers) != 2 || !bytes.Equal(answers[0], answers[1]) {
		t.Fatalf("stream %q: %d events answer id 7, want 2 identical ones", got, len(answers))
	}
	if !bytes.Contains(answers[0], []byte(`"recorded alpha `+tok+`"`)) {
		t.Errorf("answer %q, want the tool's result", answers[0])
	}

	if diff := cmp.Diff(wire.MCPCounts{Calls: map[string]int{ToolCommitWrite: 1}, Writes: 1}, s.Counts(tok), ignoreProtocols); diff != "" {
		t.Errorf("Counts (-want +got):\n%s", diff)
	}
	if got := len(fileLines(t, cfg.Path)); got != 1 {
		t.Errorf("file has %d lines, want 1", got)
	}
	var kinds []string
	for _, e := range s.Events(tok) {
		kinds = append(kinds, string(e.Kind)+" "+e.Fault)
	}
	want := []string{string(wire.MCPCall) + " ", string(wire.MCPWrite) + " ", string(wire.MCPFault) + " " + wire.MCPFaultDuplicateAnswer, string(wire.MCPResult) + " "}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("Events (-want +got):\n%s", diff)
	}
	var reps []string
	for _, r := range s.FaultReports(tok) {
		reps = append(reps, reportKind(t, r)+" matched "+strconv.Itoa(r.Matched)+" fired "+strconv.Itoa(r.Fired))
	}
	if diff := cmp.Diff([]string{"duplicate_answer matched 1 fired 1"}, reps); diff != "" {
		t.Errorf("FaultReports (-want +got):\n%s", diff)
	}
}

// TestDuplicateAnswerSDKClient calls through the official MCP Go SDK client
// (go-sdk v1.8.0): it takes the first event answering its call, ends the
// POST's stream there (streamableClientConn.processStream returns on the
// response to its call), and never reads the copy; a response id it no
// longer waits for would be dropped by its jsonrpc2 connection anyway. So
// the call succeeds once, the session stays usable, and the ledger counts
// exactly what ran.
func TestDuplicateAnswerSDKClient(t *testing.T) {
	s, url := newLedger(t, Config{})
	const tok = "rc00000000e2"
	mustArm(t, s, tok, "{tool: commit_write, duplicate_answer: {}, times: once}")
	cs := connect(t, url, "")
	for i, entry := range []string{"first " + tok, "second " + tok} {
		res, err := callTool(t, cs, ToolCommitWrite, map[string]any{"entry": entry})
		if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		if res.IsError || text(res) != "recorded "+entry {
			t.Errorf("call %d answered %q (isError %v), want %q", i+1, text(res), res.IsError, "recorded "+entry)
		}
	}
	if diff := cmp.Diff(wire.MCPCounts{Calls: map[string]int{ToolCommitWrite: 2}, Writes: 2}, s.Counts(tok), ignoreMessages, ignoreProtocols); diff != "" {
		t.Errorf("Counts (-want +got):\n%s", diff)
	}
	var faults []string
	for _, e := range s.Events(tok) {
		if e.Kind == wire.MCPFault {
			faults = append(faults, e.Fault+" "+e.RequestID)
		}
	}
	if len(faults) != 1 || !strings.HasPrefix(faults[0], wire.MCPFaultDuplicateAnswer+" ") {
		t.Errorf("fault events %q, want one duplicate_answer", faults)
	}
	if r := s.FaultReports(tok); len(r) != 1 || r[0].Matched != 2 || r[0].Fired != 1 {
		t.Errorf("FaultReports %+v, want matched 2, fired 1", r)
	}
}

// TestProbes checks the probes the fault table gathers: unique names, each
// building a valid fault of its kind's table row, duplicate_answer's at the
// tool call and optional.
func TestProbes(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range faultKinds() {
		for _, p := range k.Probes() {
			if seen[p.Name] {
				t.Errorf("probe %s twice", p.Name)
			}
			seen[p.Name] = true
			f := p.Build(fault.Spot{Tool: ToolCommitWrite}, fault.DefaultSettings)
			if p.At == fault.AtSessionStep {
				f.Method = MethodInitialize
			}
			if err := f.Validate(); err != nil || f.Kind() != k.Name {
				t.Errorf("probe %s builds %s (kind %q, %v), want a valid %s fault", p.Name, f, f.Kind(), err, k.Name)
			}
		}
	}
	if len(seen) != len(Probes()) {
		t.Errorf("Probes returns %d probes, the table %d", len(Probes()), len(seen))
	}
	i := slices.IndexFunc(Probes(), func(p fault.Probe[Fault]) bool { return p.Name == "mcp-duplicate" })
	if i < 0 || Probes()[i].At != fault.AtToolCall || !Probes()[i].Optional {
		t.Errorf("mcp-duplicate probe missing, or not an optional tool-call probe")
	}
}
