package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/gateway"
)

// helperEnv selects a helper role when the test binary runs itself as a
// target's process.
const helperEnv = "REPLAYCHECK_TEST_HELPER"

// TestMain lets the test binary stand in for the processes targets start: a
// proxy that reads a rendered config, proxies that fail to start, clients.
func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		os.Exit(helper(role, os.Args[1:]))
	}
	os.Exit(m.Run())
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
		child.Env = append(os.Environ(), helperEnv+"=sleeper")
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
// rendered JSON config at --config, listening on --port.
func helperProxy(args []string) int {
	var configPath, port string
	for i := 0; i+1 < len(args); i += 2 {
		switch args[i] {
		case "--config":
			configPath = args[i+1]
		case "--port":
			port = args[i+1]
		}
	}
	b, err := os.ReadFile(configPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading config:", err)
		return 1
	}
	var cfg struct {
		Upstream, MCP, Mode, Key string
		Fallbacks                map[string]string
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "parsing config:", err)
		return 1
	}
	bugs, err := gateway.ParseBugs(cfg.Mode, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	g, err := gateway.New(gateway.Config{Upstream: cfg.Upstream, MCP: cfg.MCP, Bugs: bugs, MasterKey: cfg.Key, Fallbacks: cfg.Fallbacks})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
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
		child.Env = append(os.Environ(), helperEnv+"=sleeper")
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

// pidsIn returns the pids printed as "pid=N" in text.
func pidsIn(text string) []int {
	var out []int
	for _, m := range regexp.MustCompile(`pid=(\d+)`).FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[1])
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// assertGone fails t for every pid that is still a live process (a zombie
// waiting for a parent that is not ours does not count).
func assertGone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 {
			if f := strings.Fields(string(b[i+1:])); len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
				continue
			}
		}
		t.Errorf("process %d is still running: %s", pid, b)
	}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
