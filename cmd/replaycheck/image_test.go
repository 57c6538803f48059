//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/fakes/control"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// containerLimit is the container's limit of open files and of processes.
const containerLimit = 4096

// rlimitNPROC is RLIMIT_NPROC on Linux, which package syscall does not name.
const rlimitNPROC = 6

// podman runs podman for the image test with the flags this kind of machine
// needs, and says why each is there.
type podman struct {
	t    *testing.T
	bin  string
	base []string // global flags, before the command
	run  []string // flags of podman run
}

// newPodman finds podman and the flags it needs here, or skips t saying why
// it cannot run containers.
//   - --runtime runc, when runc is installed: podman's default runtime,
//     crun, refuses every container on a machine whose cgroups are a v1/v2
//     hybrid ("cgroups in hybrid mode not supported"), as this project's
//     machines are; runc runs there and everywhere else.
//   - --ulimit nofile and nproc at 4096 (or the test's own limit, when
//     lower): podman asks for 1048576 open files by default, and a machine
//     that does not let root raise a limit (a sandbox without
//     CAP_SYS_RESOURCE) refuses the container ("setrlimit RLIMIT_NOFILE:
//     Operation not permitted"); serve needs far fewer.
func newPodman(t *testing.T) *podman {
	bin, err := exec.LookPath("podman")
	if err != nil {
		t.Skip("podman is not installed (make podman installs Debian's): skipping the container image test")
	}
	p := &podman{t: t, bin: bin}
	if _, err := exec.LookPath("runc"); err == nil {
		p.base = append(p.base, "--runtime", "runc")
	}
	for _, l := range []struct {
		name     string
		resource int
	}{{"nofile", syscall.RLIMIT_NOFILE}, {"nproc", rlimitNPROC}} {
		var lim syscall.Rlimit
		n := uint64(containerLimit)
		if err := syscall.Getrlimit(l.resource, &lim); err == nil && lim.Cur < n {
			n = lim.Cur
		}
		p.run = append(p.run, "--ulimit", fmt.Sprintf("%s=%d:%d", l.name, n, n))
	}
	if out, err := p.cmd("info").CombinedOutput(); err != nil {
		t.Skipf("podman cannot run here (podman info: %v): skipping the container image test\n%s", err, lastLines(out, 5))
	}
	return p
}

// cmd is podman with the global flags and args, bounded by two minutes.
func (p *podman) cmd(args ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	p.t.Cleanup(cancel)
	return exec.CommandContext(ctx, p.bin, append(slices.Clone(p.base), args...)...)
}

// output runs podman and returns its standard output, failing the test with
// its standard error.
func (p *podman) output(args ...string) string {
	p.t.Helper()
	var stderr bytes.Buffer
	c := p.cmd(args...)
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		p.t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestContainerImage builds the Dockerfile's image offline (a static binary
// built here, copied into scratch: nothing is pulled), checks its
// configuration (replaycheck serve on 0.0.0.0:8765 and 8766, no shell), runs
// it with podman, arms a fault through the control API from the host, sends
// a model request to the container's model API and sees the fault fire in
// /counts.
//
// The container shares the host's network (--network host) and serves on
// loopback port 0, its addresses read from its banner: the control API
// answers loopback clients only until a control key opens it to others.
// TestContainerImage builds the image offline, checks its shape, runs its
// default command (serve on 0.0.0.0 in the container) with the ports
// published on the host's loopback and a control key, as the README's
// docker run does, and arms a fault from the host that fires.
func TestContainerImage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the container image test")
	}
	p := newPodman(t)

	// The build context holds the binary only, where goreleaser's
	// dockers_v2 puts it: $TARGETPLATFORM/replaycheck.
	platform := "linux/" + runtime.GOARCH
	ctxDir := t.TempDir()
	bin, err := os.ReadFile(releaseBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ctxDir, platform), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ctxDir, platform, "replaycheck"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	image := fmt.Sprintf("localhost/replaycheck-test:%d", os.Getpid())
	dockerfile, err := filepath.Abs("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	p.output("build", "--pull=never", "--platform", platform, "--build-arg", "TARGETPLATFORM="+platform, "-f", dockerfile, "-t", image, ctxDir)
	t.Cleanup(func() { _ = p.cmd("rmi", "-f", image).Run() })

	var cfg []struct {
		Config struct {
			Entrypoint []string
			Cmd        []string
			User       string
		}
		RootFS struct{ Layers []string }
	}
	if err := json.Unmarshal([]byte(p.output("image", "inspect", image)), &cfg); err != nil || len(cfg) != 1 {
		t.Fatalf("podman image inspect: %v (%d images)", err, len(cfg))
	}
	c := cfg[0].Config
	wantCmd := []string{"serve", "--upstream-addr", "0.0.0.0:8765", "--mcp-addr", "0.0.0.0:8766"}
	if !slices.Equal(c.Entrypoint, []string{"/replaycheck"}) || !slices.Equal(c.Cmd, wantCmd) || c.User == "" || c.User == "0" || c.User == "root" {
		t.Errorf("image runs %q %q as user %q, want /replaycheck %q as a user not root", c.Entrypoint, c.Cmd, c.User, wantCmd)
	}
	if n := len(cfg[0].RootFS.Layers); n != 1 {
		t.Errorf("image has %d layers, want 1 (the binary on scratch)", n)
	}
	if out, err := p.cmd(append(append([]string{"run", "--rm"}, p.run...), "--entrypoint", "/bin/sh", image, "-c", "true")...).CombinedOutput(); err == nil {
		t.Errorf("the image has a shell (/bin/sh -c true ran): %s", out)
	} else if strings.Contains(string(out), "OCI") && !strings.Contains(string(out), "/bin/sh") {
		t.Skipf("podman cannot start containers here: skipping the container image test\n%s", lastLines(out, 5))
	}

	const key = "rc-image-test-key"
	args := append([]string{"run", "-d", "-p", "127.0.0.1::8765", "-p", "127.0.0.1::8766", "-e", "REPLAYCHECK_CONTROL_KEY=" + key}, p.run...)
	id := strings.TrimSpace(p.output(append(args, image)...))
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := p.cmd("logs", id).CombinedOutput()
			t.Logf("container output:\n%s", out)
		}
		_ = p.cmd("rm", "-f", "-t", "0", id).Run()
	})

	waitForBanner(t, p, id)
	upstreamURL := "http://" + strings.TrimSpace(p.output("port", id, "8765/tcp")) + "/v1"
	ctl := strings.TrimSuffix(upstreamURL, "/v1") + control.Prefix
	waitHealthy(t, ctl+"health", key)

	// Arm the first initial request to fail with 503, from the host.
	body := `{"upstream": [{"on": "initial", "respond": {"status": 503}, "times": "once"}]}`
	if status, got := controlCall(t, "POST", ctl+"faults", key, body); status != http.StatusCreated {
		t.Fatalf("POST faults: %d %s", status, got)
	}
	chat := `{"model": "gpt-4o", "messages": [{"role": "user", "content": "Call commit_write once with entry alpha-rc0123456789, then reply done."}],
		"tools": [{"type": "function", "function": {"name": "commit_write", "parameters": {"type": "object"}}}]}`
	res, err := http.Post(upstreamURL+"/chat/completions", "application/json", strings.NewReader(chat))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("the model request got %d, want the armed 503", res.StatusCode)
	}

	status, got := controlCall(t, "GET", ctl+"counts", key, "")
	if status != http.StatusOK {
		t.Fatalf("GET counts: %d %s", status, got)
	}
	var counts control.Counts
	if err := json.Unmarshal([]byte(got), &counts); err != nil {
		t.Fatalf("GET counts: %v\n%s", err, got)
	}
	fired := wire.CountKey{Kind: wire.KindInitial, Outcome: wire.Outcome("injected_503")}
	if n := counts.Total.Upstream.Outcomes[fired]; n != 1 || counts.Total.Upstream.Initial != 1 {
		t.Errorf("counts: %d initial, %d %s, want 1 and 1\n%s", counts.Total.Upstream.Initial, n, fired, got)
	}
	// Without the key the control API refuses.
	if status, _ := controlCall(t, "GET", ctl+"counts", "", ""); status != http.StatusUnauthorized {
		t.Errorf("GET counts without the key: %d, want 401", status)
	}
}

// bannerURL finds the model API's URL in serve's banner.
var bannerURL = regexp.MustCompile(`(?m)^  upstream:\s+(http://\S+/v1)\b`)

// waitForBanner waits, for at most a minute, until the container's output
// shows serve's banner naming the model API's address.
func waitForBanner(t *testing.T, p *podman, id string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for tick := time.NewTicker(50 * time.Millisecond); ; <-tick.C {
		out, err := p.cmd("logs", id).CombinedOutput()
		if bannerURL.Match(out) {
			tick.Stop()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the container printed no serve banner within a minute (%v):\n%s", err, out)
		}
	}
}

// waitHealthy polls the control API's health route until it answers 200,
// for at most thirty seconds.
func waitHealthy(t *testing.T, url, key string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for tick := time.NewTicker(50 * time.Millisecond); ; <-tick.C {
		status, body := controlCall(t, "GET", url, key, "")
		if status == http.StatusOK {
			tick.Stop()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %d %s after thirty seconds", url, status, body)
		}
	}
}

// controlCall sends one control API request with the bearer key (none when
// key is "") and returns the status and body; 0 when it could not be sent.
func controlCall(t *testing.T, method, url, key, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(res.Body)
	return res.StatusCode, b.String()
}
