package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
