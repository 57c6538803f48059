package control

import (
	"net/http"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// chatRun sends one non-streamed follow-up of run token run ("" = none) to
// the upstream and returns its status.
func (r *rig) chatRun(t *testing.T, run string) int {
	t.Helper()
	body := `{"model":"m","messages":[{"role":"user","content":"hi ` + run + `"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"commit_write","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}]}`
	res, err := r.srv.Client().Post(r.srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// ids returns the ids of faults, in order.
func ids(faults []ArmedFault) []string {
	out := []string{}
	for _, f := range faults {
		out = append(out, f.ID)
	}
	return out
}

// TestNamedFaults walks the fault routes as a test suite in another
// language would: POST adds (the lost 503: a second POST must not
// replace the first), GET lists with counts per run and in total, GET and
// DELETE by id, PUT replaces one run's, DELETE clears all; MCP faults,
// stdio ones included, the same.
func TestNamedFaults(t *testing.T) {
	const run = "rc1zn8c3ywjk"
	r := newRig(t, "")
	var added ArmedFaults
	if code := r.do(t, "POST", Prefix+"faults", `{"upstream": [{"on": "initial", "respond": {"status": 429}}]}`, map[string]string{"Content-Type": "application/json"}, &added); code != 201 || len(added.Faults) != 1 {
		t.Fatalf("adding a 429: %d %+v", code, added)
	}
	first := added.Faults[0].ID
	if code := r.do(t, "POST", Prefix+"faults", "upstream: [{on: follow_up, respond: {status: 503}}]", nil, &added); code != 201 || len(added.Faults) != 1 || added.Faults[0].ID == first {
		t.Fatalf("adding a 503: %d %+v", code, added)
	}
	second := added.Faults[0].ID
	if got := []int{r.chatRun(t, ""), r.chatRun(t, run)}; got[0] != 503 || got[1] != 503 {
		t.Errorf("follow-ups after adding a 429 on initial and a 503 on follow-ups: %v, want [503 503]", got)
	}
	var list ArmedFaults
	if code := r.do(t, "GET", Prefix+"faults", "", nil, &list); code != 200 || strings.Join(ids(list.Faults), " ") != first+" "+second {
		t.Fatalf("GET faults: %d %v, want [%s %s]", code, ids(list.Faults), first, second)
	}
	want := []wire.FaultRunCounts{{Run: "", Matched: 1, Fired: 1}, {Run: run, Matched: 1, Fired: 1}}
	if f := list.Faults[1]; f.Matched != 2 || f.Fired != 2 || len(f.Runs) != 2 || f.Runs[0] != want[0] || f.Runs[1] != want[1] {
		t.Errorf("the 503's counts: %+v, want 2 matched and fired, one per run: %v", f, want)
	}
	if f := list.Faults[0]; f.Matched != 0 || f.Fired != 0 || len(f.Runs) != 0 {
		t.Errorf("the 429 on initial matched follow-ups: %+v", f)
	}

	var one ArmedFault
	if code := r.do(t, "GET", Prefix+"faults/"+second, "", nil, &one); code != 200 || one.ID != second || one.Upstream == nil || one.Upstream.Respond.Status != 503 {
		t.Errorf("GET faults/%s: %d %+v", second, code, one)
	}
	if code := r.do(t, "DELETE", Prefix+"faults/"+second, "", nil, &one); code != 200 || one.Fired != 2 {
		t.Errorf("DELETE faults/%s: %d %+v, want the fault with its 2 fired", second, code, one)
	}
	var p Problem
	for _, id := range []string{second, "upstream-999", "nope"} {
		if code := r.do(t, "GET", Prefix+"faults/"+id, "", nil, &p); code != 404 || !strings.Contains(p.Error, id) {
			t.Errorf("GET faults/%s: %d %+v, want 404 naming it", id, code, p)
		}
	}
	if got := r.chatRun(t, ""); got != 200 {
		t.Errorf("a follow-up after deleting the 503: %d", got)
	}

	// MCP faults, for one run, stdio kinds among them.
	if code := r.do(t, "POST", Prefix+"faults", "run: "+run+"\nmcp: [{tool: commit_write, is_error: {}}, {stdio_exit: {at: before_execute}}, {stdio_hang: {}}, {stdio_malformed_line: {}}]", nil, &added); code != 201 || len(added.Faults) != 4 {
		t.Fatalf("adding MCP faults: %d %+v", code, added)
	}
	for _, f := range added.Faults {
		if !strings.HasPrefix(f.ID, "mcp-") || f.Run != run || f.MCP == nil {
			t.Errorf("an added MCP fault: %+v", f)
		}
	}
	if code := r.do(t, "GET", Prefix+"faults?run="+run, "", nil, &list); code != 200 || len(list.Faults) != 4 {
		t.Errorf("GET faults?run=%s: %d %v, want the 4 MCP faults", run, code, ids(list.Faults))
	}
	if code := r.do(t, "GET", Prefix+"faults?run=", "", nil, &list); code != 200 || strings.Join(ids(list.Faults), " ") != first {
		t.Errorf("GET faults?run=: %d %v, want the global %s", code, ids(list.Faults), first)
	}

	// PUT replaces the global faults; the run's stay.
	if code := r.do(t, "PUT", Prefix+"faults", "upstream: [{on: follow_up, respond: {status: 500}, times: once}]", nil, &list); code != 200 || len(list.Faults) != 1 || list.Faults[0].ID == first {
		t.Fatalf("PUT faults: %d %+v", code, list)
	}
	replaced := list.Faults[0].ID
	if code := r.do(t, "GET", Prefix+"faults", "", nil, &list); code != 200 || len(list.Faults) != 5 || list.Faults[0].ID != replaced {
		t.Errorf("after PUT: %d %v, want %s and the run's 4", code, ids(list.Faults), replaced)
	}

	var cleared Cleared
	if code := r.do(t, "DELETE", Prefix+"faults", "", nil, &cleared); code != 200 || len(cleared.Removed) != 5 {
		t.Errorf("DELETE faults: %d %+v, want all 5 removed", code, cleared)
	}
	if len(r.up.FaultReports("")) != 0 || len(r.led.FaultReports(run)) != 0 {
		t.Errorf("faults left after DELETE: upstream %v, mcp %v", r.up.FaultReports(""), r.led.FaultReports(run))
	}
	if code := r.do(t, "POST", Prefix+"faults", "run: "+run, nil, &p); code != 400 || !strings.Contains(p.Error, "no faults") {
		t.Errorf("POST without faults: %d %+v", code, p)
	}
}

// TestWrongMethods: a route's wrong method gets 405 with Allow listing the
// route's methods, and a JSON Problem.
func TestWrongMethods(t *testing.T) {
	r := newRig(t, "")
	tests := []struct{ method, path, allow string }{
		{"PATCH", "faults", "DELETE, GET, POST, PUT"},
		{"POST", "counts", "GET"},
		{"DELETE", "health", "GET"},
		{"GET", "reset", "POST"},
		{"PUT", "faults/upstream-1", "DELETE, GET"},
		{"POST", "timeline", "GET"},
	}
	for _, tt := range tests {
		req, err := http.NewRequest(tt.method, r.srv.URL+Prefix+tt.path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := r.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 405 || res.Header.Get("Allow") != tt.allow {
			t.Errorf("%s %s: %d Allow %q, want 405 Allow %q", tt.method, tt.path, res.StatusCode, res.Header.Get("Allow"), tt.allow)
		}
	}
}
