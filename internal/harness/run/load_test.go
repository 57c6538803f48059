package run

import (
	"context"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
)

// busyLoops is how many spinning processes TestVerdictsUnderLoad starts:
// four per core of this project's 2-core CI machine and then some.
const busyLoops = 8

// TestVerdictsUnderLoad: the suite gives the same verdict per scenario on a
// saturated CPU as without load, on the guarded and the naive gateway. A
// timing rule must judge what the target decided, not how fast the machine
// ran. The load is real processes spinning beside the test, killed when it
// ends; the test is skipped in -short mode.
func TestVerdictsUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts busy processes; skipped in -short mode")
	}
	ss := loadSuite(t)
	for _, name := range []string{"builtin:guarded", "builtin:naive"} {
		idle := runSuite(t, ss, name, 4)
		stop := saturate(t)
		loaded := runSuite(t, ss, name, 16)
		stop()
		for scen, r := range idle {
			if !sameUnderLoad(r.Verdict, loaded[scen]) {
				t.Errorf("%s on %s: %s idle, %s under load%s", scen, name, r.Verdict, loaded[scen].Verdict, describe(loaded[scen]))
			}
		}
	}
}

// sameUnderLoad reports whether loaded, a result under load, gives the
// verdict idle, the result without load, gave: the same verdict, or, where
// idle passed, unknown because the harness was starved (a check failed
// while the harness ran late, see rules.Check, and was turned unknown; the
// rules that then had nothing to judge, a call that never reached the
// ledger, say unknown too). Never fail where idle passed.
func sameUnderLoad(idle rules.Status, loaded rules.Result) bool {
	if loaded.Verdict == idle {
		return true
	}
	if idle != rules.Pass || loaded.Verdict != rules.Unknown {
		return false
	}
	return slices.ContainsFunc(loaded.Verdicts, func(v rules.Verdict) bool { return v.Starved })
}

// stdioLoadScenario is the stdio scenario whose verdict rests most on the
// harness keeping up: the gateway's 200ms tool timeout must find the call
// run by the ledger-stdio process before it expires.
const stdioLoadScenario = "stdio server hangs after executing"

// stdioLoadRepeat and stdioLoadParallel are how TestStdioVerdictsUnderLoad
// crowds it: every run at once, as `run --tag stdio --repeat 50 --parallel
// 256` did when stdio runs started regardless of the CPU (16 of its 50 runs
// failed, writes 0). Admitted by CPU headroom beside busy processes, the
// runs go about one at a time: a few make the point.
const (
	stdioLoadRepeat   = 12
	stdioLoadParallel = 64
)

// TestStdioVerdictsUnderLoad: every run of stdioLoadScenario, repeated and
// started at once beside busy processes, passes on the guarded gateway as
// it does alone on an idle machine, or, where the harness was starved while
// the tool timeout ran, cannot be judged and says so — never fails. Each
// run spawns ledger-stdio processes while the target's clocks run, so the
// runs must not starve each other of the CPU; skipped in -short mode.
func TestStdioVerdictsUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts busy processes; skipped in -short mode")
	}
	ss := slices.DeleteFunc(loadSuite(t), func(s *scenario.Scenario) bool { return s.Name != stdioLoadScenario })
	if len(ss) != 1 {
		t.Fatalf("the suite has %d scenarios called %q; want 1", len(ss), stdioLoadScenario)
	}
	tg, err := target.ParseTarget("builtin:guarded")
	if err != nil {
		t.Fatal(err)
	}
	stop := saturate(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	hs, err := Run(ctx, ss, Options{Targets: []target.Target{tg}, Repeat: stdioLoadRepeat, Parallel: stdioLoadParallel, Seed: "load"})
	cancel()
	stop()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	starved := 0
	for _, h := range hs {
		got := rules.Evaluate(h)
		if !sameUnderLoad(rules.Pass, got) {
			t.Errorf("run %d: %s under load, pass idle%s", h.Repetition.Index, got.Verdict, describe(got))
		}
		if got.Verdict == rules.Unknown {
			starved++
		}
	}
	t.Logf("%d of %d runs could not be judged: the harness was starved", starved, len(hs))
}

// saturate starts busyLoops spinning processes, each in its own process
// group, and returns a func that kills them (also run at cleanup).
func saturate(t *testing.T) func() {
	t.Helper()
	var cmds []*exec.Cmd
	for range busyLoops {
		c := exec.Command("sh", "-c", "while :; do :; done")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Skipf("cannot start a busy loop: %v", err)
		}
		cmds = append(cmds, c)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		for _, c := range cmds {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			_ = c.Wait()
		}
	}
	t.Cleanup(stop)
	return stop
}
