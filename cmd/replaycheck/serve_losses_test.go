package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/fakes/control"
	"github.com/replaycheck/replaycheck/internal/fulldisk"
	"github.com/replaycheck/replaycheck/internal/syncbuf"
)

// serveCounts reads GET counts of the serve at upURL.
func serveCounts(t *testing.T, upURL string) control.Counts {
	t.Helper()
	res, err := http.Get(strings.TrimSuffix(upURL, "/v1") + control.Prefix + "counts")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var c control.Counts
	if err := json.NewDecoder(res.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

// postChat sends one plain chat request to the serve at upURL and returns
// its status.
func postChat(t *testing.T, upURL, body string) int {
	t.Helper()
	res, err := http.Post(upURL+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

const plainChat = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`

// TestServeUpstreamLogOnAFullDisk: `serve --upstream-log` on a disk that
// fills up keeps only whole lines (no torn one), says so on stderr at once
// in one line (not one per lost line), shows the loss in the count table
// and in GET counts, and exits 3 naming how many lines were lost.
func TestServeUpstreamLogOnAFullDisk(t *testing.T) {
	if !fulldisk.Child(t, 1000) {
		return
	}
	log := filepath.Join(t.TempDir(), "upstream.log")
	var errOut syncbuf.Buffer
	upURL, _, out, stop := startServe(t, &serveOptions{UpstreamLog: log, ErrOut: &errOut})
	const n = 60 // 37 bytes a line: 27 fit
	for range n {
		if got := postChat(t, upURL, plainChat); got != http.StatusOK {
			t.Fatalf("model request: %d", got)
		}
	}
	c := serveCounts(t, upURL)
	err := stop()
	b, _ := os.ReadFile(log)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for i, l := range lines {
		if l != "/v1/chat/completions initial forwarded" {
			t.Fatalf("line %d of the upstream log is %q, want a whole line", i+1, l)
		}
	}
	written := len(lines)
	if written == 0 || written >= n || !strings.HasSuffix(string(b), "\n") {
		t.Fatalf("the upstream log holds %d lines (%d bytes), want some of %d, each whole", written, len(b), n)
	}
	lost := n - written
	if len(c.WriteErrors) != 1 || c.WriteErrors[0].File != log || c.WriteErrors[0].Written != written || c.WriteErrors[0].Lost != lost || !strings.Contains(c.WriteErrors[0].Error, "file too large") {
		t.Errorf("counts' write_errors %+v, want %s: %d written, %d lost, and why", c.WriteErrors, log, written, lost)
	}
	if want := "LOST LINES: upstream log " + log + ": " + strconv.Itoa(lost) + " of " + strconv.Itoa(n); !strings.Contains(out.String(), want) {
		t.Errorf("the count table lacks %q:\n%s", want, out)
	}
	if notices := strings.Count(errOut.String(), "could not be written"); notices != 1 || !strings.Contains(errOut.String(), "upstream log "+log) {
		t.Errorf("stderr, want one notice naming the upstream log:\n%s", errOut.String())
	}
	if exitCode(err) != exitCannotRun || err == nil || !strings.Contains(err.Error(), strconv.Itoa(lost)+" of "+strconv.Itoa(n)+" lines could not be written") {
		t.Errorf("serve ended with %v (exit %d), want exit 3 saying %d of %d lines were lost", err, exitCode(err), lost, n)
	}
}

// TestServeSessionCap: with --mcp-max-sessions, initialize calls past the
// cap are refused, so however many come the open sessions stay bounded; the
// counts and the table say so.
func TestServeSessionCap(t *testing.T) {
	const max, n = 5, 40
	upURL, mcpURL, out, stop := startServe(t, &serveOptions{MaxSessions: max, SessionTimeout: time.Hour})
	statuses := map[int]int{}
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, mcpURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"loop","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		cancel()
		statuses[res.StatusCode]++
	}
	if statuses[http.StatusOK] != max || statuses[http.StatusServiceUnavailable] != n-max {
		t.Errorf("initialize statuses %v, want %d × 200 and the rest 503", statuses, max)
	}
	ss := serveCounts(t, upURL).MCPSessions
	if ss.Live != max || ss.Refused != n-max || ss.Max != max || ss.IdleTimeout != "1h0m0s" {
		t.Errorf("counts' mcp_sessions %+v, want %d live, %d refused, max %d, idle 1h", ss, max, n-max, max)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if want := "MCP SESSIONS: 5 open, 35 initialize refused at --mcp-max-sessions 5"; !strings.Contains(out.String(), want) {
		t.Errorf("the count table lacks %q:\n%s", want, out)
	}
}

// TestServeSaysUnfiredFaults: a fault that was armed and never fired — here
// a stream drop, which a plain answer gives nothing to act on — is said at
// exit on stderr and listed in GET counts; one that fired is not.
func TestServeSaysUnfiredFaults(t *testing.T) {
	var errOut syncbuf.Buffer
	upURL, _, _, stop := startServe(t, &serveOptions{ErrOut: &errOut, UpstreamFaults: []string{
		"{on: initial, drop: {after: tool_call}}",
		"{on: initial, respond: {status: 429}}",
		"{on: follow_up, truncate: {}}",
	}, MCPFaults: []string{"{tool: read_ledger, is_error: {}}"}})
	if got := postChat(t, upURL, plainChat); got != http.StatusTooManyRequests {
		t.Fatalf("model request: %d, want the 429 that fires", got)
	}
	c := serveCounts(t, upURL)
	if len(c.UnfiredFaults) != 3 || c.UnfiredFaults[0].Upstream == nil || c.UnfiredFaults[0].Upstream.Drop == nil || c.UnfiredFaults[1].Upstream == nil || c.UnfiredFaults[1].Upstream.Truncate == nil || c.UnfiredFaults[2].MCP == nil {
		t.Errorf("counts' unfired_faults %+v, want the drop, the truncate and the is_error", c.UnfiredFaults)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	got := errOut.String()
	for _, want := range []string{
		"upstream fault initial drop after tool_call always, armed for every request, never fired (it matched 0 requests; it acts on streamed answers only)",
		"upstream fault follow_up truncate always, armed for every request, never fired (it matched 0 requests; it acts on non-streamed answers only)",
		"mcp fault {tool: read_ledger, is_error: {}}, armed for every request, never fired (it matched 0 requests)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("stderr lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "429") {
		t.Errorf("stderr names the 429, which fired:\n%s", got)
	}
}

// TestServeBodyTooLarge: a model request over --max-body-mib is answered
// 413 naming the limit, the first is said on serve's stderr at once (size,
// limit, the flag), and every one is counted under the table; a bad
// --max-body-mib is refused with exit 2.
func TestServeBodyTooLarge(t *testing.T) {
	var errOut syncbuf.Buffer
	upURL, _, out, stop := startServe(t, &serveOptions{MaxBodyMiB: 1, ErrOut: &errOut})
	big := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 3<<19) + `"}]}`
	for i := range 2 {
		resp, err := http.Post(upURL+"/chat/completions", "application/json", strings.NewReader(big))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "exceeds the 1048576-byte limit of replaycheck's model API fake") {
			t.Errorf("request %d over the limit: %d %s; want 413 naming the limit", i, resp.StatusCode, b)
		}
		if i == 0 {
			want := "serve: a model request to /v1/chat/completions was refused (413): its body of 1.5 MiB is over the limit of 1 MiB; raise it with --max-body-mib"
			if !strings.Contains(errOut.String(), want) {
				t.Errorf("serve's stderr after the answer lacks %q:\n%s", want, errOut.String())
			}
		}
	}
	if got := postChat(t, upURL, plainChat); got != http.StatusOK {
		t.Errorf("a request under the limit: %d", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(errOut.String(), "was refused (413)"); n != 1 {
		t.Errorf("serve said %d refusals on stderr, want the first only:\n%s", n, errOut.String())
	}
	if want := "BODY TOO LARGE: 2 model requests refused (413), their body over the --max-body-mib limit of 1 MiB"; !strings.Contains(out.String(), want) {
		t.Errorf("the table lacks %q:\n%s", want, out.String())
	}
	for _, bad := range []int64{-1, 1025} {
		err := runServe(context.Background(), &serveOptions{UpstreamAddr: "127.0.0.1:0", MCPAddr: "127.0.0.1:0", MaxBodyMiB: bad})
		if exitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), fmt.Sprintf("--max-body-mib %d: want 1 to 1024", bad)) {
			t.Errorf("--max-body-mib %d: exit %d, %v; want 2", bad, exitCode(err), err)
		}
	}
}
