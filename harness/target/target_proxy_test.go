package target

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/harness/scenario"
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
	pi := inst.(*proxyInstance)
	cfg, err := os.ReadFile(pi.configPath)
	if err != nil || !strings.Contains(string(cfg), `"Upstream": "`+fakes.Upstream+`"`) || !strings.Contains(string(cfg), `"MCP": "`+fakes.MCP+`"`) {
		t.Errorf("rendered config (%v):\n%s", err, cfg)
	}
	x := inst.Send(ctxFor(t), Request{Request: scenario.Request{Endpoint: scenario.Chat, Prompt: "Call commit_write once with entry alpha-rc0000000001, then reply done."}, Token: "rc0000000001"})
	if x.Status != 200 {
		t.Errorf("a request through the proxy: %+v", x)
	}
	pid := pi.proc.pgid
	if err := inst.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	assertGone(t, []int{pid})
	if _, err := os.Stat(pi.configPath); !os.IsNotExist(err) {
		t.Errorf("rendered config still there: %v", err)
	}
	out := strings.Join(pi.out.Lines(), "\n")
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
	tg, err := LoadTargetFile(filepath.Join(filepath.Base(dir), "target.yaml"), TargetFileOptions{Getenv: testEnv, Replaycheck: "/bin/false"})
	if err != nil {
		t.Fatal(err)
	}
	fakes := testFakes(t)
	inst, err := tg.Start(ctxFor(t), fakes, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer inst.Close()
	if p := inst.(*proxyInstance).configPath; !filepath.IsAbs(p) {
		t.Errorf("{{config}} is %q, not an absolute path", p)
	}
}
