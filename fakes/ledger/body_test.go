package ledger

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSlowBodyIsCutOff: a POST whose body stalls after one byte gets 408
// once BodyTimeout has passed, instead of holding the connection.
func TestSlowBodyIsCutOff(t *testing.T) {
	_, url := newLedger(t, Config{BodyTimeout: 50 * time.Millisecond})
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The test's own bound: without the ledger's, the read below waits for
	// it and fails.
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	if _, err := fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:1]); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("status %d, want 408", resp.StatusCode)
	}
}
