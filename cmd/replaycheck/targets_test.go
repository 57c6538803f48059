package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/fakes/gateway"
)

// TestRunTargetFiles covers --target FILE through the command: bad files
// exit 2 naming file:line:col, a proxy that cannot start exits 3 naming the
// cause, client-only scenarios need a client target.
func TestRunTargetFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("bad.yaml", "kind: proxy\nurll: http://127.0.0.1:4000\n")
	kind := write("kind.yaml", "kind: lambda\n")
	geminiScenario := write("gemini.yaml", "name: gemini app request\nrequest: {endpoint: gemini}\nexpect: {writes: 1}\n")
	missing := write("missing.yaml", "kind: proxy\nurl: http://127.0.0.1:{{port}}\nstart: {command: [/nonexistent/litellm, --port, \"{{port}}\"]}\n")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{"unknown field", []string{"run", "../../scenarios/seed", "--target", bad}, exitBadUsage, []string{"bad.yaml:2:1: unknown field \"urll\""}},
		{"unknown kind", []string{"run", "../../scenarios/seed", "--target", kind}, exitBadUsage, []string{"kind.yaml:1:7: unknown target kind \"lambda\""}},
		{"no such file", []string{"run", "../../scenarios/seed", "--target", filepath.Join(dir, "nope.yaml")}, exitBadUsage, []string{"nope.yaml: no such file or directory"}},
		{"same name twice", []string{"run", "../../scenarios/seed", "--target", missing, "--target", missing}, exitBadUsage, []string{`target name "missing" is also the name of --target`}},
		{"start command not found", []string{"run", "../../scenarios/seed", "--target", missing}, exitCannotRun, []string{"starting target missing", `command "/nonexistent/litellm" not found`}},
		{"client scenarios on builtin", []string{"run", "../../scenarios/clients"}, exitBadUsage, []string{"no selected scenario applies to the targets"}},
		{"gemini on builtin", []string{"run", geminiScenario}, exitBadUsage, []string{"no selected scenario applies to the targets", "builtin:guarded does not serve gemini"}},
		{"validate bad target files", []string{"validate", "--target", "../../targets/agent.yaml", "--target", bad, "--target", kind}, exitBadUsage, []string{"bad.yaml:2:1:", "kind.yaml:1:7:", "2 bad target files"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := execute(t, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.wantCode, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
}

// A scenario sending an endpoint the built-in gateway does not serve is
// skipped there, and the run says why; the others run.
func TestRunSkipsUnservedEndpoint(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"gemini.yaml": "name: gemini app request\nrequest: {endpoint: gemini}\nexpect: {writes: 1}\n",
		"chat.yaml":   "name: chat app request\nrequest: {endpoint: chat}\nexpect: {writes: 1}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := execute(t, "run", dir)
	if code != exitOK {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitOK, out, errOut)
	}
	want := "skipping 1 scenario run: scenarios with expect.client run on client targets only, and client targets run only those; builtin:guarded does not serve gemini"
	if !strings.Contains(out+errOut, want) || !strings.Contains(out+errOut, "chat app request") || strings.Contains(out+errOut, "[1/2]") {
		t.Errorf("output lacks %q, or ran the gemini scenario:\n%s%s", want, out, errOut)
	}
}

// A scenario over an MCP transport the target does not speak (stdio on a
// client given only the HTTP ledger) is skipped, and the run names it with
// the reason.
func TestRunSkipsUnspokenTransport(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"exit.yaml":   "name: stdio exit\nfaults: {mcp: [{stdio_exit: {}}]}\nexpect: {client: {}, writes: 1}\n",
		"hang.yaml":   "name: stdio hang\nmcp: {transport: stdio}\nexpect: {client: {}, writes: 1}\n",
		"target.yaml": "kind: client\nname: http-client\ncommand: [sh, -c, 'echo {{mcp_url}}']\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := execute(t, "run", filepath.Join(dir, "exit.yaml"), filepath.Join(dir, "hang.yaml"), "--target", filepath.Join(dir, "target.yaml"))
	want := `http-client does not speak MCP over stdio: "stdio exit", "stdio hang" (the scenario's mcp.transport`
	if code != exitBadUsage || !strings.Contains(out+errOut, want) {
		t.Errorf("exit %d, want %d and output with %q:\n%s%s", code, exitBadUsage, want, out, errOut)
	}
}

// A client scenario whose faults act only on a dialect the client's file
// does not declare is skipped before it runs, and the run names it; one
// with a fault on a declared dialect, or on any, runs.
func TestRunSkipsUndeclaredDialect(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"gemini.yaml": "name: gemini cut\nfaults: {upstream: [{endpoint: gemini, stream: true, drop: {after: headers}}]}\nexpect: {client: {}, writes: 1}\n",
		"chat.yaml":   "name: chat 500\nfaults: {upstream: [{endpoint: chat, respond: {status: 500}}]}\nexpect: {client: {}}\n",
		"target.yaml": "kind: client\nname: chat-client\ndialects: [chat]\ncommand: [sh, -c, 'exit 0']\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, out, errOut := execute(t, "run", filepath.Join(dir, "gemini.yaml"), filepath.Join(dir, "chat.yaml"), "--target", filepath.Join(dir, "target.yaml"))
	want := `chat-client calls only chat (its file's dialects), and these scenarios' faults act on gemini: "gemini cut"`
	if !strings.Contains(out+errOut, want) || !strings.Contains(out+errOut, "[1/1]") || !strings.Contains(out+errOut, "chat 500") {
		t.Errorf("output lacks %q, or did not run the chat scenario alone:\n%s%s", want, out, errOut)
	}
}

func TestSchemaTarget(t *testing.T) {
	code, out, errOut := execute(t, "schema", "--target")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var s struct {
		Title string         `json:"title"`
		Defs  map[string]any `json:"$defs"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil || s.Title != "replaycheck target file" || s.Defs["ProxyFile"] == nil || s.Defs["ClientFile"] == nil {
		t.Errorf("schema --target: %v %q %v", err, s.Title, len(s.Defs))
	}
}

// TestProxyHeadersNeverShown runs the seed on a proxy target (the built-in
// gateway, requiring a master key, on fixed fake addresses) whose
// Authorization header comes from the environment: the key is sent (the
// suite passes) and appears in no output, verbose or file report.
func TestProxyHeadersNeverShown(t *testing.T) {
	const secret = "sk-cmd-test-secret-9931"
	t.Setenv("RC_TEST_MASTER_KEY", secret)
	up, mcp := freeAddr(t), freeAddr(t)
	g, err := gateway.New(gateway.Config{Upstream: "http://" + up + "/v1", MCP: "http://" + mcp + "/mcp", MasterKey: secret})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(func() { srv.Close(); g.Close() })
	dir := t.TempDir()
	target := filepath.Join(dir, "keyed.yaml")
	src := fmt.Sprintf("kind: proxy\nurl: %s\nheaders: {Authorization: \"Bearer ${RC_TEST_MASTER_KEY}\"}\nfakes: {upstream_addr: %q, mcp_addr: %q}\n", srv.URL, up, mcp)
	if err := os.WriteFile(target, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	files := []string{filepath.Join(dir, "j.xml"), filepath.Join(dir, "r.json"), filepath.Join(dir, "s.md")}
	code, out, errOut := execute(t, "run", "../../scenarios/seed", "--target", target, "-v",
		"--junit", files[0], "--json", files[1], "--markdown", files[2])
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	all := out + errOut
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all += string(b)
	}
	if strings.Contains(all, secret) {
		t.Errorf("the header value appears in the output or reports")
	}
	if !strings.Contains(out, "10 scenarios on keyed: 10 pass") {
		t.Errorf("output:\n%s", out)
	}
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestValidateTargets(t *testing.T) {
	code, out, errOut := execute(t, "validate", "--target", "../../targets/gateway-process.yaml", "--target", "../../targets/agent-naive.yaml")
	if code != exitOK || !strings.Contains(out, "ok: target gateway-process-guarded") || !strings.Contains(out, "ok: target agent-naive") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
}
