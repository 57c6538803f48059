package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/internal/runtoken"
)

// tokenChat is a chat request whose prompt carries run token i of test.
func tokenChat(test string, i int) string {
	return `{"model":"m","messages":[{"role":"user","content":"write ` + runtoken.Derive(test, fmt.Sprint(i)) + `"}]}`
}

// TestServeRunLimit: with --max-runs 30, 100 runs leave 30 in GET counts
// and in the table at the end, beside the row of no token, and both say 70
// older runs were dropped; the total counts every request.
func TestServeRunLimit(t *testing.T) {
	upURL, _, out, stop := startServe(t, &serveOptions{MaxRuns: 30})
	for i := range 100 {
		if got := postChat(t, upURL, tokenChat(t.Name(), i)); got != http.StatusOK {
			t.Fatalf("model request %d: %d", i, got)
		}
	}
	if got := postChat(t, upURL, plainChat); got != http.StatusOK {
		t.Fatalf("model request without a token: %d", got)
	}
	c := serveCounts(t, upURL)
	if len(c.Runs) != 31 || c.Runs[0].Token != "" || c.DroppedRuns != 70 || c.MaxRuns != 30 || c.Total.Upstream.Initial != 101 {
		t.Errorf("counts: %d runs (first %q), dropped_runs %d, max_runs %d, total initial %d; want 31 (first \"\"), 70, 30, 101",
			len(c.Runs), c.Runs[0].Token, c.DroppedRuns, c.MaxRuns, c.Total.Upstream.Initial)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	table := out.String()
	if n := strings.Count(table, "│ rc"); n != 30 {
		t.Errorf("the table at the end has %d run rows, want 30:\n%s", n, table)
	}
	if want := "70 older runs dropped: the 30 most recently active are kept (--max-runs)"; !strings.Contains(table, want) {
		t.Errorf("the table lacks %q:\n%s", want, table)
	}
}

// TestServeEveryTableIsShort: the --every table shows the row of no token
// and the everyRows most recently active runs, and says how many more are
// kept and how many were dropped.
func TestServeEveryTableIsShort(t *testing.T) {
	fk, err := buildFakes(&serveOptions{UpstreamAddr: "127.0.0.1:0", MCPAddr: "127.0.0.1:0", MaxRuns: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer fk.close()
	for _, body := range []string{plainChat} {
		fk.upstream.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body)))
	}
	for i := range 80 {
		fk.upstream.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(tokenChat(t.Name(), i))))
	}
	var b strings.Builder
	if err := writeCountTable(&b, fk, everyRows); err != nil {
		t.Fatal(err)
	}
	table := b.String()
	if n := strings.Count(table, "│ rc"); n != everyRows || !strings.Contains(table, "(serve, no token)") {
		t.Errorf("the --every table has %d run rows and the row of no token %t, want %d and true:\n%s", n, strings.Contains(table, "(serve, no token)"), everyRows, table)
	}
	for i := 60; i < 80; i++ {
		if tok := runtoken.Derive(t.Name(), fmt.Sprint(i)); !strings.Contains(table, "│ "+tok) {
			t.Errorf("the --every table lacks run %d (%s), one of the most recent:\n%s", i, tok, table)
		}
	}
	for _, want := range []string{
		"30 more runs kept, not shown (the 20 most recently active are; GET /_replaycheck/counts lists all)",
		"30 older runs dropped: the 50 most recently active are kept (--max-runs)",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("the --every table lacks %q:\n%s", want, table)
		}
	}
}

// TestServeRunLimitBothFakes: with --max-runs 8, 50 runs that each send a
// model request and, on one MCP session, a commit_write and a
// commit_write_keyed call leave 8 runs in GET counts and 8 idempotency keys
// in the ledger: the 42 runs dropped took their keys (and the keyed writes'
// first results) with them, and counts and the table say so; the total
// counts every run.
func TestServeRunLimitBothFakes(t *testing.T) {
	upURL, mcpURL, out, stop := startServe(t, &serveOptions{MaxRuns: 8})
	ctx, cs := serveMCPClient(t, mcpURL)
	for i := range 50 {
		tok := runtoken.Derive(t.Name(), fmt.Sprint(i))
		if got := postChat(t, upURL, tokenChat(t.Name(), i)); got != http.StatusOK {
			t.Fatalf("model request %d: %d", i, got)
		}
		for _, p := range []*mcp.CallToolParams{
			{Name: ledger.ToolCommitWrite, Arguments: map[string]any{"entry": "write " + tok}},
			{Name: ledger.ToolCommitWriteKeyed, Arguments: map[string]any{"entry": "write " + tok, "idempotency_key": "key-" + tok}},
		} {
			if res, err := cs.CallTool(ctx, p); err != nil || res.IsError {
				t.Fatalf("run %d: %s: %v %+v", i, p.Name, err, res)
			}
		}
	}
	c := serveCounts(t, upURL)
	var runs int
	for _, rc := range c.Runs {
		if rc.Token != "" {
			runs++
		}
	}
	if runs != 8 || c.DroppedRuns != 42 || c.Total.Upstream.Initial != 50 || c.Total.MCP.Writes != 100 || c.Total.MCP.Keys != 50 {
		t.Errorf("counts: %d runs, dropped_runs %d, total initial %d, writes %d, keys %d; want 8, 42, 50, 100, 50",
			runs, c.DroppedRuns, c.Total.Upstream.Initial, c.Total.MCP.Writes, c.Total.MCP.Keys)
	}
	if want := (ledger.Keys{Kept: 8, Forgotten: 42}); c.MCPKeys != want {
		t.Errorf("mcp_keys (-want +got):\n%s", cmp.Diff(want, c.MCPKeys))
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	table := out.String()
	for _, want := range []string{
		"42 older runs dropped: the 8 most recently active are kept (--max-runs)",
		"42 idempotency keys forgotten with the dropped runs that saw them (8 kept)",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
}

// TestServeRunLimitBoundsLinesAndNoToken: with --max-runs 8, 30 runs that
// each write a line, then 20 keyed writes without a token, leave 16 ledger
// lines kept (the 8 runs kept and the newest 8 of no token) and 8 keys of
// no token: read_ledger returns those 16 lines, in write order, GET counts
// says 16 lines kept and 34 forgotten, and so does the table; the total
// counts every write.
func TestServeRunLimitBoundsLinesAndNoToken(t *testing.T) {
	upURL, mcpURL, out, stop := startServe(t, &serveOptions{MaxRuns: 8})
	ctx, cs := serveMCPClient(t, mcpURL)
	var want []any
	for i := range 30 {
		entry := "write " + runtoken.Derive(t.Name(), fmt.Sprint(i))
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ledger.ToolCommitWrite, Arguments: map[string]any{"entry": entry}}); err != nil || res.IsError {
			t.Fatalf("run %d: %v %+v", i, err, res)
		}
		if i >= 22 {
			want = append(want, entry)
		}
	}
	for i := range 20 {
		entry := fmt.Sprintf("no token %d", i)
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ledger.ToolCommitWriteKeyed, Arguments: map[string]any{"entry": entry, "idempotency_key": fmt.Sprintf("key %d", i)}}); err != nil || res.IsError {
			t.Fatalf("keyed write %d without a token: %v %+v", i, err, res)
		}
		if i >= 12 {
			want = append(want, entry)
		}
	}
	c := serveCounts(t, upURL)
	if c.Total.MCP.Writes != 50 || c.DroppedRuns != 22 {
		t.Errorf("counts: total writes %d, dropped_runs %d; want 50, 22", c.Total.MCP.Writes, c.DroppedRuns)
	}
	if want := (ledger.Lines{Kept: 16, Forgotten: 34}); c.MCPLines != want {
		t.Errorf("mcp_lines (-want +got):\n%s", cmp.Diff(want, c.MCPLines))
	}
	if want := (ledger.Keys{Kept: 8, Forgotten: 12}); c.MCPKeys != want {
		t.Errorf("mcp_keys (-want +got):\n%s", cmp.Diff(want, c.MCPKeys))
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ledger.ToolReadLedger})
	if err != nil || res.IsError {
		t.Fatalf("read_ledger: %v %+v", err, res)
	}
	if diff := cmp.Diff(map[string]any{"entries": want}, res.StructuredContent); diff != "" {
		t.Errorf("read_ledger (-want +got):\n%s", diff)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if want := "34 ledger lines forgotten with the dropped runs that wrote them, or the oldest of no token (16 kept)"; !strings.Contains(out.String(), want) {
		t.Errorf("the table lacks %q:\n%s", want, out.String())
	}
}
