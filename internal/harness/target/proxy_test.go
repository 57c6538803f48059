package target_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/process"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/harness/targetfile"
	"github.com/replaycheck/replaycheck/internal/targettest"
)

// TestProxyStartAndStop starts the helper proxy directly: the rendered
// config holds the fakes' URLs, the output is captured with the key masked,
// and Close stops it gracefully (SIGTERM) and removes the config.
func TestProxyStartAndStop(t *testing.T) {
	tg, _ := helperProxyTarget(t, "guarded")
	fakes := testFakes(t)
	inst, err := tg.Start(ctxFor(t), fakes, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	configPath := target.ConfigPath(inst)
	cfg, err := os.ReadFile(configPath)
	if err != nil || !strings.Contains(string(cfg), `"Upstream": "`+fakes.Upstream+`"`) || !strings.Contains(string(cfg), `"MCP": "`+fakes.MCP+`"`) {
		t.Errorf("rendered config (%v):\n%s", err, cfg)
	}
	x := inst.Send(ctxFor(t), target.Request{Request: scenario.Request{Endpoint: scenario.Chat, Prompt: "Call commit_write once with entry alpha-rc0000000001, then reply done."}, Token: "rc0000000001"})
	if x.Status != 200 {
		t.Errorf("a request through the proxy: %+v", x)
	}
	pid := pidOf(t, inst.Output())
	if err := inst.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	assertGone(t, []int{pid})
	if _, err := os.Stat(configPath); !os.IsNotExist(err) {
		t.Errorf("rendered config still there: %v", err)
	}
	out := strings.Join(inst.Output().Lines(), "\n")
	if !strings.Contains(out, "with key ***") || strings.Contains(out, testKey) || !strings.Contains(out, "proxy stopping") {
		t.Errorf("captured output: key not masked or no graceful stop:\n%s", out)
	}
}

// TestProxyConfigPathFromAnotherDirectory loads a target file by a relative
// path from another directory (as `replaycheck run --target
// targets/x.yaml` from the repository root does): {{config}} must name the
// rendered config absolutely, since the proxy runs in the target file's
// directory.
func TestProxyConfigPathFromAnotherDirectory(t *testing.T) {
	_, dir := helperProxyTarget(t, "guarded")
	t.Chdir(filepath.Dir(dir))
	tg, err := targetfile.Load(filepath.Join(filepath.Base(dir), "target.yaml"), targetfile.Options{Getenv: testEnv, Replaycheck: "/bin/false"})
	if err != nil {
		t.Fatal(err)
	}
	fakes := testFakes(t)
	inst, err := tg.Start(ctxFor(t), fakes, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer inst.Close()
	if p := target.ConfigPath(inst); !filepath.IsAbs(p) {
		t.Errorf("{{config}} is %q, not an absolute path", p)
	}
}

// TestProxyConfigDir starts the helper proxy with a rendered config: by
// default it is written into a temporary directory of the start's own and
// nothing appears next to the target file; with start.config_dir it is
// written there (next to the template, for files the config names by a
// relative path). Close removes both.
func TestProxyConfigDir(t *testing.T) {
	tests := []struct {
		name      string
		configDir string // the start.config_dir line, "" for none
		nextTo    bool   // rendered in the target file's directory
	}{
		{name: "default: a temporary directory", nextTo: false},
		{name: "config_dir next to the template", configDir: ".", nextTo: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, extra := targettest.ProxyFile(t, "guarded")
			if tt.configDir != "" {
				src = strings.Replace(src, "  config: proxy.json.tmpl\n", "  config: proxy.json.tmpl\n  config_dir: "+tt.configDir+"\n", 1)
			}
			tg, dir := targettest.WriteTarget(t, src, extra, func(path string) (target.Target, error) {
				return targetfile.Load(path, targetfile.Options{Getenv: testEnv, Replaycheck: "/bin/false"})
			})
			before := dirNames(t, dir)
			inst, err := tg.Start(ctxFor(t), testFakes(t), nil)
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			configPath, tempDir := target.ConfigPath(inst), target.ConfigTempDir(inst)
			if got := filepath.Dir(configPath) == dir; got != tt.nextTo {
				t.Errorf("rendered config %s: in the target file's directory %s is %v, want %v", configPath, dir, got, tt.nextTo)
			}
			if !tt.nextTo {
				if d := cmp.Diff(before, dirNames(t, dir)); d != "" {
					t.Errorf("the start wrote next to the target file (-before +after):\n%s", d)
				}
			}
			if err := inst.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if _, err := os.Stat(configPath); !os.IsNotExist(err) {
				t.Errorf("rendered config still there: %v", err)
			}
			if tempDir != "" {
				if _, err := os.Stat(tempDir); !os.IsNotExist(err) {
					t.Errorf("the config's temporary directory is still there: %v", err)
				}
			}
			if d := cmp.Diff(before, dirNames(t, dir)); d != "" {
				t.Errorf("the target file's directory changed (-before +after):\n%s", d)
			}
		})
	}
}

// TestProxyPortTakenBeforeItListens: the port the harness picks for a proxy
// is free only until someone binds it, and here a foreign HTTP server holds
// it before the proxy starts (as a parallel run's fake, or another program,
// may take it between the pick and the proxy's listen). Its answer must not
// pass for the proxy's: the start goes again on another port, so the guarded
// helper serves this harness, and the never-ready helper is never ready.
func TestProxyPortTakenBeforeItListens(t *testing.T) {
	never, _ := targettest.WriteTarget(t, fmt.Sprintf("kind: proxy\nname: never\nurl: http://127.0.0.1:{{port}}\nstart: {command: [%q], env: {%s: never-ready}, ready: {timeout: 1s}, stop_grace: 100ms}\n",
		targettest.Self(t), targettest.HelperEnv), nil, func(path string) (target.Target, error) {
		return targetfile.Load(path, targetfile.Options{Getenv: testEnv, Replaycheck: "/bin/false"})
	})
	guarded, _ := helperProxyTarget(t, "guarded")
	tests := []struct {
		name    string
		tg      target.Target
		wantErr string // "" for a start that succeeds
	}{
		{name: "guarded", tg: guarded},
		{name: "never ready", tg: never, wantErr: "gave no HTTP answer within 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "a foreign server", http.StatusTeapot)
			}))
			defer foreign.Close()
			_, taken, _ := net.SplitHostPort(foreign.Listener.Addr().String())
			var picks atomic.Int32
			defer target.SetPickPort(func() (string, error) {
				if picks.Add(1) == 1 {
					return taken, nil
				}
				return target.FreePort()
			})()

			inst, err := tt.tg.Start(ctxFor(t), testFakes(t), nil)
			if tt.wantErr != "" {
				if err == nil {
					inst.Close()
					t.Fatalf("Start: no error, want %q", tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("Start: %v\nwant it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			defer inst.Close()
			if base, _ := inst.(target.Reachable).BaseURL(); strings.HasSuffix(base, ":"+taken) {
				t.Errorf("the proxy's URL %s is the foreign server's", base)
			}
			x := inst.Send(ctxFor(t), target.Request{Request: scenario.Request{Endpoint: scenario.Chat, Prompt: "Call commit_write once with entry alpha-rc0000000002, then reply done."}, Token: "rc0000000002"})
			if x.Status != http.StatusOK {
				t.Errorf("a request through the proxy: %+v", x)
			}
			if picks.Load() != 2 {
				t.Errorf("%d ports picked, want 2", picks.Load())
			}
		})
	}
}

// dirNames lists the names in dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// pidOf is the pid the helper process printed first ("pid=N", see
// targettest), the leader of its process group.
func pidOf(t *testing.T, out *process.Output) int {
	t.Helper()
	for _, l := range out.Lines() {
		if n, ok := strings.CutPrefix(l, "pid="); ok {
			pid, err := strconv.Atoi(n)
			if err != nil {
				t.Fatalf("the helper printed %q", l)
			}
			return pid
		}
	}
	t.Fatalf("the helper printed no pid: %q", out.Lines())
	return 0
}
