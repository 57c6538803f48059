package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/harness/targetfile"
)

func TestHangingTargetFailsOnlyItsScenario(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // so the server notices when the client gives up
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	ss, err := scenario.Load("../../../scenarios/seed/no-fault-chat.yaml", "../../../scenarios/seed/no-fault-responses.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A proxy the harness does not start, which answers nothing until the
	// request gives up.
	hang, _ := writeTarget(t, fmt.Sprintf("kind: proxy\nname: test:hang\nurl: %s\nfakes: {upstream_addr: %q, mcp_addr: %q}\n", srv.URL, freeAddr(t), freeAddr(t)), nil)
	hs, err := Run(ctx, ss, Options{Targets: []target.Target{hang}, Timeout: 50 * time.Millisecond, Parallel: 2})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(hs) != 2 {
		t.Fatalf("got %d histories, want 2 (the suite goes on)", len(hs))
	}
	for _, h := range hs {
		if !strings.Contains(h.Error, "the fakes saw nothing of the run for its 50ms deadline") || !h.Requests[0].TimedOut {
			t.Errorf("%s: error %q, exchange %+v", h.Scenario, h.Error, h.Requests[0])
		}
		vs := rules.Check(h)
		if vs[0].Check != "completed" || vs[0].Status != rules.Fail || rules.Overall(vs) != rules.Fail {
			t.Errorf("%s: verdicts %+v", h.Scenario, vs)
		}
	}
}

func TestSelect(t *testing.T) {
	var all []*scenario.Scenario
	for _, n := range []string{"d", "b", "a", "c", "e"} {
		tags := []string{"t-" + n}
		if n < "c" {
			tags = append(tags, "early")
		}
		all = append(all, &scenario.Scenario{Name: n, Tags: tags})
	}
	// c is a client scenario: it does not run on the built-in gateway.
	all[3].Expect.Client = &history.ClientExpect{}
	guarded, err := targetfile.Resolve("builtin:guarded", targetfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	names := func(ss []*scenario.Scenario) string {
		var out []string
		for _, s := range ss {
			out = append(out, s.Name)
		}
		return strings.Join(out, ",")
	}
	tests := []struct {
		name string
		sel  Selection
		want string
	}{
		{"all", Selection{}, "d,b,a,c,e"},
		{"filter", Selection{Filter: regexp.MustCompile("^[a-c]$")}, "b,a,c"},
		{"tag", Selection{Tags: []string{"early"}}, "b,a"},
		{"tags any", Selection{Tags: []string{"t-e", "t-d"}}, "d,e"},
		{"shard 1/2", Selection{Shard: 1, Shards: 2}, "a,c,e"},
		{"shard 2/2", Selection{Shard: 2, Shards: 2}, "d,b"},
		{"shard after filter", Selection{Filter: regexp.MustCompile("[^a]"), Shard: 1, Shards: 2}, "d,b"},
		{"targets", Selection{Targets: []target.Target{guarded}}, "d,b,a,e"},
		{"shard 1/2 of what runs on the targets", Selection{Targets: []target.Target{guarded}, Shard: 1, Shards: 2}, "d,a"},
		{"shard 2/2 of what runs on the targets", Selection{Targets: []target.Target{guarded}, Shard: 2, Shards: 2}, "b,e"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := names(Select(all, tt.sel)); got != tt.want {
				t.Errorf("Select (-want +got):\n-%s\n+%s", tt.want, got)
			}
		})
	}
}

// TestRunKeepsScenarioOrder: Run returns the histories in scenario order
// and tells OnHistory each one's place, although here the runs end in the
// other order (the one that waits starts first, on one worker).
func TestRunKeepsScenarioOrder(t *testing.T) {
	ss, errs := scenario.Parse("order.yaml", []byte(`
- name: first, ends last
  request: {endpoint: chat}
  expect: {writes: 1}
- name: second, ends first
  request: {endpoint: chat}
  faults: {upstream: [{on: follow_up, delay: 100ms}]}
  expect: {writes: 1}
`))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	tg, err := target.ParseTarget("builtin:guarded")
	if err != nil {
		t.Fatal(err)
	}
	var ended []string
	hs, err := Run(ctxFor(t), ss, Options{Targets: []target.Target{tg}, Parallel: 1, OnHistory: func(i int, h *history.History) {
		ended = append(ended, fmt.Sprintf("%d %s", i, h.Scenario))
	}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hs {
		got = append(got, h.Scenario)
	}
	if want := []string{"first, ends last", "second, ends first"}; !slices.Equal(got, want) {
		t.Errorf("histories (-want +got):\n-%q\n+%q", want, got)
	}
	if want := []string{"1 second, ends first", "0 first, ends last"}; !slices.Equal(ended, want) {
		t.Errorf("OnHistory calls (-want +got):\n-%q\n+%q", want, ended)
	}
}

// TestRunSkips: a run Skip leaves out as it is about to start has no
// history and no OnHistory call; Skip is asked once the runs before it have
// ended (here one worker), so it can stand on their histories.
func TestRunSkips(t *testing.T) {
	var ended []string
	hs := runSourceWith(t, `
- name: runs
  request: {endpoint: chat}
  expect: {writes: 1}
- name: skipped
  request: {endpoint: chat}
  expect: {writes: 1}
- name: runs too
  request: {endpoint: chat}
  expect: {writes: 1}
`, "builtin:guarded", Options{Parallel: 1,
		OnHistory: func(i int, h *history.History) { ended = append(ended, h.Scenario) },
		Skip:      func(i int) bool { return i == 1 && len(ended) == 1 },
	})
	var got []string
	for _, h := range hs {
		if h == nil {
			got = append(got, "<nil>")
			continue
		}
		got = append(got, h.Scenario)
	}
	if want := []string{"runs", "<nil>", "runs too"}; !slices.Equal(got, want) {
		t.Errorf("histories (-want +got):\n-%q\n+%q", want, got)
	}
	if want := []string{"runs", "runs too"}; !slices.Equal(ended, want) {
		t.Errorf("OnHistory calls (-want +got):\n-%q\n+%q", want, ended)
	}
}

// TestActivityDeadline: a run's deadline restarts on what the fakes see of
// it: a quiet run ends at its deadline, one the fakes keep seeing only at
// busyRounds times it, each saying why.
func TestActivityDeadline(t *testing.T) {
	for _, tt := range []struct {
		name string
		last func() time.Time
		want string
	}{
		{"quiet", func() time.Time { return time.Time{} }, "the fakes saw nothing of the run for its 20ms deadline"},
		{"busy", time.Now, "the run was still going on"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := activityDeadline(context.Background(), 20*time.Millisecond, tt.last, time.Now)
			defer cancel()
			<-ctx.Done()
			if err := context.Cause(ctx); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("cause %v; want one wrapping context.DeadlineExceeded that says %q", err, tt.want)
			}
		})
	}
}
