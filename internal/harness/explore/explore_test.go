package explore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/gateway"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/run"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/wire"
)

func TestMap(t *testing.T) {
	h := &history.History{
		Upstream: []wire.UpstreamRequest{
			{Kind: "initial", Endpoint: "chat", Stream: true, Events: 4, ContentEvents: 2, ToolCalls: 1},
			{Kind: "follow_up", Endpoint: "chat"},
			{Kind: "follow_up", Endpoint: "chat", Stream: true, Events: 3, ContentEvents: 1},
		},
		MCP: []wire.MCPEvent{
			{Kind: wire.MCPSession, Method: "server/discover"}, {Kind: wire.MCPSession, Method: "initialize"},
			{Kind: wire.MCPSession, Method: "GET"}, {Kind: wire.MCPSession, Method: "notifications/initialized"},
			{Kind: wire.MCPSession, Method: "tools/list"},
			{Kind: wire.MCPCall, Tool: "commit_write"}, {Kind: wire.MCPWrite, Tool: "commit_write"},
			{Kind: wire.MCPSessionRefused, Method: "tools/list"}, {Kind: wire.MCPSession, Method: "tools/list"},
		},
	}
	var got []string
	for _, p := range Map(h) {
		got = append(got, p.String())
	}
	want := []string{
		"initial chat stream #1",
		"initial chat stream #1, after the headers",
		"initial chat stream #1, after event 1 of 4",
		"initial chat stream #1, right after the tool call",
		"initial chat stream #1, before the terminal event",
		"follow_up chat #1",
		"follow_up chat stream #1",
		"follow_up chat stream #1, after the headers",
		"follow_up chat stream #1, right after the text", // a text answer has no tool call to cut after
		"follow_up chat stream #1, before the terminal event",
		"mcp initialize #1",
		"mcp tools/list #1",
		"mcp tools/list #2", // refused steps count, as the ledger counts a fault's requests
		"mcp tools/list #3",
		"tools/call commit_write #1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("points (-want +got):\n%s", diff)
	}
}

func TestCandidates(t *testing.T) {
	p := Point{Side: SideUpstream, Kind: "follow_up", Endpoint: "chat", Nth: 1}
	q := Point{Side: SideMCP, Tool: "commit_write", Nth: 2}
	s := Schedule{{Point: p, Kind: "500"}, {Point: q, Kind: "mcp-drop", Times: fault.Times{Nth: 2}}}
	var got []string
	for _, c := range candidates(s) {
		got = append(got, c.String())
	}
	want := []string{
		"mcp-drop at tools/call commit_write #2 (nth:2)",
		"500 at follow_up chat #1 (always)",
		"500 at follow_up chat #1 (once) + mcp-drop at tools/call commit_write #2 (nth:2)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("candidates (-want +got):\n%s", diff)
	}
}

func parseTarget(t *testing.T, name string) target.Target {
	t.Helper()
	tg, err := parseTargetB(name)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func parseTargetB(name string) (target.Target, error) { return target.ParseTarget(name) }

// bases returns the default bases of tg called names (all when none).
func bases(t *testing.T, tg target.Target, names ...string) []*scenario.Scenario {
	t.Helper()
	all, err := DefaultBases(tg)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		return all
	}
	var out []*scenario.Scenario
	for _, n := range names {
		i := slices.IndexFunc(all, func(s *scenario.Scenario) bool { return s.Name == n })
		if i < 0 {
			t.Fatalf("no default base %q", n)
		}
		out = append(out, all[i])
	}
	return out
}

func TestGuardedFindsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("sweeps every default base")
	}
	tg := parseTarget(t, "builtin:guarded")
	rep, err := Explore(context.Background(), bases(t, tg), Options{Target: tg, Parallel: 8})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Cells) < 300 {
		t.Errorf("%d cells, want the full sweep of the default bases (300 or more)", len(rep.Cells))
	}
	for _, b := range rep.Bases {
		if len(b.Points) == 0 {
			t.Errorf("base %s: no fault points", b.Name)
		}
	}
	pass := 0
	for _, c := range rep.Cells {
		switch c.Verdict {
		case rules.Fail:
			t.Errorf("%s: %s failed %v", c.Base, c.Schedule, c.Failed)
		case rules.Pass:
			pass++
		}
	}
	if pass == 0 {
		t.Error("no cell passed: the rules judged nothing")
	}
	if len(rep.Findings) > 0 {
		t.Errorf("%d findings on guarded, want none", len(rep.Findings))
	}
}

// TestFindsEachSwitch explores, for each switch of the built-in gateway, the
// default base where it shows, and wants a finding that breaks the switch's
// rule; the scenario written for it fails on the switch and passes on guarded.
func TestFindsEachSwitch(t *testing.T) {
	if testing.Short() {
		t.Skip("sweeps a base per switch")
	}
	tests := []struct {
		target string
		base   string
		rule   string
	}{
		{"builtin:naive", "chat stream tool call", "no-replay-after-dispatch"},
		{"builtin:" + string(gateway.ReplayAfterDispatch), "responses stream tool call", "no-replay-after-dispatch"},
		{"builtin:" + string(gateway.StreamSplice), "chat stream with a fallback", "no-splice"},
		{"builtin:" + string(gateway.MCPResendOnDisconnect), "messages stream tool call", "no-replay-ambiguous-mcp"},
		{"builtin:" + string(gateway.BreakerCountsToolErrors), "chat four parallel tool calls", "is-error-not-retried"},
		{"builtin:" + string(gateway.RetryEverything), "chat keyed tool call", "non-retryable-not-retried"},
		{"builtin:" + string(gateway.NoCancelOnTimeout), "chat with a tool timeout", "cancel-propagates"},
		{"builtin:" + string(gateway.FreshKeyPerAttempt), "chat keyed tool call", "keyed-retry-same-key"},
		{"builtin:" + string(gateway.RunToolsFromCutStream), "chat stream tool call", "no-replay-after-dispatch"},
		{"builtin:" + string(gateway.HideServedModel), "messages stream tool call", "model-honored"},
		{"builtin:" + string(gateway.StaleToolList), "chat two requests", "no-stale-tool-call"},
		{"builtin:" + string(gateway.MCPResendOnSessionExpiry), "messages stream tool call", "no-replay-ambiguous-mcp"},
		{"builtin:" + string(gateway.MCPRetryUnauthorized), "chat stream tool call", "reauth-at-most-once"},
		{"builtin:" + string(gateway.MCPReplayAfterStdioDeath), "chat tool call over stdio", "no-replay-ambiguous-mcp"},
		{"builtin:" + string(gateway.MCPReissueWithoutKey), "chat keyed tool call", "no-replay-ambiguous-mcp"},
		{"builtin:" + string(gateway.CheckpointAtTurnEnd), "chat keyed tool call", "no-replay-after-dispatch"},
	}
	for _, info := range gateway.AllBugs() {
		if !slices.ContainsFunc(tests, func(tt struct{ target, base, rule string }) bool {
			return tt.target == "builtin:"+string(info.Bug)
		}) {
			t.Errorf("switch %s has no row here: explore must find every switch's failure", info.Bug)
		}
	}
	guarded := parseTarget(t, "builtin:guarded")
	for _, tt := range tests {
		t.Run(strings.TrimPrefix(tt.target, "builtin:"), func(t *testing.T) {
			t.Parallel()
			tg := parseTarget(t, tt.target)
			bs := bases(t, tg, tt.base)
			rep, err := Explore(context.Background(), bs, Options{Target: tg, Parallel: 4})
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(rep.Findings, func(f Finding) bool { return !f.Flaky && slices.Contains(f.Failed, tt.rule) })
			if i < 0 {
				t.Fatalf("no confirmed finding breaks %s; findings: %v", tt.rule, rep.Findings)
			}
			dir := t.TempDir()
			if err := WriteFindings(dir, rep); err != nil {
				t.Fatal(err)
			}
			f := rep.Findings[i]
			if filepath.Dir(f.File) != dir {
				t.Fatalf("finding written to %q, want a file in %s", f.File, dir)
			}
			checkReproductions(t, rep, tg, guarded)
		})
	}
}

// checkReproductions checks that every confirmed finding of rep was written
// as a scenario that loads, fails on tg, the target it came from, and
// passes on fixed, a target without the bug.
func checkReproductions(t *testing.T, rep *Report, tg, fixed target.Target) {
	t.Helper()
	for _, f := range rep.Findings {
		if f.Flaky {
			continue
		}
		if f.File == "" {
			t.Errorf("finding %s was not written", f.Mechanism)
			continue
		}
		ss, err := scenario.Load(f.File)
		if err != nil {
			t.Errorf("the scenario written for %s does not load: %v", f.Mechanism, err)
			continue
		}
		src, _ := os.ReadFile(f.File)
		for _, want := range []struct {
			tg      target.Target
			verdict rules.Status
		}{{tg, rules.Fail}, {fixed, rules.Pass}} {
			hs, err := run.Run(context.Background(), ss, run.Options{Targets: []target.Target{want.tg}, Timeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if r := rules.Evaluate(hs[0]); r.Verdict != want.verdict {
				t.Errorf("the scenario written for %s is %s on %s, want %s:\n%s\n%v", f.Mechanism, r.Verdict, want.tg.Name(), want.verdict, src, r.Verdicts)
			}
		}
	}
}

// TestNaiveSweepFindsEachMechanismOnce sweeps every default base of the
// naive gateway: at most 15 findings, each a different mechanism, each
// written as a scenario that fails on naive and passes on guarded.
func TestNaiveSweepFindsEachMechanismOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("sweeps every default base")
	}
	naive, guarded := parseTarget(t, "builtin:naive"), parseTarget(t, "builtin:guarded")
	rep, err := Explore(context.Background(), bases(t, naive), Options{Target: naive})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rep.Findings); n == 0 || n > 15 {
		t.Errorf("%d findings on builtin:naive, want 1 to 15", n)
	}
	seen := map[Mechanism]bool{}
	failing := 0
	for _, f := range rep.Findings {
		if seen[f.Mechanism] {
			t.Errorf("two findings of mechanism %s", f.Mechanism)
		}
		seen[f.Mechanism] = true
		failing += f.Cells
	}
	for i, c := range rep.Cells {
		if (c.Verdict == rules.Fail) != (c.Finding > 0) {
			t.Errorf("cell %d (%s: %s) is %s with finding %d", i, c.Base, c.Schedule, c.Verdict, c.Finding)
		}
		if c.Verdict == rules.Fail {
			failing--
		}
	}
	if failing != 0 {
		t.Errorf("the findings' cells and the failing cells differ by %d: each failing cell shows one finding", failing)
	}
	if err := WriteFindings(t.TempDir(), rep); err != nil {
		t.Fatal(err)
	}
	checkReproductions(t, rep, naive, guarded)
}

func TestBaseFailingCleanStopsTheSweep(t *testing.T) {
	tg := parseTarget(t, "builtin:guarded")
	ss, errs := scenario.Parse("base.yaml", []byte("name: wants two writes\nrequest: {endpoint: chat}\nexpect: {writes: 2}\n"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	rep, err := Explore(context.Background(), ss, Options{Target: tg})
	var clean *BaseFailedError
	if !errors.As(err, &clean) || clean.Base != "wants two writes" {
		t.Fatalf("err = %v, want a BaseFailedError naming the base", err)
	}
	if !strings.Contains(err.Error(), "writes") {
		t.Errorf("error %q does not name the failing check", err)
	}
	if rep != nil && len(rep.Cells) > 0 {
		t.Errorf("%d cells ran after the base failed clean", len(rep.Cells))
	}
}

func TestInterruptKeepsWhatWasFound(t *testing.T) {
	tg := parseTarget(t, "builtin:naive")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := 0
	rep, err := Explore(ctx, bases(t, tg, "chat stream tool call"), Options{Target: tg, Parallel: 2, OnProgress: func(p Progress) {
		if p.Phase == "sweep" {
			if done++; done == 10 {
				cancel()
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Interrupted || rep.Unrun == 0 {
		t.Errorf("interrupted %v with %d cells not run, want an interrupted report", rep.Interrupted, rep.Unrun)
	}
	if len(rep.Cells) < 10 {
		t.Errorf("%d cells kept, want the 10 that ended before the interrupt", len(rep.Cells))
	}
}

func TestPlanIsDeterministicAndSharded(t *testing.T) {
	tg := parseTarget(t, "builtin:guarded")
	b := bases(t, tg, "chat stream tool call")
	h := &history.History{Upstream: []wire.UpstreamRequest{
		{Kind: "initial", Endpoint: "chat", Stream: true, Events: 8, ContentEvents: 6},
		{Kind: "follow_up", Endpoint: "chat", Stream: true, Events: 7, ContentEvents: 5},
	}, MCP: []wire.MCPEvent{{Kind: wire.MCPCall, Tool: "commit_write"}}}
	names := func(opts Options) []string {
		e := newExplorer(opts)
		var out []string
		for _, j := range e.plan(b, [][]Point{Map(h)}, &Report{}) {
			out = append(out, j.name)
		}
		return out
	}
	one := names(Options{Target: tg, Depth: 2, MaxRuns: 200, Seed: "s"})
	if len(one) != 200 {
		t.Fatalf("%d runs planned, want --max-runs 200", len(one))
	}
	if diff := cmp.Diff(one, names(Options{Target: tg, Depth: 2, MaxRuns: 200, Seed: "s"})); diff != "" {
		t.Errorf("the same seed planned another sweep (-first +second):\n%s", diff)
	}
	if slices.Equal(one, names(Options{Target: tg, Depth: 2, MaxRuns: 200, Seed: "t"})) {
		t.Error("another seed sampled the same pairs")
	}
	var shards []string
	for i := 1; i <= 3; i++ {
		shards = append(shards, names(Options{Target: tg, Depth: 2, MaxRuns: 200, Seed: "s", Shard: i, Shards: 3})...)
	}
	slices.Sort(shards)
	sorted := slices.Sorted(slices.Values(one))
	if diff := cmp.Diff(sorted, shards); diff != "" {
		t.Errorf("three shards do not make the whole sweep (-whole +shards):\n%s", diff)
	}
}

// TestFingerprint tells the guarded gateway's retry policy from the one
// that retries everything and ignores Retry-After.
func TestFingerprint(t *testing.T) {
	kinds, err := SelectKinds([]string{"400", "429-retry-after"})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Request, Fault, RetryAfter string
		Attempts                   int
	}
	tests := []struct {
		target string
		want   []row
	}{
		// The keyed write may be replayed, so the follow-up is retried too.
		{"builtin:guarded", []row{
			{"initial", "400", "", 1}, {"initial", "429-retry-after", "honoured", 3},
			{"follow_up", "400", "", 1}, {"follow_up", "429-retry-after", "honoured", 3},
		}},
		{"builtin:" + string(gateway.RetryEverything), []row{
			{"initial", "400", "", 3}, {"initial", "429-retry-after", "ignored", 3},
			{"follow_up", "400", "", 3}, {"follow_up", "429-retry-after", "ignored", 3},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			t.Parallel()
			tg := parseTarget(t, tt.target)
			rep, err := Explore(context.Background(), bases(t, tg, "chat keyed tool call"), Options{Target: tg, Kinds: kinds, Fingerprint: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []row
			for _, r := range rep.Fingerprint {
				got = append(got, row{string(r.Request), r.Fault, r.RetryAfter, r.Attempts})
				if r.Attempts > 1 && (r.GapMin <= 0 || r.GapMin > r.GapMedian || r.GapMedian > r.GapMax || r.Total < r.GapMax) {
					t.Errorf("%s %s: gaps %s ≤ %s ≤ %s, total %s out of order", r.Request, r.Fault, r.GapMin.D(), r.GapMedian.D(), r.GapMax.D(), r.Total.D())
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("fingerprint (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFingerprintOverStdio: over stdio the fingerprint arms the stdio
// server's deaths on every tools/call, and tells the guarded gateway (the
// call in flight is never re-sent: one call, one write, and a respawn for the
// next round) from the one that re-sends it on a respawned server (two calls,
// two writes).
func TestFingerprintOverStdio(t *testing.T) {
	kinds, err := SelectKinds([]string{"400", "stdio-exit-after"})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Request, Tool, Fault string
		Attempts, Executions int
	}
	tests := []struct {
		target string
		want   []row
	}{
		{"builtin:guarded", []row{
			{"initial", "", "400", 1, 0}, {"follow_up", "", "400", 1, 1},
			{"", "commit_write", "stdio-exit-after", 1, 1},
		}},
		{"builtin:" + string(gateway.MCPReplayAfterStdioDeath), []row{
			{"initial", "", "400", 1, 0}, {"follow_up", "", "400", 1, 1},
			{"", "commit_write", "stdio-exit-after", 2, 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			t.Parallel()
			tg := parseTarget(t, tt.target)
			rep, err := Explore(context.Background(), bases(t, tg, "chat tool call over stdio"), Options{Target: tg, Kinds: kinds, Fingerprint: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []row
			for _, r := range rep.Fingerprint {
				got = append(got, row{string(r.Request), r.Tool, r.Fault, r.Attempts, r.Executions})
				// The process that died is respawned for the re-send or for
				// the next round; when the gateway sees it die is its own.
				if (r.Tool == "") != (r.Spawns == 1) || r.Spawns < 1 {
					t.Errorf("%s %s%s: %d spawns, want 1 for a model request's fault and 2 or more for a death", r.Fault, r.Request, r.Tool, r.Spawns)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("fingerprint (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRandomSchedulesShrink draws random schedules of several faults on the
// naive gateway; every failure among them reduces to a single fault.
func TestRandomSchedulesShrink(t *testing.T) {
	tg := parseTarget(t, "builtin:naive")
	kinds, err := SelectKinds([]string{"500", "400", "mcp-drop", "mcp-is-error"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Explore(context.Background(), bases(t, tg, "chat keyed tool call"), Options{Target: tg, Kinds: kinds, Random: 6, Seed: "random"})
	if err != nil {
		t.Fatal(err)
	}
	multi := 0
	for _, c := range rep.Cells {
		if len(c.Schedule) > 1 {
			multi++
			if len(c.Schedule) > 3 {
				t.Errorf("random schedule of %d faults, want 2 or 3: %s", len(c.Schedule), c.Schedule)
			}
		}
	}
	if multi != 6 {
		t.Errorf("%d random schedules ran, want 6", multi)
	}
	if len(rep.Findings) == 0 {
		t.Fatal("no finding on naive")
	}
	for _, f := range rep.Findings {
		if len(f.Schedule) != 1 {
			t.Errorf("finding %s not reduced to one fault", f.Schedule)
		}
	}
}

// TestHangFailsOnlyItsCell stalls the model answer past each run's deadline:
// those cells fail (the run did not complete) and the sweep goes on to the
// others. On a machine so busy that the harness's own timers ran late by
// half the deadline, a cell is unknown (starved) instead, which says so:
// such a cell is not held to its verdict.
func TestHangFailsOnlyItsCell(t *testing.T) {
	tg := parseTarget(t, "builtin:guarded")
	kinds, err := SelectKinds([]string{"stall", "500"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Explore(context.Background(), bases(t, tg, "chat keyed tool call"), Options{
		Target: tg, Kinds: kinds, Timeout: 300 * time.Millisecond, Confirm: 1,
		Settings: fault.Settings{Stall: 5 * time.Second},
		Points:   regexp.MustCompile(`^initial`),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"stall at initial chat #1 (once)":   "fail completed",
		"stall at initial chat #1 (always)": "fail completed",
		"500 at initial chat #1 (once)":     "pass ",
		"500 at initial chat #1 (always)":   "pass ",
	}
	got := map[string]string{}
	for _, c := range rep.Cells {
		name := c.Schedule.String()
		got[name] = string(c.Verdict) + " " + strings.Join(c.Failed, ",")
		if c.Verdict == rules.Unknown && slices.ContainsFunc(c.Result.Verdicts, func(v rules.Verdict) bool { return v.Starved }) {
			t.Logf("%s: unknown, the harness was starved (want %q on a quieter machine)", name, want[name])
			got[name] = want[name]
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cells (-want +got):\n%s", diff)
	}
}

// TestSessionStepsSwept maps the clean run's MCP session steps as points and
// sweeps the session kinds there. Both gateways open their MCP session on
// the first request and treat a failure to open it or to list the tools as
// a failure before any dispatch, retried as transient: a step refused once
// costs one retry and the request succeeds with one write; refused always,
// every attempt fails and the app gets a 502 with nothing written, which no
// rule can fault (nothing ran, so nothing could run twice).
func TestSessionStepsSwept(t *testing.T) {
	if testing.Short() {
		t.Skip("sweeps a base")
	}
	type cell struct {
		Schedule string
		Verdict  rules.Status
		Writes   int
		Statuses []int
		Fired    int // how often the session fault refused its step
	}
	attempts := 1 + gateway.DefaultNumRetries
	var want []cell
	for _, point := range []string{"mcp initialize #1", "mcp tools/list #1"} {
		for _, kind := range []string{"mcp-session-fail", "mcp-session-reset"} {
			want = append(want,
				cell{kind + " at " + point + " (once)", rules.Pass, 1, []int{200}, 1},
				cell{kind + " at " + point + " (always)", rules.Unknown, 0, []int{502}, attempts})
		}
	}
	kinds, err := SelectKinds([]string{"mcp-session-fail", "mcp-session-reset"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"builtin:guarded", "builtin:naive"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tg := parseTarget(t, name)
			bs := bases(t, tg, "chat stream tool call")
			for _, b := range bs {
				// Session steps exist on the session generation only.
				b.MCP = &scenario.MCP{Protocol: wire.MCPProtocol20251125}
			}
			rep, err := Explore(context.Background(), bs, Options{Target: tg, Kinds: kinds, Parallel: 4})
			if err != nil {
				t.Fatal(err)
			}
			var steps []string
			for _, p := range rep.Bases[0].Points {
				if p.Method != "" {
					steps = append(steps, p.String())
				}
			}
			if diff := cmp.Diff([]string{"mcp initialize #1", "mcp tools/list #1"}, steps); diff != "" {
				t.Errorf("session step points (-want +got):\n%s", diff)
			}
			var got []cell
			for _, c := range rep.Cells {
				fired := 0
				for _, f := range c.Result.History.Faults {
					if f.Side == wire.FaultMCP && f.Method != "" {
						fired += f.Fired
					}
				}
				got = append(got, cell{c.Schedule.String(), c.Verdict, c.Writes, c.Statuses, fired})
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("cells (-want +got):\n%s", diff)
			}
			if len(rep.Findings) > 0 {
				t.Errorf("findings %v, want none", rep.Findings)
			}
		})
	}
}

// TestDropMid sweeps only mcp-drop-mid: a tools/call answer cut after its
// headers is as ambiguous as one cut before them, so a gateway that resends
// on a disconnect replays the write, and guarded does not.
func TestDropMid(t *testing.T) {
	if testing.Short() {
		t.Skip("sweeps a base twice")
	}
	kinds, err := SelectKinds([]string{"mcp-drop-mid"})
	if err != nil {
		t.Fatal(err)
	}
	const base = "messages stream tool call"
	resend := parseTarget(t, "builtin:"+string(gateway.MCPResendOnDisconnect))
	rep, err := Explore(context.Background(), bases(t, resend, base), Options{Target: resend, Kinds: kinds, Parallel: 4})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(rep.Findings, func(f Finding) bool { return !f.Flaky && slices.Contains(f.Failed, "no-replay-ambiguous-mcp") }) {
		t.Errorf("no confirmed finding breaks no-replay-ambiguous-mcp on %s; findings: %v", resend.Name(), rep.Findings)
	}
	guarded := parseTarget(t, "builtin:guarded")
	rep, err = Explore(context.Background(), bases(t, guarded, base), Options{Target: guarded, Kinds: kinds, Parallel: 4})
	if err != nil {
		t.Fatal(err)
	}
	pass := 0
	for _, c := range rep.Cells {
		if !strings.Contains(c.Schedule.String(), "mcp-drop-mid") {
			continue
		}
		switch c.Verdict {
		case rules.Fail:
			t.Errorf("guarded: %s failed %v", c.Schedule, c.Failed)
		case rules.Pass:
			pass++
		}
	}
	if pass == 0 {
		t.Error("guarded: no mcp-drop-mid cell passed")
	}
}

// TestCellsMatchTheirJobs: explore finds each run's result by its place in
// run.Run's order, so a cell is its job's run once even when the base says
// repeat (which would give one job several histories); and two bases of one
// name, which the report could not tell apart, are refused.
func TestCellsMatchTheirJobs(t *testing.T) {
	tg := parseTarget(t, "builtin:naive")
	kinds, err := SelectKinds([]string{"500"})
	if err != nil {
		t.Fatal(err)
	}
	ss, errs := scenario.Parse("base.yaml", []byte("name: repeated\nrequest: {endpoint: chat}\nrepeat: 3\nexpect: {writes: 1}\n"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	rep, err := Explore(context.Background(), ss, Options{Target: tg, Kinds: kinds, Confirm: 1})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range rep.Cells {
		got = append(got, fmt.Sprintf("%s %s %d", c.Schedule, c.Verdict, c.Writes))
	}
	want := []string{
		"500 at initial chat #1 (once) pass 1", "500 at initial chat #1 (always) pass 0",
		"500 at follow_up chat #1 (once) fail 2", "500 at follow_up chat #1 (always) fail 3",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("cells (-want +got):\n%s", d)
	}
	if runs := 1 + len(rep.Cells) + len(rep.Findings); rep.Runs < runs || rep.Runs > runs+4*maxShrinkRounds {
		t.Errorf("%d runs for %d cells and %d findings", rep.Runs, len(rep.Cells), len(rep.Findings))
	}

	twice := []*scenario.Scenario{ss[0], ss[0]}
	if _, err := Explore(context.Background(), twice, Options{Target: tg, Kinds: kinds}); err == nil || !strings.Contains(err.Error(), `two base scenarios named "repeated"`) {
		t.Errorf("Explore of two bases named alike: %v", err)
	}
}

// TestDuplicateAnswer sweeps only mcp-duplicate (optional, so named): the
// gateway's MCP client (go-sdk) takes the first event answering a tools/call
// and ends the stream there, so a duplicated answer breaks no rule, on naive
// or guarded, and the tool ran once.
func TestDuplicateAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("sweeps a base twice")
	}
	kinds, err := SelectKinds([]string{"mcp-duplicate"})
	if err != nil {
		t.Fatal(err)
	}
	const base = "messages stream tool call"
	for _, name := range []string{"builtin:naive", "builtin:guarded"} {
		target := parseTarget(t, name)
		rep, err := Explore(context.Background(), bases(t, target, base), Options{Target: target, Kinds: kinds, Parallel: 4})
		if err != nil {
			t.Fatal(err)
		}
		pass := 0
		for _, c := range rep.Cells {
			if !strings.Contains(c.Schedule.String(), "mcp-duplicate") {
				continue
			}
			switch c.Verdict {
			case rules.Fail:
				t.Errorf("%s: %s failed %v", name, c.Schedule, c.Failed)
			case rules.Pass:
				pass++
			}
		}
		if pass == 0 {
			t.Errorf("%s: no mcp-duplicate cell passed", name)
		}
	}
}

// TestConfirmsPicksFindings: Options.Confirms confirms only the findings it
// picks, and the others are reduced all the same: the same findings with
// the same reproductions, unconfirmed (no runs, not written).
func TestConfirmsPicksFindings(t *testing.T) {
	tg := parseTarget(t, "builtin:naive")
	kinds, err := SelectKinds([]string{"drop", "mcp-drop", "mcp-drop-mid"})
	if err != nil {
		t.Fatal(err)
	}
	b := bases(t, tg, "chat stream tool call")
	all, err := Explore(context.Background(), b, Options{Target: tg, Kinds: kinds})
	if err != nil {
		t.Fatal(err)
	}
	firstFailing := slices.IndexFunc(all.Cells, func(c Cell) bool { return c.Verdict == rules.Fail })
	picked, err := Explore(context.Background(), b, Options{Target: tg, Kinds: kinds, Confirms: func(_ *Report, cells []int) bool {
		return slices.Contains(cells, firstFailing)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Findings) < 2 {
		t.Fatalf("%d findings, want two or more to pick from", len(all.Findings))
	}
	reproductions := func(rep *Report) map[Mechanism]string {
		out := map[Mechanism]string{}
		for _, f := range rep.Findings {
			out[f.Mechanism] = f.Base + ": " + f.Schedule.String()
		}
		return out
	}
	if diff := cmp.Diff(reproductions(all), reproductions(picked)); diff != "" {
		t.Errorf("findings confirmed (-) and picked (+) differ:\n%s", diff)
	}
	if err := WriteFindings(t.TempDir(), picked); err != nil {
		t.Fatal(err)
	}
	for _, f := range picked.Findings {
		confirmed := slices.Contains(f.CellIndexes, firstFailing)
		if confirmed != (f.Tries == DefaultConfirm) || !confirmed && (f.Tries != 0 || f.File != "") {
			t.Errorf("%s: %d tries, file %q; picked %v", f.Mechanism, f.Tries, f.File, confirmed)
		}
	}
	if want := all.Runs - DefaultConfirm*(len(all.Findings)-1); picked.Runs != want {
		t.Errorf("%d runs, want %d: the sweep's less the confirming runs of the findings not picked", picked.Runs, want)
	}
}
