package control

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/fakes/control/controltest"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// rig is the control API in front of a pair of fakes, with the upstream
// served next to it as `serve` does.
type rig struct {
	up  *upstream.Server
	led *ledger.Server
	srv *httptest.Server
}

func newRig(t *testing.T, key string) *rig {
	t.Helper()
	u, err := upstream.New(upstream.Config{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	mux := http.NewServeMux()
	mux.Handle(Prefix, controltest.Validate(t, Spec, (&API{Upstream: u, Ledger: l, Key: key}).Handler()))
	mux.Handle("/", u)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &rig{up: u, led: l, srv: srv}
}

// do sends a request and decodes the JSON answer into v (when not nil). A
// POST or DELETE says Content-Type: application/yaml unless header sets one.
func (r *rig) do(t *testing.T, method, path, body string, header map[string]string, v any) int {
	t.Helper()
	req, err := http.NewRequest(method, r.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if method != "GET" {
		req.Header.Set("Content-Type", "application/yaml")
	}
	for k, val := range header {
		req.Header.Set(k, val)
	}
	res, err := r.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s: answer %q is not JSON: %v", method, path, b, err)
		}
	}
	return res.StatusCode
}

// chat sends one non-streamed chat request with a tool result (a follow-up)
// to the upstream and returns its status.
func (r *rig) chat(t *testing.T) int {
	t.Helper()
	body := `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"commit_write","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}]}`
	res, err := r.srv.Client().Post(r.srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

func TestArmCountResetTimeline(t *testing.T) {
	r := newRig(t, "")
	var health map[string]string
	if code := r.do(t, "GET", Prefix+"health", "", nil, &health); code != 200 || health["status"] != "ok" {
		t.Fatalf("health: %d %v", code, health)
	}
	var armed ArmedFaults
	if code := r.do(t, "POST", Prefix+"faults", "upstream: [{on: follow_up, respond: {status: 503}, times: once}]\nmcp: [{tool: commit_write, drop_after_execute: {}}]\n", nil, &armed); code != 201 {
		t.Fatalf("arming: %d %v", code, armed)
	}
	if got := []int{r.chat(t), r.chat(t)}; got[0] != 503 || got[1] != 200 {
		t.Errorf("statuses %v after arming a once 503, want [503 200]", got)
	}
	var c Counts
	r.do(t, "GET", Prefix+"counts", "", nil, &c)
	if c.Total.Upstream.FollowUp != 2 || c.Total.Upstream.Outcomes[wire.CountKey{Kind: wire.KindFollowUp, Outcome: wire.Injected(503)}] != 1 || len(c.Runs) != 1 || c.Runs[0].Token != "" {
		t.Errorf("counts after two follow-ups: %+v", c)
	}
	var tl struct {
		Events []Event `json:"events"`
	}
	if code := r.do(t, "GET", Prefix+"timeline?run=", "", nil, &tl); code != 200 || len(tl.Events) != 2 || tl.Events[0].Upstream.Outcome != "injected_503" {
		t.Errorf("timeline: %d %+v", code, tl)
	}
	if reps := r.led.FaultReports(""); len(reps) != 1 {
		t.Errorf("ledger faults armed: %v, want the one drop_after_execute", reps)
	}
	if code := r.do(t, "DELETE", Prefix+"faults", "", nil, nil); code != 200 {
		t.Fatalf("clearing: %d", code)
	}
	if reps := r.led.FaultReports(""); len(reps) != 0 {
		t.Errorf("ledger faults after DELETE: %v", reps)
	}
	if code := r.do(t, "POST", Prefix+"reset", "", nil, nil); code != 200 {
		t.Fatalf("reset: %d", code)
	}
	r.do(t, "GET", Prefix+"counts", "", nil, &c)
	if c.Total.Upstream.FollowUp != 0 || len(c.Runs) != 0 {
		t.Errorf("counts after reset: %+v", c)
	}
}

// TestBadFaultsApplyNothing sends fault requests with one bad part: each gets
// 400 naming the problem and its place, and neither fake is armed.
func TestBadFaultsApplyNothing(t *testing.T) {
	tests := []struct {
		name, body, want string
		line, col        int
	}{
		{"unknown field", "upstream: [{on: follow_up, respond: {status: 500}}]\nmpc: []\n", "unknown field", 2, 1},
		{"bad upstream fault", "upstream:\n  - {on: later, respond: {status: 500}}\n", "upstream[0]: on:", 2, 5},
		{"bad mcp fault after a good upstream one", "upstream: [{on: follow_up, respond: {status: 500}}]\nmcp:\n  - {tool: commit_write}\n", "mcp[0]", 3, 5},
		{"bad run token", "run: Nope!\nupstream: [{respond: {status: 500}}]\n", "not a run token", 1, 6},
		{"not YAML", "upstream: [", "", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, "")
			var p Problem
			if code := r.do(t, "POST", Prefix+"faults", tt.body, nil, &p); code != 400 {
				t.Fatalf("status %d, want 400: %+v", code, p)
			}
			if !strings.Contains(p.Error, tt.want) || tt.line > 0 && (p.Line != tt.line || p.Column != tt.col) {
				t.Errorf("problem %+v, want %q at %d:%d", p, tt.want, tt.line, tt.col)
			}
			if len(r.up.FaultReports("")) != 0 || len(r.led.FaultReports("")) != 0 {
				t.Errorf("a bad request armed faults: upstream %v, mcp %v", r.up.FaultReports(""), r.led.FaultReports(""))
			}
		})
	}
}

func TestKeyAndRoutes(t *testing.T) {
	r := newRig(t, "s3cret")
	var p Problem
	if code := r.do(t, "GET", Prefix+"counts", "", nil, &p); code != 401 || strings.Contains(p.Error, "s3cret") {
		t.Errorf("without the key: %d %+v, want 401 that does not echo the key", code, p)
	}
	if code := r.do(t, "GET", Prefix+"counts", "", map[string]string{"Authorization": "Bearer wrong"}, nil); code != 401 {
		t.Errorf("with a wrong key: %d, want 401", code)
	}
	if code := r.do(t, "GET", Prefix+"counts", "", map[string]string{"Authorization": "Bearer s3cret"}, nil); code != 200 {
		t.Errorf("with the key: %d, want 200", code)
	}
	// The scheme's name is case-insensitive (RFC 7235).
	if code := r.do(t, "GET", Prefix+"counts", "", map[string]string{"Authorization": "bearer s3cret"}, nil); code != 200 {
		t.Errorf("with the key after a lower-case scheme: %d, want 200", code)
	}
	auth := map[string]string{"Authorization": "Bearer s3cret"}
	if code := r.do(t, "GET", Prefix+"nope", "", auth, &p); code != 404 || !strings.Contains(p.Error, "GET counts") {
		t.Errorf("unknown route: %d %+v", code, p)
	}
	if code := r.do(t, "GET", Prefix+"timeline", "", auth, &p); code != 400 || !strings.Contains(p.Error, "run") {
		t.Errorf("timeline without run: %d %+v", code, p)
	}
	if code := r.chat(t); code != 200 {
		t.Errorf("the model API behind the control API answered %d", code)
	}
}

func TestOnlyLoopback(t *testing.T) {
	h := controltest.Validate(t, Spec, (&API{Key: ""}).Handler())
	req := httptest.NewRequest("GET", Prefix+"health", nil)
	req.RemoteAddr = "192.0.2.7:5555"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusForbidden {
		t.Errorf("a request from 192.0.2.7 got %d, want 403", w.Code)
	}
}

// TestWebPagesRefused sends the control API what a web page can: the
// issue's request (a foreign Origin and Host, text/plain, no key), each of
// its parts alone, and the body types no form can send. Only programs' requests
// arm anything.
func TestWebPagesRefused(t *testing.T) {
	body := `{"upstream": [{"on": "initial", "respond": {"status": 500}}]}`
	tests := []struct {
		name        string
		header      map[string]string
		host        string
		want        int
		wantProblem string
	}{
		{name: "the issue's request", header: map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain"}, host: "evil.example:8765", want: 403, wantProblem: "Host"},
		{name: "a foreign Host (DNS rebinding)", header: map[string]string{"Content-Type": "application/json"}, host: "evil.example:8765", want: 403, wantProblem: "Host"},
		{name: "a foreign Origin", header: map[string]string{"Origin": "http://evil.example", "Content-Type": "application/json"}, want: 403, wantProblem: "Origin"},
		{name: "text/plain", header: map[string]string{"Content-Type": "text/plain"}, want: 415, wantProblem: "Content-Type"},
		{name: "a form", header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, want: 415, wantProblem: "Content-Type"},
		{name: "no Content-Type", header: map[string]string{"Content-Type": ""}, want: 415, wantProblem: "Content-Type"},
		{name: "JSON", header: map[string]string{"Content-Type": "application/json; charset=utf-8"}, want: 201},
		{name: "YAML", header: map[string]string{"Content-Type": "application/yaml"}, want: 201},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, "")
			req, err := http.NewRequest("POST", r.srv.URL+Prefix+"faults", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.host != "" {
				req.Host = tt.host
			}
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			if tt.header["Content-Type"] == "" {
				req.Header.Del("Content-Type")
			}
			res, err := r.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var p Problem
			if err := json.NewDecoder(res.Body).Decode(&p); err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tt.want || !strings.Contains(p.Error, tt.wantProblem) {
				t.Errorf("got %d %+v, want %d naming %q", res.StatusCode, p, tt.want, tt.wantProblem)
			}
			if armed := len(r.up.FaultReports("")) > 0; armed != (tt.want == 201) {
				t.Errorf("faults armed: %v, want %v", r.up.FaultReports(""), tt.want == 201)
			}
		})
	}
}

// TestHostileNesting posts fault bodies nested far past nesting.Max (80 KB
// took serve from 66 MB to 2.5 GB): each is a 400 at the place the limit
// was crossed, and nothing is armed.
func TestHostileNesting(t *testing.T) {
	for _, size := range []int{80_000, 1_000_000} {
		r := newRig(t, "")
		var p Problem
		if code := r.do(t, "POST", Prefix+"faults", "upstream: "+strings.Repeat("[", size), nil, &p); code != 400 {
			t.Fatalf("%d bytes: status %d, want 400: %+v", size, code, p)
		}
		if want := (Problem{Error: "nests deeper than 100 levels (lists and mappings inside each other)", Line: 1, Column: 110}); p != want {
			t.Errorf("%d bytes: problem %+v, want %+v", size, p, want)
		}
		if len(r.up.FaultReports("")) != 0 {
			t.Errorf("a refused body armed %v", r.up.FaultReports(""))
		}
	}
}
