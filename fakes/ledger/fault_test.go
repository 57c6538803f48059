package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/invopop/jsonschema"

	"github.com/replaycheck/replaycheck/internal/wire"
)

func TestFaults(t *testing.T) {
	cw := map[string]int{ToolCommitWrite: 1}
	tests := []struct {
		name        string
		fault       string
		wantErr     bool   // the client sees an error
		wantIsError string // the client sees an isError result with this text
		want        wire.MCPCounts
		wantFault   string // the fault event's detail; "" for none
	}{
		{"drop_after_execute", "{tool: commit_write, drop_after_execute: {}}", true, "", wire.MCPCounts{Calls: cw, Writes: 1}, "drop_after_execute"},
		{"drop_after_execute after headers", "{tool: commit_write, drop_after_execute: {after: headers}}", true, "", wire.MCPCounts{Calls: cw, Writes: 1}, "drop_after_execute"},
		{"fail_before_execute 503", "{tool: commit_write, fail_before_execute: {status: 503}}", true, "", wire.MCPCounts{Calls: cw}, "fail_before_execute"},
		{"fail_before_execute default status", "{fail_before_execute: {}}", true, "", wire.MCPCounts{Calls: cw}, "fail_before_execute"},
		{"fail_before_execute 429", "{fail_before_execute: {status: 429}}", true, "", wire.MCPCounts{Calls: cw}, "fail_before_execute"},
		{"fail_before_execute reset", "{tool: commit_write, fail_before_execute: {reset: true}}", true, "", wire.MCPCounts{Calls: cw}, "fail_before_execute"},
		{"is_error", "{tool: commit_write, is_error: {message: entry not found}}", false, "entry not found", wire.MCPCounts{Calls: cw}, "is_error"},
		{"is_error default message", "{is_error: {}}", false, defaultIsErrorMessage, wire.MCPCounts{Calls: cw}, "is_error"},
		{"other tool's fault does not fire", "{tool: read_ledger, drop_after_execute: {}}", false, "", wire.MCPCounts{Calls: cw, Writes: 1}, ""},
		{"nth 2 does not fire on the first call", "{drop_after_execute: {}, times: {nth: 2}}", false, "", wire.MCPCounts{Calls: cw, Writes: 1}, ""},
	}
	for _, m := range modes {
		for _, tt := range tests {
			t.Run(m.name+"/"+tt.name, func(t *testing.T) {
				cfg := fileLedger(t)
				cfg.Stateless = m.stateless
				s, url := newLedger(t, cfg)
				const tok, other = "rc00000000f1", "rc00000000f2"
				f, err := ParseFault(tt.fault)
				if err != nil {
					t.Fatalf("ParseFault: %v", err)
				}
				if err := s.Arm(tok, []Fault{f}); err != nil {
					t.Fatalf("Arm: %v", err)
				}
				cs := connect(t, url, m.protocol)

				res, err := callTool(t, cs, ToolCommitWrite, map[string]any{"entry": "alpha " + tok})
				if (err != nil) != tt.wantErr {
					t.Fatalf("CallTool error = %v, wantErr %v (result %+v)", err, tt.wantErr, res)
				}
				if err == nil {
					gotIsError := ""
					if res.IsError {
						gotIsError = text(res)
					}
					if gotIsError != tt.wantIsError {
						t.Errorf("isError text = %q, want %q", gotIsError, tt.wantIsError)
					}
				}
				if diff := cmp.Diff(tt.want, s.Counts(tok), ignoreProtocols); diff != "" {
					t.Errorf("Counts (-want +got):\n%s", diff)
				}
				if got := len(fileLines(t, cfg.Path)); got != tt.want.Writes {
					t.Errorf("file has %d lines, want %d", got, tt.want.Writes)
				}
				var faults []string
				for _, e := range s.Events(tok) {
					if e.Kind == wire.MCPFault {
						faults = append(faults, e.Fault)
					}
				}
				var wantFaults []string
				if tt.wantFault != "" {
					wantFaults = []string{tt.wantFault}
				}
				if diff := cmp.Diff(wantFaults, faults); diff != "" {
					t.Errorf("fault events (-want +got):\n%s", diff)
				}

				// The session still works, and another token is not faulted.
				res, err = callTool(t, cs, ToolCommitWrite, map[string]any{"entry": "beta " + other})
				if err != nil || res.IsError {
					t.Fatalf("call after the fault: %v, %+v", err, res)
				}
				if diff := cmp.Diff(wire.MCPCounts{Calls: cw, Writes: 1}, s.Counts(other), ignoreProtocols); diff != "" {
					t.Errorf("Counts(other) (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestFaultTimes(t *testing.T) {
	tests := []struct {
		name  string
		fault string
		want  []bool // whether call i (1-based) fails
	}{
		{"always", "{is_error: {}}", []bool{true, true, true, true}},
		{"once", "{is_error: {}, times: once}", []bool{true, false, false, false}},
		{"count", "{is_error: {}, times: 2}", []bool{true, true, false, false}},
		{"nth", "{is_error: {}, times: {nth: 3}}", []bool{false, false, true, false}},
		{"only its tool counts", "{tool: commit_write_keyed, is_error: {}, times: once}", []bool{false, false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, url := newLedger(t, Config{})
			const tok = "rc00000000a1"
			f, err := ParseFault(tt.fault)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Arm(tok, []Fault{f}); err != nil {
				t.Fatal(err)
			}
			cs := connect(t, url, "")
			var got []bool
			for i := range tt.want {
				res, err := callTool(t, cs, ToolCommitWrite, map[string]any{"entry": fmt.Sprintf("e%d %s", i, tok)})
				if err != nil {
					t.Fatalf("call %d: %v", i+1, err)
				}
				got = append(got, res.IsError)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("failed calls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGlobalFaults checks that token "" arms faults for every call, after
// the token's own, and that re-arming replaces faults and their counts.
func TestGlobalFaults(t *testing.T) {
	s, url := newLedger(t, Config{})
	cs := connect(t, url, "")
	const a, b = "rc00000000b1", "rc00000000b2"
	mustArm(t, s, "", "{tool: commit_write, is_error: {message: global}, times: once}")
	mustArm(t, s, a, "{tool: commit_write, is_error: {message: own}, times: once}")

	// a's first call: its own fault wins; the global once is consumed too.
	if got := isErrorText(t, cs, a); got != "own" {
		t.Errorf("a first call = %q, want own", got)
	}
	if got := isErrorText(t, cs, b); got != "" {
		t.Errorf("b first call = %q, want success (global once was used)", got)
	}
	mustArm(t, s, "", "{tool: commit_write, is_error: {message: global}, times: once}")
	if got := isErrorText(t, cs, b); got != "global" {
		t.Errorf("b after re-arm = %q, want global", got)
	}
	if got := isErrorText(t, cs, a); got != "" {
		t.Errorf("a second call = %q, want success", got)
	}
}

func TestDelayEndsWhenClientCancels(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			logs := &logWatch{ch: make(chan slog.Record, 64)}
			cfg := Config{Stateless: m.stateless, Logger: slog.New(logs)}
			s, url := newLedger(t, cfg)
			const tok = "rc00000000d1"
			mustArm(t, s, tok, "{tool: commit_write, delay: 1h, times: once}")
			cs := connect(t, url, m.protocol)

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcpCallParams{Name: ToolCommitWrite, Arguments: map[string]any{"entry": "slow " + tok}})
				errc <- err
			}()
			// The write happens before the delay; then the client gives up.
			waitCounts(t, s, tok, func(c wire.MCPCounts) bool { return c.Writes == 1 })
			cancel()
			select {
			case err := <-errc:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("CallTool error = %v, want context.Canceled", err)
				}
			case <-time.After(testTimeout):
				t.Fatal("CallTool did not return after cancel")
			}
			got := waitCounts(t, s, tok, func(c wire.MCPCounts) bool { return c.Cancellations >= 1 })
			if diff := cmp.Diff(wire.MCPCounts{Calls: map[string]int{ToolCommitWrite: 1}, Writes: 1, Cancellations: 1}, got, ignoreProtocols); diff != "" {
				t.Errorf("Counts (-want +got):\n%s", diff)
			}
			// The delay ended because the client gave up, not at the hour.
			logs.wait(t, "ledger delay ended", "client gave up")

			// The session still works, and the cancellation is not counted twice.
			if res, err := callTool(t, cs, ToolCommitWrite, map[string]any{"entry": "next " + tok}); err != nil || res.IsError {
				t.Fatalf("call after cancel: %v, %+v", err, res)
			}
			if got := s.Counts(tok).Cancellations; got != 1 {
				t.Errorf("Cancellations = %d after a later call, want 1", got)
			}
		})
	}
}

// TestCancelNoticeCountedOnce sends notifications/cancelled by hand, as some
// clients do after every call: for an answered request it is not a
// cancellation, and for a cancelled one it is not a second.
func TestCancelNoticeCountedOnce(t *testing.T) {
	s, url := newLedger(t, Config{})
	const tok = "rc00000000c1"
	cs := connect(t, url, "2025-11-25")
	if res, err := callTool(t, cs, ToolCommitWrite, map[string]any{"entry": "a " + tok}); err != nil || res.IsError {
		t.Fatalf("call: %v, %+v", err, res)
	}
	id := s.Events(tok)[0].RequestID
	notice := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":"done"}}`, id)
	resp := rawPost(t, url, cs.ID(), notice)
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("cancel notice status = %d, want 202", resp.StatusCode)
	}
	if got := s.Counts(tok).Cancellations; got != 0 {
		t.Errorf("Cancellations = %d after a notice for an answered call, want 0", got)
	}

	// A call held by a delay is cancelled by the notice alone (the client
	// here keeps its stream open), once.
	mustArm(t, s, tok, "{tool: commit_write, delay: 1h}")
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = callTool(t, cs, ToolCommitWrite, map[string]any{"entry": "b " + tok})
	}()
	waitCounts(t, s, tok, func(c wire.MCPCounts) bool { return c.Writes == 2 })
	var heldID string
	for _, e := range s.Events(tok) {
		if e.Kind == wire.MCPCall {
			heldID = e.RequestID
		}
	}
	notice = fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":"gave up"}}`, heldID)
	rawPost(t, url, cs.ID(), notice)
	rawPost(t, url, cs.ID(), notice)
	waitCounts(t, s, tok, func(c wire.MCPCounts) bool { return c.Cancellations == 1 })
	<-done // the delay ended, so the (unanswerable) call returned
	if got := s.Counts(tok).Cancellations; got != 1 {
		t.Errorf("Cancellations = %d, want 1", got)
	}
}

func TestArmRejectsBadFaults(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	good := Fault{DropAfterExecute: &DropAfterExecute{}}
	tests := []struct {
		name    string
		faults  []Fault
		wantErr string
	}{
		{"no kind", []Fault{good, {Tool: ToolCommitWrite}}, "mcp fault 2"},
		{"two kinds", []Fault{{DropAfterExecute: &DropAfterExecute{}, IsError: &IsError{}}}, "2 fault kinds set (drop_after_execute, is_error)"},
		{"unknown tool", []Fault{{Tool: "comit_write", IsError: &IsError{}}}, `unknown tool "comit_write"`},
		{"bad status", []Fault{{FailBeforeExecute: &FailBeforeExecute{Status: 200}}}, "status 200"},
		{"status and reset", []Fault{{FailBeforeExecute: &FailBeforeExecute{Status: 503, Reset: true}}}, "either status or reset"},
		{"zero delay", []Fault{{Delay: new(faultDuration)}}, "delay: want a positive duration"},
		{"unknown method", []Fault{{Method: "tools/call", FailBeforeExecute: &FailBeforeExecute{}}}, `unknown method "tools/call"; want initialize or tools/list, or none for tools/call`},
		{"method with tool", []Fault{{Method: MethodInitialize, Tool: ToolCommitWrite, FailBeforeExecute: &FailBeforeExecute{}}}, "method initialize with tool commit_write"},
		{"method with drop", []Fault{{Method: MethodToolsList, DropAfterExecute: &DropAfterExecute{}}}, "method tools/list with drop_after_execute: a session step can only be refused"},
		{"drop after body", []Fault{{DropAfterExecute: &DropAfterExecute{After: "body"}}}, `drop_after_execute: after "body": want headers, or none`},
		{"method with is_error", []Fault{{Method: MethodToolsList, IsError: &IsError{}}}, "method tools/list with is_error"},
		{"method with bad status", []Fault{{Method: MethodInitialize, FailBeforeExecute: &FailBeforeExecute{Status: 302}}}, "status 302"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Arm("rc0000000bad", tt.faults)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Arm error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	if err := s.Arm("rc0000000bad", []Fault{good}); err != nil {
		t.Errorf("Arm(good) = %v", err)
	}
}

func TestParseFault(t *testing.T) {
	d := faultDuration(5 * time.Second)
	tests := []struct {
		name    string
		in      string
		want    Fault
		wantErr string
	}{
		{"drop", "{tool: commit_write, drop_after_execute: {}, times: once}", Fault{Tool: ToolCommitWrite, DropAfterExecute: &DropAfterExecute{}, Times: onceTimes}, ""},
		{"drop after headers", "{tool: commit_write, drop_after_execute: {after: headers}}", Fault{Tool: ToolCommitWrite, DropAfterExecute: &DropAfterExecute{After: DropAfterHeaders}}, ""},
		{"drop after unknown", "{drop_after_execute: {after: result}}", Fault{}, `drop_after_execute: after "result": want headers`},
		{"drop unknown setting", "{drop_after_execute: {at: headers}}", Fault{}, `unknown field "at"`},
		{"fail status", "{tool: commit_write, fail_before_execute: {status: 503}}", Fault{Tool: ToolCommitWrite, FailBeforeExecute: &FailBeforeExecute{Status: 503}}, ""},
		{"fail reset", "{fail_before_execute: {reset: true}}", Fault{FailBeforeExecute: &FailBeforeExecute{Reset: true}}, ""},
		{"is_error", `{is_error: {message: "entry not found"}, times: 3}`, Fault{IsError: &IsError{Message: "entry not found"}, Times: countTimes(3)}, ""},
		{"delay", "{tool: commit_write, delay: 5s}", Fault{Tool: ToolCommitWrite, Delay: &d}, ""},
		{"initialize refused", "{method: initialize, fail_before_execute: {}, times: once}", Fault{Method: MethodInitialize, FailBeforeExecute: &FailBeforeExecute{}, Times: onceTimes}, ""},
		{"tools/list reset", "{method: tools/list, fail_before_execute: {reset: true}}", Fault{Method: MethodToolsList, FailBeforeExecute: &FailBeforeExecute{Reset: true}}, ""},
		{"method with delay", "{method: initialize, delay: 1s}", Fault{}, "a session step can only be refused (fail_before_execute)"},
		{"unknown method", "{method: ping, fail_before_execute: {}}", Fault{}, `unknown method "ping"`},
		{"unknown kind", "{tool: commit_write, explode: {}}", Fault{}, `unknown field "explode"`},
		{"unknown kind lists kinds", "{explode: {}}", Fault{}, strings.Join(Kinds(), ", ")},
		{"unknown setting", "{fail_before_execute: {code: 503}}", Fault{}, `unknown field "code"`},
		{"change remove", "{tool: commit_write, change_tools: {remove: commit_write}, times: once}", Fault{Tool: ToolCommitWrite, ChangeTools: &ChangeTools{Remove: ToolCommitWrite}, Times: onceTimes}, ""},
		{"change rename", "{change_tools: {rename: commit_write, to: record_entry}}", Fault{ChangeTools: &ChangeTools{Rename: ToolCommitWrite, To: "record_entry"}}, ""},
		{"change add", "{change_tools: {add: audit_note, like: read_ledger}}", Fault{ChangeTools: &ChangeTools{Add: "audit_note", Like: ToolReadLedger}}, ""},
		{"change nothing", "{change_tools: {}}", Fault{}, "set exactly one of remove, rename or add"},
		{"change two", "{change_tools: {remove: a, add: b}}", Fault{}, "set exactly one of remove, rename or add"},
		{"rename without to", "{change_tools: {rename: commit_write}}", Fault{}, "rename needs to"},
		{"to without rename", "{change_tools: {remove: commit_write, to: x}}", Fault{}, "set rename too"},
		{"rename to itself", "{change_tools: {rename: x, to: x}}", Fault{}, "the same name as rename"},
		{"like without add", "{change_tools: {remove: x, like: commit_write}}", Fault{}, "set add too"},
		{"like unknown", "{change_tools: {add: x, like: delete_all}}", Fault{}, `like "delete_all"`},
		{"bad tool name", `{change_tools: {add: "a b"}}`, Fault{}, `add "a b": want a tool name`},
		{"expire before", "{tool: commit_write, expire_session: {}}", Fault{Tool: ToolCommitWrite, ExpireSession: &ExpireSession{}}, ""},
		{"expire after", "{expire_session: {after: execute}, times: once}", Fault{ExpireSession: &ExpireSession{After: ExpireAfterExecute}, Times: onceTimes}, ""},
		{"expire after unknown", "{expire_session: {after: answer}}", Fault{}, `expire_session: after "answer": want execute`},
		{"unauthorized", "{tool: commit_write, unauthorized: {}, times: always}", Fault{Tool: ToolCommitWrite, Unauthorized: &Unauthorized{}}, ""},
		{"unauthorized setting", "{unauthorized: {status: 403}}", Fault{}, `unknown field "status"`},
		{"bad duration", "{delay: soon}", Fault{}, `duration "soon"`},
		{"number duration", "{delay: 5}", Fault{}, "duration"},
		{"negative duration", "{delay: -1s}", Fault{}, "must not be negative"},
		{"bad times", "{is_error: {}, times: twice}", Fault{}, `times "twice"`},
		{"no kind", "{tool: commit_write}", Fault{}, "no fault kind set"},
		{"empty", "", Fault{}, "empty"},
		{"not a mapping", "[1, 2]", Fault{}, "mcp fault"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFault(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseFault(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseFault(%q): %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseFault(%q) (-want +got):\n%s", tt.in, diff)
			}
			// The String form parses back to the same fault.
			back, err := ParseFault(got.String())
			if err != nil {
				t.Fatalf("ParseFault(String() = %q): %v", got.String(), err)
			}
			if diff := cmp.Diff(got, back); diff != "" {
				t.Errorf("round trip of %q (-want +got):\n%s", got.String(), diff)
			}
		})
	}
}

func TestKinds(t *testing.T) {
	kinds := Kinds()
	if !slices.IsSorted(kinds) || len(slices.Compact(slices.Clone(kinds))) != len(kinds) {
		t.Errorf("Kinds() = %v, want sorted and distinct names", kinds)
	}
	for _, k := range kinds {
		settings := map[string]string{"delay": "1s", "change_tools": "{remove: read_ledger}"}[k]
		if settings == "" {
			settings = "{}"
		}
		f, err := ParseFault(fmt.Sprintf("{%s: %s}", k, settings))
		if err != nil {
			t.Fatalf("ParseFault for kind %s: %v", k, err)
		}
		if f.Kind() != k {
			t.Errorf("Kind() = %q, want %q", f.Kind(), k)
		}
	}
}

func mustArm(t testing.TB, s *Server, token string, faults ...string) {
	t.Helper()
	var fs []Fault
	for _, y := range faults {
		f, err := ParseFault(y)
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	if err := s.Arm(token, fs); err != nil {
		t.Fatal(err)
	}
}

// isErrorText calls commit_write for token and returns the isError text, or
// "" for a normal result.
func isErrorText(t testing.TB, cs *mcpClientSession, token string) string {
	t.Helper()
	res, err := callTool(t, cs, ToolCommitWrite, map[string]any{"entry": "e " + token})
	if err != nil {
		t.Fatalf("call for %s: %v", token, err)
	}
	if !res.IsError {
		return ""
	}
	return text(res)
}

// rawPost posts one JSON-RPC message by hand, as a client on session would.
func rawPost(t testing.TB, url, session, body string) *http.Response {
	t.Helper()
	ctx, cancel := contextT()
	defer cancel()
	resp, err := postMessage(ctx, url, session, body)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	resp.Body.Close()
	return resp
}

// postMessage posts one JSON-RPC message as a Streamable HTTP client on
// session ("" = none) would; the caller closes the answer's body.
func postMessage(ctx context.Context, url, session, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	return http.DefaultClient.Do(req)
}

// logWatch is a slog.Handler that hands records to a channel, so a test can
// wait for something the ledger logs.
type logWatch struct{ ch chan slog.Record }

func (l *logWatch) Enabled(context.Context, slog.Level) bool { return true }
func (l *logWatch) Handle(_ context.Context, r slog.Record) error {
	select {
	case l.ch <- r.Clone():
	default:
	}
	return nil
}
func (l *logWatch) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logWatch) WithGroup(string) slog.Handler      { return l }

// wait waits for a record with message msg and an attribute value want.
func (l *logWatch) wait(t testing.TB, msg, want string) {
	t.Helper()
	deadline := time.After(testTimeout)
	for {
		select {
		case r := <-l.ch:
			if r.Message != msg {
				continue
			}
			found := false
			r.Attrs(func(a slog.Attr) bool {
				found = found || a.Value.String() == want
				return !found
			})
			if found {
				return
			}
		case <-deadline:
			t.Fatalf("no log %q with %q", msg, want)
		}
	}
}

// TestFaultSchema checks the JSON Schema the harness publishes for faults:
// every kind is a property with a description, and exactly one is required.
func TestFaultSchema(t *testing.T) {
	s := (&jsonschema.Reflector{DoNotReference: true}).Reflect(&Fault{})
	var oneOf []string
	for _, o := range s.OneOf {
		oneOf = append(oneOf, o.Required...)
	}
	if diff := cmp.Diff(Kinds(), oneOf); diff != "" {
		t.Errorf("oneOf required kinds (-want +got):\n%s", diff)
	}
	// A method needs fail_before_execute, or stdio_exit (at start), and no tool.
	if len(s.AnyOf) != 3 || s.AnyOf[0].Not == nil || !slices.Equal(s.AnyOf[1].Required, []string{"fail_before_execute"}) ||
		!slices.Equal(s.AnyOf[2].Required, []string{KindStdioExit}) || s.AnyOf[2].Not == nil {
		t.Errorf("anyOf = %+v, want no method, or fail_before_execute or stdio_exit without tool", s.AnyOf)
	}
	for _, k := range append(Kinds(), "method", "tool", "times") {
		p, ok := s.Properties.Get(k)
		if !ok || p.Description == "" {
			t.Errorf("property %q missing or undocumented", k)
		}
	}
}

// Every fault name the ledger's armed kinds record has its row in the MCP
// fault table, which says what it means to the rules, the run, the reports
// and the ledger-stdio process.
func TestFaultKindsHaveMeanings(t *testing.T) {
	for _, k := range faultKinds() {
		names := []string{k.Name}
		if k.Name == KindStdioExit {
			names = nil
			for _, at := range stdioExitAts() {
				names = append(names, (&StdioExit{At: at}).name())
			}
		}
		if k.Name == wire.MCPFaultExpireSession {
			names = append(names, wire.MCPFaultExpireSessionAfterExecute)
		}
		for _, name := range names {
			m, ok := wire.MCPFaultMeaningOf(name)
			if !ok || m.Source != wire.FromArmed {
				t.Errorf("%s (kind %s): no armed row in wire.MCPFaultMeanings", name, k.Name)
			}
			if (k.Traits.transport == wire.MCPTransportStdio) != (m.Stdio != wire.StdioNone) {
				t.Errorf("%s: transport %q but stdio effect %d", name, k.Traits.transport, m.Stdio)
			}
		}
	}
}
