package ledger

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestDropAfterExecuteCut posts a tools/call by hand, so the test sees where
// the answer was cut: before its first byte, or after its headers.
func TestDropAfterExecuteCut(t *testing.T) {
	tests := []struct {
		name        string
		fault       string
		wantHeaders bool // the status line and headers reached the client
	}{
		{"before the answer", "{tool: commit_write, drop_after_execute: {}}", false},
		{"after headers", "{tool: commit_write, drop_after_execute: {after: headers}}", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fileLedger(t)
			s, url := newLedger(t, cfg)
			const tok = "rc00000000d1"
			mustArm(t, s, tok, tt.fault)
			cs := connect(t, url, "")

			ctx, cancel := contextT()
			defer cancel()
			body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"commit_write","arguments":{"entry":"alpha ` + tok + `"}}}`
			resp, err := postMessage(ctx, url, cs.ID(), body)
			if !tt.wantHeaders {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("POST answered %s, want the connection closed before the status line", resp.Status)
				}
			} else {
				if err != nil {
					t.Fatalf("POST: %v, want the status line and headers before the cut", err)
				}
				defer resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
					t.Errorf("answer %s, Content-Type %q; want 200 and an SSE stream", resp.Status, resp.Header.Get("Content-Type"))
				}
				got, err := io.ReadAll(resp.Body)
				if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Errorf("reading the answer: %v, want it cut (unexpected EOF)", err)
				}
				if bytes.Contains(got, []byte(`"result"`)) {
					t.Errorf("the answer carried the result before the cut: %q", got)
				}
			}

			if diff := cmp.Diff(wire.MCPCounts{Calls: map[string]int{ToolCommitWrite: 1}, Writes: 1}, s.Counts(tok), ignoreProtocols); diff != "" {
				t.Errorf("Counts (-want +got):\n%s", diff)
			}
			if got := len(fileLines(t, cfg.Path)); got != 1 {
				t.Errorf("file has %d lines, want 1", got)
			}
			var reps []string
			for _, r := range s.FaultReports(tok) {
				reps = append(reps, reportKind(t, r)+" fired "+strconv.Itoa(r.Fired))
			}
			if diff := cmp.Diff([]string{"drop_after_execute fired 1"}, reps); diff != "" {
				t.Errorf("FaultReports (-want +got):\n%s", diff)
			}
		})
	}
}
