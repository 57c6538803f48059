package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostileNesting gives every YAML and JSON input a document nested far
// deeper than nesting.Max (200 KB and 1 MB of "[" or "- "): each command
// refuses it with exit 2 and the place where the limit was crossed, before
// a parser sees it (the parser took 14 GB for 200 KB). The control API's
// body is tested in fakes/control, request bodies in the fakes' packages.
func TestHostileNesting(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	serve := []string{"serve", "--upstream-addr", "127.0.0.1:0", "--mcp-addr", "127.0.0.1:0"}
	for _, size := range []int{200_000, 1_000_000} {
		flow := strings.Repeat("[", size)
		tests := []struct {
			name string
			args []string
			want string
		}{
			{name: "scenario", args: []string{"validate", file("s.yaml", "name: x\ntags: "+flow)}, want: "s.yaml:2:106: nests deeper than 100 levels"},
			{name: "scenario, compact sequences", args: []string{"validate", file("c.yaml", "name: x\ntags:\n"+strings.Repeat("- ", size/2))}, want: "c.yaml:3:199: nests deeper than 100 levels"},
			{name: "target", args: []string{"validate", "--target", file("t.yaml", "kind: proxy\nheaders: "+flow)}, want: "t.yaml:2:109: nests deeper than 100 levels"},
			{name: "baseline", args: []string{"run", "--baseline", file("b.yaml", flow)}, want: "b.yaml:1:101: nests deeper than 100 levels"},
			{name: "gateway --config", args: []string{"gateway", "--addr", "127.0.0.1:0", "--config", file("g.yaml", "router: "+flow)}, want: "g.yaml:1:108: nests deeper than 100 levels"},
			{name: "serve --script", args: append(serve, "--script", file("script.yaml", flow)), want: "script:1:101: nests deeper than 100 levels"},
			{name: "serve --upstream-fault", args: append(serve, "--upstream-fault", "{on: "+flow), want: "fault:1:105: nests deeper than 100 levels"},
			{name: "serve --mcp-fault", args: append(serve, "--mcp-fault", "{tool: "+flow), want: "mcp fault:1:107: nests deeper than 100 levels"},
			{name: "serve --cassette", args: append(serve, "--cassette", file("k.jsonl", flow)), want: "k.jsonl:1:101: nests deeper than 100 levels"},
			{name: "report merge", args: []string{"report", "merge", file("r.json", "{\"results\": "+flow)}, want: "JSON report:1:112: nests deeper than 100 levels"},
		}
		for _, tt := range tests {
			t.Run(tt.name+" "+sizeName(size), func(t *testing.T) {
				var out strings.Builder
				root := newRootCmd(strings.NewReader(""), &out, &out)
				root.SetArgs(tt.args)
				err := root.ExecuteContext(context.Background())
				if err == nil || exitCode(err) != 2 {
					t.Fatalf("error %v (exit %d), want exit 2\noutput:\n%.2000s", err, exitCode(err), out.String())
				}
				// validate prints each problem and returns their count.
				if said := err.Error() + out.String(); !strings.Contains(said, tt.want) {
					t.Errorf("said %.2000s\nwant %q", said, tt.want)
				}
			})
		}
	}
}

func sizeName(n int) string {
	if n >= 1_000_000 {
		return "1MB"
	}
	return "200KB"
}
