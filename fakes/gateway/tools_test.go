package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// toolResultModel is a chat model API stub that calls ledger-commit_write on
// the initial request and records the tool message of the follow-up: what
// the gateway told the model about the call.
type toolResultModel struct {
	mu      sync.Mutex
	results []string
}

func (m *toolResultModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil || json.Unmarshal(raw, &body) != nil {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	for _, msg := range body.Messages {
		if msg.Role == "tool" {
			m.mu.Lock()
			m.results = append(m.results, msg.Content)
			m.mu.Unlock()
			fmt.Fprint(w, `{"id":"c2","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}`)
			return
		}
	}
	fmt.Fprint(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"ledger-commit_write","arguments":"{\"entry\":\"alpha\"}"}}]},"finish_reason":"tool_calls"}]}`)
}

// holdCalls is an http.RoundTripper that holds a POST carrying a tools/call
// back before sending it, until hold passes or its context ends: a gateway
// slow to get the call out (a busy machine, a slow connection).
type holdCalls struct {
	next http.RoundTripper
	hold time.Duration
}

func (h holdCalls) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"method":"tools/call"`)) {
			select {
			case <-time.After(h.hold):
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
		}
	}
	return h.next.RoundTrip(req)
}

// TestWhatTheModelIsTold checks the tool result the model gets for each way
// a tool call can end: the ambiguous and timed-out cases are explicit about
// the unknown outcome, a blocked or refused call says it was not sent.
//
// With hold, the gateway's own transport holds the tools/call back for 10
// times the tool timeout before sending it (a busy machine): the call still
// reaches the ledger and times out there, cancelled when guarded, since the
// timeout starts when the request was written. Were it counted from before
// the send, the call would never leave (calls 0), as in issue 18's flips.
func TestWhatTheModelIsTold(t *testing.T) {
	const toolTimeout = 100 * time.Millisecond
	slow := fault.Duration(500 * time.Millisecond)
	tests := []struct {
		name          string
		bugs          Bugs
		block         bool
		hold          bool
		faults        []ledger.Fault
		want          string
		wantNot       string
		cancellations int // with hold, the ledger's count
	}{
		{name: "success", want: "recorded alpha"},
		{name: "guardrail", block: true, want: "was blocked by guardrail 'block-mcp' before it ran"},
		{name: "isError", faults: []ledger.Fault{{Tool: ledger.ToolCommitWrite, IsError: &ledger.IsError{Message: "entry not found"}}},
			want: "MCP tool error: entry not found"},
		{name: "connection dropped after execute", faults: []ledger.Fault{{Tool: ledger.ToolCommitWrite, DropAfterExecute: &ledger.DropAfterExecute{}}},
			want: "outcome unknown. The connection to MCP server 'ledger' was lost after the call was sent, so it may have run; it was not retried"},
		{name: "connection dropped after execute, mcp-resend-on-disconnect", bugs: Bugs{MCPResendOnDisconnect: true},
			faults: []ledger.Fault{{Tool: ledger.ToolCommitWrite, Times: fault.Once, DropAfterExecute: &ledger.DropAfterExecute{}}},
			want:   "recorded alpha", wantNot: "outcome unknown"},
		{name: "tool timeout", faults: []ledger.Fault{{Tool: ledger.ToolCommitWrite, Delay: &slow}},
			want: "timed out after 100ms and was cancelled; its outcome is unknown"},
		{name: "tool timeout, no-cancel-on-timeout", bugs: Bugs{NoCancelOnTimeout: true}, faults: []ledger.Fault{{Tool: ledger.ToolCommitWrite, Delay: &slow}},
			want: "timed out after 100ms.", wantNot: "cancelled"},
		{name: "tool timeout, the call slow to leave", hold: true, faults: []ledger.Fault{{Tool: ledger.ToolCommitWrite, Delay: &slow}},
			want: "timed out after 100ms and was cancelled", cancellations: 1},
		{name: "tool timeout, the call slow to leave, no-cancel-on-timeout", bugs: Bugs{NoCancelOnTimeout: true}, hold: true,
			faults: []ledger.Fault{{Tool: ledger.ToolCommitWrite, Delay: &slow}}, want: "timed out after 100ms.", wantNot: "cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, err := ledger.New(sessionLedger)
			if err != nil {
				t.Fatal(err)
			}
			mux := http.NewServeMux()
			mux.Handle("/mcp", l)
			ls := httptest.NewServer(mux)
			model := &toolResultModel{}
			us := httptest.NewServer(model)
			var client *http.Client
			if tt.hold {
				client = &http.Client{Transport: holdCalls{next: http.DefaultTransport, hold: 10 * toolTimeout}}
			}
			g, err := New(Config{Upstream: us.URL + "/v1", MCP: ls.URL + "/mcp", Bugs: tt.bugs, ToolTimeout: toolTimeout, HTTPClient: client})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				g.Close() // first: its session holds a stream open on the ledger
				ls.Close()
				l.Close()
				us.Close()
			})
			if err := l.Arm("", tt.faults); err != nil {
				t.Fatal(err)
			}
			w := httptest.NewRecorder()
			g.ServeHTTP(w, httptest.NewRequest("POST", pathChat, strings.NewReader(seedBody(pathChat, seedAsk, tt.block, false))))
			if w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			model.mu.Lock()
			results := model.results
			model.mu.Unlock()
			if len(results) != 1 {
				t.Fatalf("tool results = %q, want one", results)
			}
			if !strings.Contains(results[0], tt.want) {
				t.Errorf("the model was told %q, want it to contain %q", results[0], tt.want)
			}
			if tt.wantNot != "" && strings.Contains(results[0], tt.wantNot) {
				t.Errorf("the model was told %q, which contains %q", results[0], tt.wantNot)
			}
			if tt.hold {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if c, err := l.WaitFor(ctx, "", func(c wire.MCPCounts) bool {
					return c.Calls[ledger.ToolCommitWrite] == 1 && c.Cancellations == tt.cancellations
				}); err != nil {
					t.Errorf("%v (ledger counts %+v)", err, c)
				}
			}
		})
	}
}
