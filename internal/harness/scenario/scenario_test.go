package scenario

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/runtoken"
	"github.com/replaycheck/replaycheck/internal/wire"
	"github.com/replaycheck/replaycheck/scenarios"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestLoadGood(t *testing.T) {
	ss, err := Load("testdata/good")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	var names []string
	for _, s := range ss {
		names = append(names, s.Name)
	}
	want := []string{"two requests", "defaults", "chat follow-up 500 after tool ran"}
	if strings.Join(names, "|") != strings.Join(want, "|") {
		t.Fatalf("names (-want +got):\n-%q\n+%q", want, names)
	}
	two := ss[0]
	if got := len(two.AllRequests()); got != 2 {
		t.Errorf("requests = %d, want 2", got)
	}
	if !two.Isolated() || ss[1].Isolated() {
		t.Errorf("Isolated: two=%v defaults=%v, want true, false", two.Isolated(), ss[1].Isolated())
	}
	if two.Timeout.D().String() != "2s" || two.Gateway.ToolTimeout.D().String() != "100ms" {
		t.Errorf("durations: %v %v", two.Timeout, two.Gateway.ToolTimeout)
	}
	if n, ok := two.Expect.MCP.Calls.PerTool["commit_write"].Exact(); !ok || n != 1 {
		t.Errorf("mcp calls = %+v", two.Expect.MCP.Calls)
	}
	if two.Line != 1 || ss[1].Line != 14 {
		t.Errorf("lines = %d, %d; want 1, 14", two.Line, ss[1].Line)
	}
	seed := ss[2]
	if *seed.Expect.Status != 500 || len(seed.Faults.Upstream) != 1 || seed.Faults.Upstream[0].Respond.Status != 500 {
		t.Errorf("seed scenario decoded wrong: %+v", seed)
	}
}

// TestLoadBad checks every bad file's message against its golden file: the
// file, line and column, what is wrong, and the line itself.
func TestLoadBad(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bad files: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, err := Load(f)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not a *scenario.Error: %v", err, err)
			}
			if se.File != f {
				t.Errorf("File = %q, want %q", se.File, f)
			}
			if se.Line == 0 && !strings.Contains(f, "no-request") {
				t.Errorf("error has no line: %v", err)
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(f, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/harness/scenario -update)", err)
			}
			if got != string(want) {
				t.Errorf("message (-want +got):\n-%s\n+%s", want, got)
			}
		})
	}
}

func TestLoadListsEveryError(t *testing.T) {
	_, err := Load("testdata/bad", "testdata/missing.yaml")
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error %T is not an ErrorList", err)
	}
	files := map[string]bool{}
	for _, e := range list {
		files[e.File] = true
	}
	bad, _ := filepath.Glob("testdata/bad/*.yaml")
	for _, f := range append(bad, "testdata/missing.yaml") {
		if !files[f] {
			t.Errorf("no error reported for %s", f)
		}
	}
}

func TestDuplicateNames(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a.yaml", "b.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("name: same\nrequest: {endpoint: chat}\nexpect: {writes: 1}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ss, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), `duplicate scenario name "same"`) || len(ss) != 1 {
		t.Fatalf("got %d scenarios, err %v", len(ss), err)
	}
}

func TestRender(t *testing.T) {
	ss, err := Load("testdata/good/seed.yaml", "testdata/good/list.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tok := runtoken.Derive("seed", "x")
	r, err := ss[0].Render(tok)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Call commit_write once with entry alpha-" + tok + ", then reply done."; r.Requests[0].Prompt != want {
		t.Errorf("prompt = %q, want %q", r.Requests[0].Prompt, want)
	}
	if got := r.Script.Steps[0].Arguments["entry"]; got != "alpha-"+tok {
		t.Errorf("script %+v: entry %v, want alpha-%s", r.Script, got, tok)
	}
	script, err := json.Marshal(r.Script)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(script), "{{") || ss[0].Request.Prompt != "Call commit_write once with entry {{entry}}, then reply done." {
		t.Errorf("render left a template or changed the scenario")
	}
	r2, err := ss[1].Render(tok)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Requests[0].Headers["x-run"] != tok || r2.Requests[1].Prompt != "Call the commit_write tool exactly once with entry alpha-"+tok+", then reply done." {
		t.Errorf("rendered requests = %+v", r2.Requests)
	}
	if runtoken.Find([]byte(r2.Requests[1].Prompt)) != tok {
		t.Errorf("prompt does not carry the token")
	}
	if len(r2.Faults.MCP) != 3 || r2.Faults.MCP[1].Delay == nil || r2.Faults.MCP[1].Delay.D().String() != "5s" ||
		r2.Faults.MCP[2].DropAfterExecute == nil || r2.Faults.MCP[2].DropAfterExecute.After != "headers" {
		t.Errorf("rendered faults = %+v", r2.Faults)
	}
}

func FuzzLoad(f *testing.F) {
	for _, dir := range []string{"testdata/good", "testdata/bad"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, p := range files {
			b, err := os.ReadFile(p)
			if err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		ss, errs := Parse("fuzz.yaml", src)
		for _, e := range errs {
			if e.File != "fuzz.yaml" || e.Msg == "" || e.Line < 0 || e.Col < 0 {
				t.Fatalf("malformed error %+v", e)
			}
		}
		for _, s := range ss {
			if s.Name == "" || len(s.AllRequests()) == 0 {
				t.Fatalf("accepted an invalid scenario %+v", s)
			}
			if _, err := s.Render("rc0000000000"); err != nil {
				t.Fatalf("Render: %v", err)
			}
		}
	})
}

// TestEmbeddedSuiteMatchesDirectory checks that the suite compiled into the
// binary is the one in scenarios/.
func TestEmbeddedSuiteMatchesDirectory(t *testing.T) {
	fromDir, err := Load("../../../scenarios")
	if err != nil {
		t.Fatal(err)
	}
	fromFS, err := LoadFS(scenarios.FS, ".", "scenarios")
	if err != nil {
		t.Fatal(err)
	}
	var a, b []string
	for _, s := range fromDir {
		a = append(a, s.Name)
	}
	for _, s := range fromFS {
		b = append(b, s.Name)
	}
	if strings.Join(a, "|") != strings.Join(b, "|") {
		t.Errorf("embedded suite differs (-dir +embedded):\n-%q\n+%q", a, b)
	}
	if len(fromFS) > 0 && !strings.HasPrefix(fromFS[0].File, "scenarios/") {
		t.Errorf("embedded file name %q lacks the scenarios/ prefix", fromFS[0].File)
	}
}

// TestParseAnchors: an anchor defined in one scenario of a list can be used
// by a later one; each scenario gets the anchor's value.
func TestParseAnchors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []map[string]any // each scenario's request body
	}{
		{
			name: "a body reused by the next scenario",
			src: "- name: one\n  request: {endpoint: chat, body: &body {guardrails: [block-mcp]}}\n  expect: {writes: 1}\n" +
				"- name: two\n  request: {endpoint: responses, body: *body}\n  expect: {writes: 1}\n",
			want: []map[string]any{{"guardrails": []any{"block-mcp"}}, {"guardrails": []any{"block-mcp"}}},
		},
		{
			name: "a whole request and a merge into it",
			src: "- name: one\n  request: &req {endpoint: chat, body: {a: 1}}\n  expect: {writes: 1}\n" +
				"- name: two\n  request: *req\n  expect: {writes: 1}\n" +
				"- name: three\n  request: {<<: *req, stream: true}\n  expect: {writes: 1}\n",
			want: []map[string]any{{"a": uint64(1)}, {"a": uint64(1)}, {"a": uint64(1)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss, errs := Parse("a.yaml", []byte(tt.src))
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			var got []map[string]any
			for _, s := range ss {
				got = append(got, s.Request.Body)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("bodies (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMCPTransport checks the transport a scenario runs over: its
// mcp.transport, else the one its faults need, else either; stdio makes it
// isolated.
func TestMCPTransport(t *testing.T) {
	tests := []struct {
		name         string
		src          string
		want         wire.MCPTransport
		wantIsolated bool
	}{
		{"unset", "name: a\nrequest: {endpoint: chat}\nexpect: {writes: 1}\n", wire.MCPTransportAny, false},
		{"stdio", "name: a\nrequest: {endpoint: chat}\nmcp: {transport: stdio}\nexpect: {writes: 1}\n", wire.MCPTransportStdio, true},
		{"http", "name: a\nrequest: {endpoint: chat}\nmcp: {transport: http}\nexpect: {writes: 1}\n", wire.MCPTransportHTTP, false},
		{"a stdio fault implies stdio", "name: a\nrequest: {endpoint: chat}\nfaults: {mcp: [{stdio_exit: {}}]}\nexpect: {writes: 1}\n", wire.MCPTransportStdio, true},
		{"an HTTP fault implies http", "name: a\nrequest: {endpoint: chat}\nfaults: {mcp: [{is_error: {}}, {drop_after_execute: {}}]}\nexpect: {writes: 1}\n", wire.MCPTransportHTTP, true},
		{"a fault of either transport over stdio", "name: a\nrequest: {endpoint: chat}\nmcp: {transport: stdio}\nfaults: {mcp: [{is_error: {}}]}\nexpect: {writes: 1}\n", wire.MCPTransportStdio, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss, errs := Parse("t.yaml", []byte(tt.src))
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if got := ss[0].MCPTransport(); got != tt.want {
				t.Errorf("MCPTransport() = %q, want %q", got, tt.want)
			}
			if got := ss[0].Isolated(); got != tt.wantIsolated {
				t.Errorf("Isolated() = %v, want %v", got, tt.wantIsolated)
			}
		})
	}
}
