package gateway

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustBugs(t *testing.T, mode string, names ...string) Bugs {
	t.Helper()
	b, err := ParseBugs(mode, names)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The upstream fake's error body for an injected follow-up 500, as the
// gateway quotes it for Responses and Messages.
const injectedBody = `{"error":{"message":"injected follow-up failure","type":"server_error","param":null,"code":null}}`

// TestSeedFollowUpFailure reproduces seed 000's first three tables: with
// fault_on, every endpoint answers 500; naive writes three times and runs the
// loop three times, guarded writes once.
func TestSeedFollowUpFailure(t *testing.T) {
	naiveNote := "\n\nreplaycheck gateway: model group 'repro-model' failed with the error above. No fallback was attempted."
	tests := []struct {
		name       string
		mode       string
		path       string
		logPath    string
		wantWrites int
		wantRuns   int
		wantMsg    string
		wantCode   any
	}{
		{"before chat", ModeNaive, pathChat, pathChat, 3, 3,
			"replaycheck.InternalServerError: InternalServerError: OpenAIException - injected follow-up failure" + naiveNote, "500"},
		{"before responses", ModeNaive, pathResponses, pathResponses, 3, 3,
			"replaycheck.InternalServerError: InternalServerError: OpenAIException - " + injectedBody + naiveNote, "500"},
		{"before messages", ModeNaive, pathMessages, pathResponses, 3, 3,
			"replaycheck.InternalServerError: InternalServerError: OpenAIException - " + injectedBody + naiveNote, nil},
		{"after chat", ModeGuarded, pathChat, pathChat, 1, 1,
			"replaycheck.InternalServerError: InternalServerError: OpenAIException - injected follow-up failure", "500"},
		{"after responses", ModeGuarded, pathResponses, pathResponses, 1, 1,
			"replaycheck.InternalServerError: InternalServerError: OpenAIException - " + injectedBody, "500"},
		{"after messages", ModeGuarded, pathMessages, pathResponses, 1, 1,
			"replaycheck.InternalServerError: InternalServerError: OpenAIException - " + injectedBody, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, mustBugs(t, tt.mode), nil)
			r.touch("fault_on")
			status, body := r.post(tt.path, seedBody(tt.path, seedAsk, false, false))
			if status != http.StatusInternalServerError {
				t.Fatalf("status = %d, want 500; body %s", status, body)
			}
			wantTag := ""
			if tt.mode == ModeGuarded {
				wantTag = "true"
			}
			if got := r.header().Get(HeaderAfterDispatch); got != wantTag {
				t.Errorf("%s = %q, want %q", HeaderAfterDispatch, got, wantTag)
			}
			msg, code := errorOf(t, body)
			if diff := cmp.Diff(tt.wantMsg, msg); diff != "" {
				t.Errorf("error message (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCode, code); diff != "" {
				t.Errorf("error code (-want +got):\n%s", diff)
			}
			r.wantLedgerLines(tt.wantWrites)
			r.wantUniqC(map[string]int{
				tt.logPath + " follow_up injected_500": tt.wantRuns,
				tt.logPath + " initial forwarded":      tt.wantRuns,
			})
		})
	}
}

// TestSeedGuardrailRetried reproduces the guardrail tables: the tool is
// blocked, the first follow-up of each request fails once, and the request is
// retried in both modes (nothing reached the MCP server).
func TestSeedGuardrailRetried(t *testing.T) {
	for _, mode := range []string{ModeNaive, ModeGuarded} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, mustBugs(t, mode), nil)
			for _, path := range []string{pathChat, pathResponses, pathMessages} {
				r.touch("fault_once")
				status, body := r.post(path, seedBody(path, seedAsk, true, false))
				if status != http.StatusOK {
					t.Errorf("POST %s: status = %d, want 200; body %s", path, status, body)
				}
			}
			r.wantLedgerLines(0)
			if got := r.ledger.Total().CallsTotal(); got != 0 {
				t.Errorf("tools/call received = %d, want 0", got)
			}
			r.wantUniqC(map[string]int{
				"/v1/chat/completions follow_up forwarded":    1,
				"/v1/chat/completions follow_up injected_500": 1,
				"/v1/chat/completions initial forwarded":      2,
				"/v1/responses follow_up forwarded":           2,
				"/v1/responses follow_up injected_500":        2,
				"/v1/responses initial forwarded":             4,
			})
		})
	}
}

// TestSeedNoFault reproduces the no-fault tables: one write and one initial
// plus one follow-up call per request, in both modes.
func TestSeedNoFault(t *testing.T) {
	for _, mode := range []string{ModeNaive, ModeGuarded} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, mustBugs(t, mode), nil)
			for _, path := range []string{pathChat, pathResponses, pathMessages} {
				status, body := r.post(path, seedBody(path, seedAsk, false, false))
				if status != http.StatusOK {
					t.Errorf("POST %s: status = %d, want 200; body %s", path, status, body)
				}
			}
			r.wantLedgerLines(3)
			r.wantUniqC(map[string]int{
				"/v1/chat/completions follow_up forwarded": 1,
				"/v1/chat/completions initial forwarded":   1,
				"/v1/responses follow_up forwarded":        2,
				"/v1/responses initial forwarded":          2,
			})
		})
	}
}

// TestSeedStreamDrop reproduces the streaming tables: with a fallback from
// repro-model to backup-model and drop_stream, naive splices the fallback's
// chunks (14) and writes twice; guarded ends with the error event after the
// original 7 chunks and writes once.
func TestSeedStreamDrop(t *testing.T) {
	tests := []struct {
		mode       string
		wantChunks int
		wantWrites int
		wantRuns   int
	}{
		{ModeNaive, 14, 2, 2},
		{ModeGuarded, 7, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, mustBugs(t, tt.mode), func(c *Config) {
				c.Fallbacks = map[string]string{"repro-model": "backup-model"}
			})
			r.touch("drop_stream")
			status, stream := r.post(pathChat, seedBody(pathChat, seedAsk, false, true))
			if status != http.StatusOK {
				t.Fatalf("status = %d, want 200; body %s", status, stream)
			}
			if got := countLines(stream, `data: {"id"`); got != tt.wantChunks {
				t.Errorf(`grep -c '^data: {"id"' = %d, want %d; stream:%s`, got, tt.wantChunks, stream)
			}
			errLines := grepLines(stream, `data: {"error"`)
			if len(errLines) != 1 {
				t.Fatalf(`grep '^data: {"error"' found %d lines, want 1; stream:%s`, len(errLines), stream)
			}
			if want := "APIConnectionError: APIConnectionError: OpenAIException - Response payload is not completed"; !strings.Contains(errLines[0], want) {
				t.Errorf("error event %q does not contain %q", errLines[0], want)
			}
			r.wantLedgerLines(tt.wantWrites)
			r.wantUniqC(map[string]int{
				"/v1/chat/completions follow_up dropped_stream": tt.wantRuns,
				"/v1/chat/completions initial forwarded":        tt.wantRuns,
			})
		})
	}
}

// countLines is `grep -c '^prefix'`.
func countLines(b []byte, prefix string) int { return len(grepLines(b, prefix)) }

func grepLines(b []byte, prefix string) []string {
	var out []string
	for _, line := range bytes.Split(b, []byte("\n")) {
		if bytes.HasPrefix(line, []byte(prefix)) {
			out = append(out, string(line))
		}
	}
	return out
}

// TestAfterDispatchNoFallback: with a fallback configured, a follow-up that
// fails after the tool ran is neither retried nor sent to the fallback
// guarded; naive retries on both model groups, running the tool six times.
func TestAfterDispatchNoFallback(t *testing.T) {
	tests := []struct {
		mode       string
		wantWrites int
		wantModels map[string]int
	}{
		{ModeGuarded, 1, map[string]int{"repro-model": 2}},
		{ModeNaive, 6, map[string]int{"repro-model": 6, "backup-model": 6}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, mustBugs(t, tt.mode), func(c *Config) {
				c.Fallbacks = map[string]string{"repro-model": "backup-model"}
			})
			r.touch("fault_on")
			if status, body := r.post(pathChat, seedBody(pathChat, seedAsk, false, false)); status != http.StatusInternalServerError {
				t.Fatalf("status = %d, want 500: %s", status, body)
			}
			r.wantLedgerLines(tt.wantWrites)
			models := map[string]int{}
			for _, req := range r.upstream.Requests("") {
				models[req.Model]++
			}
			if diff := cmp.Diff(tt.wantModels, models); diff != "" {
				t.Errorf("upstream calls per model (-want +got):\n%s", diff)
			}
		})
	}
}
