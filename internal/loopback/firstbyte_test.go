package loopback

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHeaderTimeoutStartsAtFirstByte: a connection the client opened but
// has not used yet is not closed by the header timeout, so a request sent
// on it after the timeout passed is answered (an http.Transport pools such
// dials; the close raced its next request, which failed with EOF); a
// request whose first bytes came but whose headers stall is still cut.
// A header timeout of 1ns has passed before the server reads the
// connection at all.
func TestHeaderTimeoutStartsAtFirstByte(t *testing.T) {
	tests := []struct {
		name string
		send string
		want string // the answer's status line, or "" for a closed connection
	}{
		{name: "a whole request after the timeout passed", send: "POST /ok HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}", want: "HTTP/1.1 200 OK"},
		{name: "headers stalled after the first bytes", send: "POST /ok HTTP/1.1\r\n", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := Listen("")
			if err != nil {
				t.Fatal(err)
			}
			srv, _ := serveOn(ln, "test", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				_, _ = io.WriteString(w, "ok")
			}), time.Nanosecond)
			t.Cleanup(func() { srv.Close() })
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
			if _, err := io.WriteString(conn, tt.send); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(conn).ReadString('\n')
			got := strings.TrimSpace(line)
			if tt.want == "" {
				if err == nil {
					t.Errorf("got %q, want the connection closed", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q (err %v), want %q", got, err, tt.want)
			}
		})
	}
}
