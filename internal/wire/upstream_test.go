package wire

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/duration"
)

func TestInjectedEveryStatus(t *testing.T) {
	for status := 100; status <= 599; status++ {
		o := Injected(status)
		if s, ok := o.Injected(); !ok || s != status || !o.Known() {
			t.Fatalf("Injected(%d) = %q reads back as %d, %v (known %v)", status, o, s, ok, o.Known())
		}
		if o.Cut() || o.Dropped() {
			t.Fatalf("Injected(%d) reads as a cut", status)
		}
		var back Outcome
		if b, err := json.Marshal(o); err != nil || json.Unmarshal(b, &back) != nil || back != o {
			t.Fatalf("Injected(%d): JSON %s reads back as %q (%v)", status, b, back, err)
		}
	}
}

// TestUpstreamRequestJSON pins the history's JSON of an upstream request:
// its field names and order, what is left out when empty, and that the
// fake's clock and the run token stay out of it.
func TestUpstreamRequestJSON(t *testing.T) {
	u := UpstreamRequest{
		Time: time.Unix(1700000000, 0), Token: "rc1zn8c3ywjk",
		At: duration.Duration(1500 * time.Microsecond), Path: "/v1/chat/completions", Endpoint: "chat",
		Kind: KindFollowUp, Outcome: Injected(503), Stream: true, Status: 503, Fault: "respond 503",
		Headers: map[string]string{"Retry-After": "1"}, Model: "m", ServedModel: "s",
		ResultIDs: []string{"call_1"}, Offered: []string{"commit_write"}, ResponseID: "chatcmpl-1",
		Events: 7, ContentEvents: 4, Unmatched: []string{"read_ledger"},
	}
	u.SetCalls([]string{"commit_write", "read_ledger"}, []string{"call_2"})
	b, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"at":"1.5ms","path":"/v1/chat/completions","endpoint":"chat","kind":"follow_up","outcome":"injected_503",` +
		`"stream":true,"status":503,"fault":"respond 503","headers":{"Retry-After":"1"},"model":"m","served_model":"s",` +
		`"tool_calls":2,"calls":[{"tool":"commit_write","id":"call_2"},{"tool":"read_ledger"}],"result_ids":["call_1"],` +
		`"offered":["commit_write"],"response_id":"chatcmpl-1","events":7,"content_events":4,"unmatched":["read_ledger"]}`
	if string(b) != want {
		t.Errorf("JSON (-want +got):\n-%s\n+%s", want, b)
	}
	var back UpstreamRequest
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if b2, _ := json.Marshal(back); string(b2) != string(b) || !slices.Equal(back.Tools(), []string{"commit_write", "read_ledger"}) {
		t.Errorf("round trip: %s, tools %q", b2, back.Tools())
	}
	if b, _ := json.Marshal(UpstreamRequest{Kind: KindInitial, Outcome: OutcomeReset}); string(b) != `{"at":"0s","path":"","kind":"initial","outcome":"reset"}` {
		t.Errorf("empty fields are written: %s", b)
	}
}

func TestSetCalls(t *testing.T) {
	var u UpstreamRequest
	u.SetCalls(nil, nil)
	if u.ToolCalls != 0 || u.Calls != nil || u.Tools() != nil {
		t.Errorf("no calls: %+v", u)
	}
	u.SetCalls([]string{"a", "b"}, []string{"id_a", "id_b"})
	u.SetCalls([]string{"c"}, nil) // a second answer replaces the first
	if u.ToolCalls != 1 || len(u.Calls) != 1 || u.Calls[0] != (ToolCall{Tool: "c"}) {
		t.Errorf("replaced calls: %+v", u)
	}
}

func TestMCPEventJSON(t *testing.T) {
	e := MCPEvent{Time: time.Unix(1700000000, 0), Token: "rc1zn8c3ywjk", At: duration.Duration(2 * time.Second),
		Kind: MCPFault, Tool: "commit_write", RequestID: "3", Fault: MCPFaultDropAfterExecute}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"at":"2s","kind":"fault","tool":"commit_write","request_id":"3","fault":"drop_after_execute"}`
	if string(b) != want {
		t.Errorf("JSON (-want +got):\n-%s\n+%s", want, b)
	}
	var back MCPEvent
	if err := json.Unmarshal(b, &back); err != nil || !back.IsFault(MCPFaultDropAfterExecute) || back.IsFault(MCPFaultDelay) || back.IsDedup() {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	if !(MCPEvent{Kind: MCPResult, Dedup: true}).IsDedup() {
		t.Error("a dedup result is not IsDedup")
	}
}
