package ledger

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// FuzzPeekBody feeds arbitrary POST bodies to the wrapper's peek and to the
// whole stateless endpoint (faults armed, so the fault path runs too): no
// input may panic, and every answer has a status.
func FuzzPeekBody(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"commit_write","arguments":{"entry":"a rc0000000001"}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"commit_write_keyed","arguments":{"entry":"b","idempotency_key":"k"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_ledger"}}]`,
		`{"jsonrpc":"2.0","id":1,"method":"rpc.discover"}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":5}`,
		`[]`, `{`, ``, `null`, `[null]`,
	} {
		f.Add([]byte(seed))
	}
	s, err := New(Config{Stateless: true, MaxBodyBytes: 64 << 10})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = s.Close() })
	// is_error is the one fault that needs no hijackable connection.
	if err := s.Arm("rc0000000001", []Fault{{IsError: &IsError{}}}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, _, _ = peek(body)
		// A recorder never disconnects; bound the request as a client would.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/mcp", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code == 0 {
			t.Fatalf("no status for body %q", body)
		}
	})
}
