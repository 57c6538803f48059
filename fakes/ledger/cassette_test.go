package ledger

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/ledger/mcpcassette"
	"github.com/replaycheck/replaycheck/internal/itemserver"
	"github.com/replaycheck/replaycheck/internal/runtoken"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// recordItems records the calls through a ledger forwarding to an item
// server over HTTP into a new cassette, then stops the server, and returns
// the cassette's path and what the recording ledger counted. The client's
// requests to the ledger carry Authorization: auth unless it is "", and
// belong to the run token owner when it is set (the run's own address).
func recordItems(t *testing.T, owner, auth string, calls func(cs *mcp.ClientSession)) (string, wire.MCPCounts) {
	t.Helper()
	_, serverURL, stop := itemserver.ServeHTTPStoppable(t)
	defer stop()
	path := filepath.Join(t.TempDir(), "mcp", "session.jsonl")
	rec, err := mcpcassette.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Forward: &Forward{URL: serverURL + "?api_key=url-secret-in-query", Record: rec}})
	if err != nil {
		t.Fatal(err)
	}
	ls := httptest.NewServer(owned(owner, s))
	cs := connectWith(t, ls.URL+"/mcp", auth)
	calls(cs)
	_ = cs.Close()
	counts := s.Total()
	ls.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	return path, counts
}

// connectWith opens an SDK client session to url whose requests carry
// Authorization: auth (none when auth is "").
func connectWith(t testing.TB, url, auth string) *mcp.ClientSession {
	t.Helper()
	if auth == "" {
		return connect(t, url, "")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "ledger-test", Version: "1"}, nil)
	hc := &http.Client{Transport: headerTransport{"Authorization", auth}}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// owned serves s at /mcp, as the address of the run token owner when it is
// set.
func owned(owner string, s *Server) http.Handler {
	mux := http.NewServeMux()
	if owner == "" {
		mux.Handle("/mcp", s)
	} else {
		mux.Handle("/mcp", runtoken.Handler(owner, s))
	}
	return mux
}

// replayLedger starts a ledger replaying the cassette at path, at the
// address of the run token owner when it is set, until the test ends.
func replayLedger(t *testing.T, path, owner string) (*Server, string) {
	t.Helper()
	c, err := mcpcassette.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Forward: &Forward{Cassette: c}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(owned(owner, s))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { _ = s.Close() })
	return s, ts.URL + "/mcp"
}

// TestCassetteRecordReplay records calls of a real MCP server through a
// forwarding ledger, stops the server, and replays them from the cassette
// in a run with another token: the answers are the server's (with the new
// token), the counts are the recording's, and the secrets of the client's
// headers, the server's URL and the arguments never reached the file.
func TestCassetteRecordReplay(t *testing.T) {
	const headerSecret = "hdr-secret-0a1b2c3d"
	const keyShaped = "sk-proj-abcdef0123456789"
	recTok, playTok := runtoken.Derive("record"), runtoken.Derive("replay")
	type step struct {
		tool string
		args func(tok string) map[string]any
	}
	steps := []step{
		{"create_item", func(tok string) map[string]any { return map[string]any{"name": "entry-" + tok} }},
		{"create_item", func(string) map[string]any { return map[string]any{"name": headerSecret} }},
		{"create_item", func(string) map[string]any { return map[string]any{"name": keyShaped} }},
		{"create_item", func(string) map[string]any { return map[string]any{"name": ""} }}, // isError
		{"list_items", func(string) map[string]any { return nil }},
	}
	run := func(cs *mcp.ClientSession, tok string) []string {
		var out []string
		for _, st := range steps {
			res, err := callTool(t, cs, st.tool, st.args(tok))
			if err != nil {
				t.Fatalf("%s: %v", st.tool, err)
			}
			out = append(out, strings.ReplaceAll(text(res), tok, "TOKEN"))
		}
		return out
	}
	var recorded []string
	path, recCounts := recordItems(t, recTok, "Bearer "+headerSecret, func(cs *mcp.ClientSession) {
		recorded = run(cs, recTok)
	})

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{headerSecret, keyShaped, "url-secret-in-query"} {
		if strings.Contains(string(b), leak) {
			t.Errorf("the cassette holds the secret %q:\n%s", leak, b)
		}
	}
	for _, want := range []string{mcpcassette.Redacted, `"initialize"`, `"tools/list"`, `"readOnlyHint":true`, `"name":"entry-{{token}}"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the cassette lacks %s:\n%s", want, b)
		}
	}

	s, ledgerURL := replayLedger(t, path, playTok)
	cs := connectWith(t, ledgerURL, "Bearer "+headerSecret)
	replayed := run(cs, playTok)
	live := []string{"created entry-TOKEN", "created " + headerSecret, "created " + keyShaped, "name must not be empty",
		`["entry-TOKEN","` + headerSecret + `","` + keyShaped + `"]`}
	if diff := cmp.Diff(live, recorded); diff != "" {
		t.Errorf("answers while recording (-want +got):\n%s", diff)
	}
	want := []string{"created entry-TOKEN", "created [REDACTED]", "created [REDACTED]", "name must not be empty", `["entry-TOKEN","[REDACTED]","[REDACTED]"]`}
	if diff := cmp.Diff(want, replayed); diff != "" {
		t.Errorf("replayed answers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(recCounts, s.Total(), ignoreMessages); diff != "" {
		t.Errorf("replay counts (-recorded +replayed):\n%s", diff)
	}
	if got := s.Counts(playTok); got.Writes != 3 || got.CallsTotal() != len(steps) {
		t.Errorf("the replay run's own counts: %d writes of %d calls, want 3 of %d", got.Writes, got.CallsTotal(), len(steps))
	}
}

// TestCassetteMiss: a call no recorded call matches is an MCP error naming
// the call, recorded as cassette_miss and counted; it runs nothing.
func TestCassetteMiss(t *testing.T) {
	path, _ := recordItems(t, "", "", func(cs *mcp.ClientSession) {
		if _, err := callTool(t, cs, "create_item", map[string]any{"name": "a"}); err != nil {
			t.Fatal(err)
		}
	})
	s, ledgerURL := replayLedger(t, path, "")
	cs := connect(t, ledgerURL, "")
	for _, tt := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"create_item", map[string]any{"name": "b"}, `no recorded answer for tools/call create_item {"name":"b"}`},
		{"list_items", nil, "list_items was never called in the recording"},
	} {
		res, err := callTool(t, cs, tt.tool, tt.args)
		if err == nil {
			t.Fatalf("%s answered %q (isError %v), want an MCP error", tt.tool, text(res), res.IsError)
		}
		if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("error %q lacks %q and the cassette's path", err, tt.want)
		}
	}
	got := s.Total()
	if got.CassetteMisses != 2 || got.Writes != 0 {
		t.Errorf("counts: %d cassette misses, %d writes; want 2 and 0", got.CassetteMisses, got.Writes)
	}
	var misses int
	for _, e := range s.Events("") {
		if e.IsFault(wire.MCPFaultCassetteMiss) {
			misses++
		}
	}
	if misses != 2 {
		t.Errorf("%d cassette_miss events, want 2", misses)
	}
}

// TestCassetteFaults replays, with the server gone, each call of the
// forwarding table under its faults: the counts and writes are those of
// forwarding to the live server (TestForwardHTTP), so every fault acts on a
// replay where it acts on a forward.
func TestCassetteFaults(t *testing.T) {
	cases := append(forwardCases(),
		forwardCase{name: "expire_session after execute: ran, the answer lost", tool: "create_item", args: map[string]any{"name": "a"},
			faults:  []Fault{{ExpireSession: &ExpireSession{After: ExpireAfterExecute}}},
			wantErr: true,
			want:    wire.MCPCounts{Calls: map[string]int{"create_item": 1}, Writes: 1}, wantEntry: `create_item {"name":"a"}`},
		forwardCase{name: "expire_session before: never answered from the cassette", tool: "create_item", args: map[string]any{"name": "a"},
			faults:  []Fault{{ExpireSession: &ExpireSession{}}},
			wantErr: true,
			want:    wire.MCPCounts{Calls: map[string]int{"create_item": 1}}},
		forwardCase{name: "delay: held, then answered", tool: "create_item", args: map[string]any{"name": "a"},
			faults: []Fault{{Delay: new(fault.Duration(time.Millisecond))}},
			want:   wire.MCPCounts{Calls: map[string]int{"create_item": 1}, Writes: 1}, wantEntry: `create_item {"name":"a"}`},
	)
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			path, _ := recordItems(t, "", "", func(cs *mcp.ClientSession) {
				if _, err := callTool(t, cs, tt.tool, tt.args); err != nil {
					t.Fatal(err)
				}
			})
			c, err := mcpcassette.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			runForwardCase(t, Forward{Cassette: c}, tt, nil)
		})
	}
}

func TestRecordScrubsCommandSecrets(t *testing.T) {
	f := Forward{
		Command: []string{"server"},
		Env:     []string{"MEMORY_FILE_PATH=/tmp/memory.jsonl", "NOTION_API_TOKEN=ntn_abcdef123456", "GITHUB_TOKEN=x"},
	}
	got := f.secrets()
	if !slices.Contains(got, "ntn_abcdef123456") {
		t.Errorf("secrets %q: the value of NOTION_API_TOKEN is missing", got)
	}
	if slices.Contains(got, "/tmp/memory.jsonl") {
		t.Errorf("secrets %q: MEMORY_FILE_PATH is no secret", got)
	}
}
