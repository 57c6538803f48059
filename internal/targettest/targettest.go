// Package targettest is what the tests of packages target, targetfile,
// process and run share: the test binary standing in for the processes
// targets start (Main and its helper roles), target files written to a
// temporary directory. It is for tests only; internal/procgone checks that
// processes are gone.
package targettest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/ledgerstdio"

	"github.com/replaycheck/replaycheck/fakes/gateway"
)

// HelperEnv selects a helper role when the test binary runs itself as a
// target's process.
const HelperEnv = "REPLAYCHECK_TEST_HELPER"

// Key is the master key of the helper proxy: it must never appear in a
// history, an error or captured output.
const Key = "sk-test-secret-4711"

// Getenv is the environment target files are loaded with in tests: TEST_KEY
// is Key, HELPER_SECRET a secret the never-ready helper prints.
func Getenv(k string) string {
	return map[string]string{"TEST_KEY": Key, "HELPER_SECRET": "hunter2-secret"}[k]
}

// Main lets the test binary stand in for the processes targets start: a
// proxy that reads a rendered config, proxies that fail to start, clients.
// Call it from TestMain.
func Main(m *testing.M) {
	if code, ok := ledgerstdio.Main(os.Args[1:]); ok {
		os.Exit(code)
	}
	if code, ok := gateway.ProcessMain(os.Args[1:]); ok {
		os.Exit(code)
	}
	if role := os.Getenv(HelperEnv); role != "" {
		os.Exit(helper(role, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// Self is the path of the running test binary, the command of every helper
// role.
func Self(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// Ctx is a context for one test, bounded by two minutes.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// WriteTarget writes a target file src (and extra files by name) into a new
// directory, loads it with load and returns the target and the directory.
func WriteTarget[T any](t testing.TB, src string, extra map[string]string, load func(path string) (T, error)) (T, string) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range extra {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "target.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	tg, err := load(path)
	if err != nil {
		t.Fatalf("loading the target file: %v", err)
	}
	return tg, dir
}

// Shipped returns the files glob matches but hidden ones (a name starting
// with "."): what a run leaves next to a template, such as a rendered
// config (.replaycheck-N-litellm-config.yaml) an interrupted run could not
// remove, is not a shipped file.
func Shipped(t testing.TB, glob string) []string {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(files, func(f string) bool { return strings.HasPrefix(filepath.Base(f), ".") })
}

// ProxyFile is a proxy target file that starts the test binary's proxy
// helper (the built-in gateway in mode, guarded or naive) with a rendered
// JSON config, and the config template it names.
func ProxyFile(t testing.TB, mode string) (src string, extra map[string]string) {
	return fmt.Sprintf(`
kind: proxy
name: helper-%[2]s
url: http://127.0.0.1:{{port}}
headers: {Authorization: "Bearer ${TEST_KEY}"}
num_retries: 2
start:
  command: [%[1]q, --config, "{{config}}", --port, "{{port}}"]
  config: proxy.json.tmpl
  env: {%[3]s: proxy}
  ready: {timeout: 20s}
  stop_grace: 5s
`, Self(t), mode, HelperEnv), map[string]string{"proxy.json.tmpl": `{"Upstream": "{{upstream_url}}", "MCP": "{{mcp_url}}", "Mode": "` + mode + `",
 "Key": "` + Key + `", "Fallbacks": { {{- range $f, $t := fallbacks}}"{{$f}}": "{{$t}}"{{end}} }}
`}
}

// helper runs one helper role and returns its exit code. Every role prints
// "pid=N" first, so tests can check the process is gone.
func helper(role string, args []string) int {
	fmt.Printf("pid=%d\n", os.Getpid())
	switch role {
	case "proxy":
		return helperProxy(args)
	case "exit-early":
		fmt.Fprintln(os.Stderr, "fatal: cannot parse the config")
		return 3
	case "never-ready":
		// Ignores SIGTERM, so the harness must SIGKILL; starts a child in its
		// group that must go too.
		signal.Ignore(syscall.SIGTERM)
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), HelperEnv+"=sleeper")
		child.Stdout, child.Stderr = os.Stdout, os.Stderr
		if err := child.Start(); err != nil {
			fmt.Println("child:", err)
			return 1
		}
		fmt.Println("warming up, secret", os.Getenv("HELPER_SECRET"))
		select {}
	case "sleeper":
		signal.Ignore(syscall.SIGTERM)
		select {}
	case "client":
		return helperClient()
	case "agent":
		return helperAgent()
	}
	fmt.Fprintln(os.Stderr, "unknown helper role", role)
	return 2
}

// helperProxy is a proxy process: the built-in gateway configured from the
// rendered JSON config at --config (its Bugs switched on over its Mode),
// listening on --port, with a checkpoint file at --checkpoint; --resume
// finishes the checkpoint's pending turns once it listens, --resume-first
// before it listens (as a server that recovers before it serves).
func helperProxy(args []string) int {
	var configPath, port, checkpoint string
	resume, first := false, false
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--resume":
			resume = true
			continue
		case "--resume-first":
			first = true
			continue
		case "--config":
			configPath = args[min(i+1, len(args)-1)]
		case "--port":
			port = args[min(i+1, len(args)-1)]
		case "--checkpoint":
			checkpoint = args[min(i+1, len(args)-1)]
		}
		i++
	}
	b, err := os.ReadFile(configPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading config:", err)
		return 1
	}
	var cfg struct {
		Upstream, MCP, Mode, Key string
		Bugs                     []string
		Fallbacks                map[string]string
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "parsing config:", err)
		return 1
	}
	bugs, err := gateway.ParseBugs(cfg.Mode, cfg.Bugs)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	g, err := gateway.New(gateway.Config{Upstream: cfg.Upstream, MCP: cfg.MCP, Bugs: bugs, MasterKey: cfg.Key, Fallbacks: cfg.Fallbacks, Checkpoint: checkpoint})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if first {
		turns, err := g.Resume(context.Background())
		fmt.Printf("resumed %d turn(s) before listening, err %v\n", len(turns), err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("proxy listening on %s with key %s\n", ln.Addr(), cfg.Key)
	logged := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Printf("request %s pid=%d\n", r.URL.Path, os.Getpid())
		g.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: logged, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	if resume {
		turns, err := g.Resume(context.Background())
		fmt.Printf("resumed %d turn(s), err %v\n", len(turns), err)
	}
	<-stop
	fmt.Println("proxy stopping")
	srv.Close()
	g.Close()
	return 0
}

// helperClient is a client: it echoes its environment, and acts on words
// in its prompt: "hang" (with a child in its group), "exit=N".
func helperClient() int {
	for _, k := range []string{"OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "REPLAYCHECK_MCP_URL", "REPLAYCHECK_TOKEN", "CLIENT_SECRET", "CLIENT_MODE"} {
		fmt.Printf("%s=%s\n", k, os.Getenv(k))
	}
	prompt := os.Getenv("REPLAYCHECK_PROMPT")
	fmt.Printf("prompt=%s\n", prompt)
	if strings.Contains(prompt, "hang") {
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), HelperEnv+"=sleeper")
		child.Stdout = os.Stdout
		if err := child.Start(); err == nil {
			fmt.Printf("child pid=%d\n", child.Process.Pid)
		}
		fmt.Fprintln(os.Stderr, "waiting for a model that never answers")
		select {}
	}
	if m := regexp.MustCompile(`exit=(\d+)`).FindStringSubmatch(prompt); m != nil {
		n, _ := strconv.Atoi(m[1])
		fmt.Fprintln(os.Stderr, "failing as asked")
		return n
	}
	fmt.Println("done")
	return 0
}

// helperAgent is an agent as real ones are: its own prompt and tool name,
// no run token anywhere. It asks the model at OPENAI_BASE_URL (chat, with
// the function tool mcp__ledger__commit_write), runs the call the model makes
// on the MCP server at AGENT_MCP_URL (read_ledger first, as agents look
// around), sends the follow-up, and prints the final text. It leaves a file
// in AGENT_HOME and fails if one is there already (a scratch dir reused).
func helperAgent() int {
	if home := os.Getenv("AGENT_HOME"); home != "" {
		marker := filepath.Join(home, "agent-was-here")
		if _, err := os.Stat(marker); err == nil {
			fmt.Fprintln(os.Stderr, "stale home: another run left", marker)
			return 4
		}
		if err := os.WriteFile(marker, nil, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 4
		}
		fmt.Printf("home=%s\n", home)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "helper-agent", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: os.Getenv("AGENT_MCP_URL")}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcp:", err)
		return 1
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_ledger"}); err != nil {
		fmt.Fprintln(os.Stderr, "read_ledger:", err)
		return 1
	}
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "mcp__ledger__commit_write",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"entry": map[string]any{"type": "string"}}}}}}
	messages := []any{map[string]any{"role": "system", "content": "You are a bookkeeping agent."},
		map[string]any{"role": "user", "content": "Book today's sale."}}
	chat := func() (map[string]any, error) {
		b, _ := json.Marshal(map[string]any{"model": "agent-model", "messages": messages, "tools": tools})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, os.Getenv("OPENAI_BASE_URL")+"/chat/completions", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+os.Getenv("OPENAI_API_KEY"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var out struct {
			Choices []struct {
				Message map[string]any `json:"message"`
			} `json:"choices"`
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("model answered HTTP %d", resp.StatusCode)
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) == 0 {
			return nil, fmt.Errorf("model answer: %v", err)
		}
		return out.Choices[0].Message, nil
	}
	msg, err := chat()
	if err != nil {
		fmt.Println(`{"error":"` + err.Error() + `"}`)
		return 1
	}
	calls, _ := msg["tool_calls"].([]any)
	messages = append(messages, msg)
	for _, raw := range calls {
		call := raw.(map[string]any)
		fn := call["function"].(map[string]any)
		var args map[string]any
		_ = json.Unmarshal([]byte(fn["arguments"].(string)), &args)
		name := strings.TrimPrefix(fn["name"].(string), "mcp__ledger__")
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			fmt.Fprintln(os.Stderr, "tool:", err)
			return 1
		}
		text := ""
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				text = tc.Text
			}
		}
		messages = append(messages, map[string]any{"role": "tool", "tool_call_id": call["id"], "content": text})
	}
	if msg, err = chat(); err != nil {
		fmt.Println(`{"error":"` + err.Error() + `"}`)
		return 1
	}
	fmt.Println(msg["content"])
	return 0
}

// PidsIn returns the pids printed as "pid=N" in text.
func PidsIn(text string) []int {
	var out []int
	for _, m := range regexp.MustCompile(`pid=(\d+)`).FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[1])
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

var (
	unshareOnce sync.Once
	unshareErr  error
)

// InLoopbackNamespace returns argv wrapped to run inside `unshare -rn` in a
// network namespace of its own with only loopback up (see
// LoopbackNamespace), so what it runs can talk to what runs beside it in
// that namespace and to nothing else.
func InLoopbackNamespace(argv ...string) []string {
	return append([]string{"unshare", "-rn", "sh", "-c", `ip link set lo up && exec "$0" "$@"`}, argv...)
}

// LoopbackNamespace reports why `unshare -rn` cannot make a network
// namespace with only loopback up here (no unprivileged user namespaces,
// no unshare or ip), or nil when it can; the tests that run real programs
// offline run them in one. It tries once per test binary.
func LoopbackNamespace() error {
	unshareOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "unshare", "-rn", "sh", "-c", "ip link set lo up").CombinedOutput()
		if err != nil {
			unshareErr = fmt.Errorf("unshare -rn with ip link set lo up: %v: %s", err, bytes.TrimSpace(out))
		}
	})
	return unshareErr
}
