package gateway

import (
	"bytes"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// observed is every count a switch scenario looks at.
type observed struct {
	Statuses      []int
	Calls         int // tools/call the ledger received
	Writes        int
	Keys          int
	Cancellations int
	Initial       int
	FollowUp      int
	Chunks        int // `data: {"id"` chunks of a streamed answer
	Spawns        int // stdio server processes that opened a ledger session
	// Models are the distinct model ids the app's answer named, in order
	// (only where a scenario looks at them).
	Models []string
	// Offered are the tools the last model request offered (only where a
	// scenario looks at them).
	Offered []string
}

// differing names the fields in which a and b differ.
func differing(a, b observed) []string {
	var out []string
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range va.NumField() {
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			out = append(out, va.Type().Field(i).Name)
		}
	}
	return out
}

// observe reads the fakes' totals after the gateway is closed, so calls left
// running have finished.
func (r *rig) observe(statuses []int, chunks int) observed {
	r.t.Helper()
	if err := r.gw.Close(); err != nil {
		r.t.Fatalf("gateway Close: %v", err)
	}
	l, u := r.ledger.Total(), r.upstream.Total()
	return observed{Statuses: statuses, Calls: l.CallsTotal(), Writes: l.Writes, Keys: l.Keys, Cancellations: l.Cancellations,
		Initial: u.Initial, FollowUp: u.FollowUp, Chunks: chunks, Spawns: l.Spawns}
}

// answerModels returns the distinct model ids an answer names, in order: a
// JSON body's, or each `data:` event's of a stream.
func answerModels(body []byte) []string {
	var out []string
	note := func(data []byte) {
		if m := servedModel(data); m != "" && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	if !bytes.Contains(body, []byte("data:")) {
		note(body)
		return out
	}
	for line := range bytes.Lines(body) {
		if data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:")); ok {
			note(bytes.TrimSpace(data))
		}
	}
	return out
}

// serveFallback is an upstream that answers every request with another
// model than the one asked for.
func serveFallback() upstream.Fault { return upstream.Fault{ServeModel: "fallback-mini"} }

func armUpstream(t *testing.T, r *rig, script *upstream.Script, faults ...upstream.Fault) {
	t.Helper()
	if err := r.upstream.Arm("", script, faults); err != nil {
		t.Fatalf("arming the upstream: %v", err)
	}
}

func armLedger(t *testing.T, r *rig, faults ...ledger.Fault) {
	t.Helper()
	if err := r.ledger.Arm("", faults); err != nil {
		t.Fatalf("arming the ledger: %v", err)
	}
}

// cutAfterToolCall cuts the first streamed initial answer right after its
// tool call is complete, before its terminal event.
func cutAfterToolCall() upstream.Fault {
	return upstream.Fault{On: wire.KindInitial, Times: fault.Once, Drop: &upstream.Drop{After: upstream.DropAfterToolCall}}
}

// dropOnceAfterExecute arms the ledger to drop the connection of the first
// call of tool after it ran.
func dropOnceAfterExecute(tool string) func(*testing.T, *rig) {
	return func(t *testing.T, r *rig) {
		armLedger(t, r, ledger.Fault{Tool: tool, Times: fault.Once, DropAfterExecute: &ledger.DropAfterExecute{}})
	}
}

func followUp500() upstream.Fault {
	return upstream.Fault{On: wire.KindFollowUp, Respond: &upstream.Respond{Status: 500}}
}

// stdioDeath is a stdio ledger whose first times processes exit at point
// (see dyingCommand).
type stdioDeath struct {
	point string
	times int
}

// TestEachSwitchAlone runs, for every switch, a scenario that exposes it,
// once guarded and once with that switch alone, and checks both outcomes and
// that exactly the expected counts differ.
func TestEachSwitchAlone(t *testing.T) {
	oneChat := func(t *testing.T, r *rig) observed {
		status, _ := r.post(pathChat, seedBody(pathChat, seedAsk, false, false))
		return r.observe([]int{status}, 0)
	}
	type switchCase struct {
		name     string
		bug      Bug
		tweak    func(*Config)
		stdio    *stdioDeath   // the gateway spawns a stdio ledger that dies so
		ledger   ledger.Config // the ledger's configuration (Path aside); zero: sessionLedger
		arm      func(t *testing.T, r *rig)
		run      func(t *testing.T, r *rig) observed
		guarded  observed
		switched observed
		differ   []string
	}
	tests := []switchCase{
		{
			name: "killed after the tool ran, then resumed", bug: CheckpointAtTurnEnd,
			run:      func(t *testing.T, r *rig) observed { return r.killAndResume(t) },
			guarded:  observed{Statuses: []int{0}, Calls: 1, Writes: 1, Cancellations: 1, Initial: 2, FollowUp: 1},
			switched: observed{Statuses: []int{0}, Calls: 2, Writes: 2, Cancellations: 1, Initial: 2, FollowUp: 1},
			differ:   []string{"Calls", "Writes"},
		},
		{
			name: "follow-up 500 after the tool ran", bug: ReplayAfterDispatch,
			arm:      func(t *testing.T, r *rig) { armUpstream(t, r, nil, followUp500()) },
			run:      oneChat,
			guarded:  observed{Statuses: []int{500}, Calls: 1, Writes: 1, Initial: 1, FollowUp: 1},
			switched: observed{Statuses: []int{500}, Calls: 3, Writes: 3, Initial: 3, FollowUp: 3},
			differ:   []string{"Calls", "Writes", "Initial", "FollowUp"},
		},
		{
			name: "streamed follow-up dropped, with a fallback", bug: StreamSplice,
			tweak: func(c *Config) { c.Fallbacks = map[string]string{"repro-model": "backup-model"} },
			arm: func(t *testing.T, r *rig) {
				armUpstream(t, r, nil, upstream.Fault{On: wire.KindFollowUp, Drop: &upstream.Drop{After: upstream.DropAfterHeaders}})
			},
			run: func(t *testing.T, r *rig) observed {
				status, body := r.post(pathChat, seedBody(pathChat, seedAsk, false, true))
				return r.observe([]int{status}, countLines(body, `data: {"id"`))
			},
			guarded:  observed{Statuses: []int{200}, Calls: 1, Writes: 1, Initial: 1, FollowUp: 1, Chunks: 7},
			switched: observed{Statuses: []int{200}, Calls: 2, Writes: 2, Initial: 2, FollowUp: 2, Chunks: 14},
			differ:   []string{"Calls", "Writes", "Initial", "FollowUp", "Chunks"},
		},
		{
			name: "connection dropped after the tool ran", bug: MCPResendOnDisconnect,
			arm:      dropOnceAfterExecute(ledger.ToolCommitWrite),
			run:      oneChat,
			guarded:  observed{Statuses: []int{200}, Calls: 1, Writes: 1, Initial: 1, FollowUp: 1},
			switched: observed{Statuses: []int{200}, Calls: 2, Writes: 2, Initial: 1, FollowUp: 1},
			differ:   []string{"Calls", "Writes"},
		},
		{
			name: "three isError results, then a good call", bug: BreakerCountsToolErrors,
			arm: func(t *testing.T, r *rig) {
				armLedger(t, r, ledger.Fault{Tool: ledger.ToolCommitWrite, Times: fault.Times{Count: 3}, IsError: &ledger.IsError{Message: "entry not found"}})
			},
			run: func(t *testing.T, r *rig) observed {
				var statuses []int
				for range 4 {
					status, _ := r.post(pathChat, seedBody(pathChat, seedAsk, false, false))
					statuses = append(statuses, status)
				}
				return r.observe(statuses, 0)
			},
			guarded:  observed{Statuses: []int{200, 200, 200, 200}, Calls: 4, Writes: 1, Initial: 4, FollowUp: 4},
			switched: observed{Statuses: []int{200, 200, 200, 200}, Calls: 3, Writes: 0, Initial: 4, FollowUp: 4},
			differ:   []string{"Calls", "Writes"},
		},
		{
			name: "initial 400", bug: RetryEverything,
			arm: func(t *testing.T, r *rig) {
				armUpstream(t, r, nil, upstream.Fault{On: wire.KindInitial, Respond: &upstream.Respond{Status: 400}})
			},
			run:      oneChat,
			guarded:  observed{Statuses: []int{400}, Initial: 1},
			switched: observed{Statuses: []int{400}, Initial: 3},
			differ:   []string{"Initial"},
		},
		{
			name: "initial 503 with x-should-retry: false", bug: RetryEverything,
			arm: func(t *testing.T, r *rig) {
				armUpstream(t, r, nil, upstream.Fault{On: wire.KindInitial, Respond: &upstream.Respond{Status: 503, Headers: map[string]string{"x-should-retry": "false"}}})
			},
			run:      oneChat,
			guarded:  observed{Statuses: []int{503}, Initial: 1},
			switched: observed{Statuses: []int{503}, Initial: 3},
			differ:   []string{"Initial"},
		},
		{
			name: "initial 429 asking for longer than the wait budget", bug: RetryEverything,
			arm: func(t *testing.T, r *rig) {
				armUpstream(t, r, nil, upstream.Fault{On: wire.KindInitial, Respond: &upstream.Respond{Status: 429, Headers: map[string]string{"Retry-After": "3600"}}})
			},
			run:      oneChat,
			guarded:  observed{Statuses: []int{429}, Initial: 1},
			switched: observed{Statuses: []int{429}, Initial: 3},
			differ:   []string{"Initial"},
		},
		{
			name: "tool call slower than the tool timeout", bug: NoCancelOnTimeout,
			tweak: func(c *Config) { c.ToolTimeout = 100 * time.Millisecond },
			arm: func(t *testing.T, r *rig) {
				d := fault.Duration(time.Second)
				armLedger(t, r, ledger.Fault{Tool: ledger.ToolCommitWrite, Delay: &d})
			},
			run: func(t *testing.T, r *rig) observed {
				status, _ := r.post(pathChat, seedBody(pathChat, seedAsk, false, false))
				if !r.gw.Bugs().Has(NoCancelOnTimeout) {
					// The cancellation reaches the ledger after the app's answer.
					r.waitLedger(func(c wire.MCPCounts) bool { return c.Cancellations > 0 })
				}
				return r.observe([]int{status}, 0)
			},
			guarded:  observed{Statuses: []int{200}, Calls: 1, Writes: 1, Cancellations: 1, Initial: 1, FollowUp: 1},
			switched: observed{Statuses: []int{200}, Calls: 1, Writes: 1, Cancellations: 0, Initial: 1, FollowUp: 1},
			differ:   []string{"Cancellations"},
		},
		{
			name: "keyed write, follow-up 500", bug: FreshKeyPerAttempt,
			arm: func(t *testing.T, r *rig) {
				script := upstream.Script{Steps: []upstream.Step{
					{Call: ledger.ToolCommitWriteKeyed, Arguments: map[string]any{"entry": "{{entry}}"}},
					{Say: "done"},
				}}
				armUpstream(t, r, &script, followUp500())
			},
			run:      oneChat,
			guarded:  observed{Statuses: []int{500}, Calls: 3, Writes: 1, Keys: 1, Initial: 3, FollowUp: 3},
			switched: observed{Statuses: []int{500}, Calls: 3, Writes: 3, Keys: 3, Initial: 3, FollowUp: 3},
			differ:   []string{"Writes", "Keys"},
		},
		{
			name: "streamed chat cut after its tool call", bug: RunToolsFromCutStream,
			arm: func(t *testing.T, r *rig) { armUpstream(t, r, nil, cutAfterToolCall()) },
			run: func(t *testing.T, r *rig) observed {
				status, body := r.post(pathChat, seedBody(pathChat, seedAsk, false, true))
				return r.observe([]int{status}, countLines(body, `data: {"id"`))
			},
			guarded:  observed{Statuses: []int{200}, Initial: 1, Chunks: 6},
			switched: observed{Statuses: []int{200}, Calls: 2, Writes: 2, Initial: 2, FollowUp: 1, Chunks: 19},
			differ:   []string{"Calls", "Writes", "Initial", "FollowUp", "Chunks"},
		},
		{
			name: "streamed responses cut after its function call", bug: RunToolsFromCutStream,
			arm: func(t *testing.T, r *rig) { armUpstream(t, r, nil, cutAfterToolCall()) },
			run: func(t *testing.T, r *rig) observed {
				status, _ := r.post(pathResponses, seedBody(pathResponses, seedAsk, false, true))
				return r.observe([]int{status}, 0)
			},
			guarded:  observed{Statuses: []int{200}, Calls: 1, Writes: 1, Initial: 2, FollowUp: 1},
			switched: observed{Statuses: []int{200}, Calls: 2, Writes: 2, Initial: 2, FollowUp: 1},
			differ:   []string{"Calls", "Writes"},
		},
		{
			name: "streamed messages cut after its function call", bug: RunToolsFromCutStream,
			arm: func(t *testing.T, r *rig) { armUpstream(t, r, nil, cutAfterToolCall()) },
			run: func(t *testing.T, r *rig) observed {
				status, _ := r.post(pathMessages, seedBody(pathMessages, seedAsk, false, true))
				return r.observe([]int{status}, 0)
			},
			guarded:  observed{Statuses: []int{200}, Calls: 1, Writes: 1, Initial: 2, FollowUp: 1},
			switched: observed{Statuses: []int{200}, Calls: 2, Writes: 2, Initial: 2, FollowUp: 1},
			differ:   []string{"Calls", "Writes"},
		},
		{
			name: "streamed responses cut after a keyed call", bug: RunToolsFromCutStream,
			arm: func(t *testing.T, r *rig) {
				script := upstream.Script{Steps: []upstream.Step{
					{Call: ledger.ToolCommitWriteKeyed, Arguments: map[string]any{"entry": "{{entry}}"}},
					{Say: "done"},
				}}
				armUpstream(t, r, &script, cutAfterToolCall())
			},
			run: func(t *testing.T, r *rig) observed {
				status, _ := r.post(pathResponses, seedBody(pathResponses, seedAsk, false, true))
				return r.observe([]int{status}, 0)
			},
			// The call the model makes again is the same logical action: same key.
			guarded:  observed{Statuses: []int{200}, Calls: 1, Writes: 1, Keys: 1, Initial: 2, FollowUp: 1},
			switched: observed{Statuses: []int{200}, Calls: 2, Writes: 1, Keys: 1, Initial: 2, FollowUp: 1},
			differ:   []string{"Calls"},
		},
		{
			name: "streamed chat cut in the middle of its tool call", bug: RunToolsFromCutStream,
			arm: func(t *testing.T, r *rig) {
				armUpstream(t, r, nil, upstream.Fault{On: wire.KindInitial, Times: fault.Once, Drop: &upstream.Drop{After: upstream.DropAfterEvents, Events: 3}})
			},
			run: func(t *testing.T, r *rig) observed {
				status, body := r.post(pathChat, seedBody(pathChat, seedAsk, false, true))
				return r.observe([]int{status}, countLines(body, `data: {"id"`))
			},
			// Incomplete arguments run nothing: the switch changes no count.
			guarded:  observed{Statuses: []int{200}, Initial: 1, Chunks: 3},
			switched: observed{Statuses: []int{200}, Initial: 1, Chunks: 3},
			differ:   nil,
		},
		{
			name: "tool renamed after the first request's call", bug: StaleToolList,
			arm: func(t *testing.T, r *rig) {
				armLedger(t, r, ledger.Fault{Tool: ledger.ToolCommitWrite, Times: fault.Once,
					ChangeTools: &ledger.ChangeTools{Rename: ledger.ToolCommitWrite, To: "record_entry"}})
			},
			run: func(t *testing.T, r *rig) observed {
				var statuses []int
				for range 2 {
					status, _ := r.post(pathChat, seedBody(pathChat, seedAsk, false, false))
					statuses = append(statuses, status)
				}
				return r.observe(statuses, 0)
			},
			// Guarded offers record_entry, which the script's commit_write
			// does not match: the model answers done. The stale list offers
			// commit_write, whose call gets the unknown-tool error.
			guarded:  observed{Statuses: []int{200, 200}, Calls: 1, Writes: 1, Initial: 2, FollowUp: 1},
			switched: observed{Statuses: []int{200, 200}, Calls: 2, Writes: 1, Initial: 2, FollowUp: 2},
			differ:   []string{"Calls", "FollowUp"},
		},
		{
			name: "tool added after the first request's call", bug: StaleToolList,
			arm: func(t *testing.T, r *rig) {
				armLedger(t, r, ledger.Fault{Tool: ledger.ToolCommitWrite, Times: fault.Once,
					ChangeTools: &ledger.ChangeTools{Add: "record_entry"}})
			},
			run: func(t *testing.T, r *rig) observed {
				var statuses []int
				for range 2 {
					status, _ := r.post(pathChat, seedBody(pathChat, seedAsk, false, false))
					statuses = append(statuses, status)
				}
				o := r.observe(statuses, 0)
				if reqs := r.upstream.Requests(""); len(reqs) > 0 {
					o.Offered = reqs[len(reqs)-1].Offered
				}
				return o
			},
			// The script calls commit_write in both requests; only what
			// the second one offers differs: the stale list lacks record_entry.
			guarded: observed{Statuses: []int{200, 200}, Calls: 2, Writes: 2, Initial: 2, FollowUp: 2,
				Offered: []string{"ledger-commit_write", "ledger-commit_write_keyed", "ledger-read_ledger", "ledger-record_entry"}},
			switched: observed{Statuses: []int{200, 200}, Calls: 2, Writes: 2, Initial: 2, FollowUp: 2,
				Offered: []string{"ledger-commit_write", "ledger-commit_write_keyed", "ledger-read_ledger"}},
			differ: []string{"Offered"},
		},
		{
			name: "session expired after the tool ran", bug: MCPResendOnSessionExpiry,
			arm: func(t *testing.T, r *rig) {
				armLedger(t, r, ledger.Fault{Tool: ledger.ToolCommitWrite, Times: fault.Once,
					ExpireSession: &ledger.ExpireSession{After: ledger.ExpireAfterExecute}})
			},
			run:      oneChat,
			guarded:  observed{Statuses: []int{200}, Calls: 1, Writes: 1, Initial: 1, FollowUp: 1},
			switched: observed{Statuses: []int{200}, Calls: 2, Writes: 2, Initial: 1, FollowUp: 1},
			differ:   []string{"Calls", "Writes"},
		},
		{
			name: "tools/call refused as unauthorized for good", bug: MCPRetryUnauthorized,
			arm: func(t *testing.T, r *rig) {
				armLedger(t, r, ledger.Fault{Tool: ledger.ToolCommitWrite, Unauthorized: &ledger.Unauthorized{}})
			},
			run: oneChat,
			// The transport re-authorizes once and sends the call again;
			// the switch then sends it on 3 new sessions, each twice.
			guarded:  observed{Statuses: []int{200}, Calls: 2, Initial: 1, FollowUp: 1},
			switched: observed{Statuses: []int{200}, Calls: 8, Initial: 1, FollowUp: 1},
			differ:   []string{"Calls"},
		},
		{
			name: "stdio server exits after executing", bug: MCPReplayAfterStdioDeath,
			stdio: &stdioDeath{point: dieAfterExecute, times: 1},
			run:   oneChat,
			// The follow-up round lists the tools on a new process; the
			// switch sends the call on it again.
			guarded:  observed{Statuses: []int{200}, Calls: 1, Writes: 1, Initial: 1, FollowUp: 1, Spawns: 2},
			switched: observed{Statuses: []int{200}, Calls: 2, Writes: 2, Initial: 1, FollowUp: 1, Spawns: 2},
			differ:   []string{"Calls", "Writes"},
		},
		{
			name: "2026-07-28 stream broken after the tool ran", bug: MCPReissueWithoutKey,
			ledger: ledger.Config{Stateless: true},
			arm:    dropOnceAfterExecute(ledger.ToolCommitWrite),
			run:    oneChat,
			// Guarded holds the non-idempotent call; the switch re-issues it.
			guarded:  observed{Statuses: []int{200}, Calls: 1, Writes: 1, Initial: 1, FollowUp: 1},
			switched: observed{Statuses: []int{200}, Calls: 2, Writes: 2, Initial: 1, FollowUp: 1},
			differ:   []string{"Calls", "Writes"},
		},
		{
			name: "2026-07-28 keyed write's stream broken after it ran", bug: MCPReissueWithoutKey,
			ledger: ledger.Config{Stateless: true},
			arm: func(t *testing.T, r *rig) {
				script := upstream.Script{Steps: []upstream.Step{
					{Call: ledger.ToolCommitWriteKeyed, Arguments: map[string]any{"entry": "{{entry}}"}},
					{Say: "done"},
				}}
				armUpstream(t, r, &script)
				armLedger(t, r, ledger.Fault{Tool: ledger.ToolCommitWriteKeyed, Times: fault.Once, DropAfterExecute: &ledger.DropAfterExecute{}})
			},
			run: oneChat,
			// Both re-issue the call; guarded with the same key, which the
			// ledger deduplicates.
			guarded:  observed{Statuses: []int{200}, Calls: 2, Writes: 1, Keys: 1, Initial: 1, FollowUp: 1},
			switched: observed{Statuses: []int{200}, Calls: 2, Writes: 2, Keys: 2, Initial: 1, FollowUp: 1},
			differ:   []string{"Writes", "Keys"},
		},
	}
	// Every dialect, plain and streamed: the upstream answers as another model.
	for _, d := range []struct{ name, path string }{{"chat", pathChat}, {"responses", pathResponses}, {"messages", pathMessages}} {
		path := d.path
		for _, stream := range []bool{false, true} {
			name := d.name + " answered by another model"
			if stream {
				name = "streamed " + name
			}
			tests = append(tests, switchCase{
				name: name, bug: HideServedModel,
				arm: func(t *testing.T, r *rig) { armUpstream(t, r, nil, serveFallback()) },
				run: func(t *testing.T, r *rig) observed {
					status, body := r.post(path, seedBody(path, seedAsk, false, stream))
					o := r.observe([]int{status}, 0)
					o.Models = answerModels(body)
					return o
				},
				guarded:  observed{Statuses: []int{200}, Calls: 1, Writes: 1, Initial: 1, FollowUp: 1, Models: []string{"fallback-mini"}},
				switched: observed{Statuses: []int{200}, Calls: 1, Writes: 1, Initial: 1, FollowUp: 1, Models: []string{"repro-model"}},
				differ:   []string{"Models"},
			})
		}
	}
	covered := map[Bug]bool{}
	for _, tt := range tests {
		covered[tt.bug] = true
	}
	for _, info := range AllBugs() {
		if !covered[info.Bug] {
			t.Errorf("switch %s has no scenario here", info.Bug)
		}
	}
	for _, tt := range tests {
		t.Run(string(tt.bug)+"/"+tt.name, func(t *testing.T) {
			t.Parallel()
			run := func(bugs Bugs) observed {
				tweak := tt.tweak
				if tt.stdio != nil {
					dir := t.TempDir()
					tweak = func(c *Config) { c.MCPCommand = dyingCommand(t, dir, tt.stdio.point, tt.stdio.times, c.MCP) }
				}
				lcfg := tt.ledger
				if !lcfg.Stateless && lcfg.Protocol == "" {
					lcfg.Protocol = sessionLedger.Protocol // the rows not about 2026-07-28
				}
				r := newLedgerRig(t, lcfg, bugs, tweak)
				if tt.arm != nil {
					tt.arm(t, r)
				}
				return tt.run(t, r)
			}
			guarded := run(nil)
			switched := run(Bugs{tt.bug: true})
			if diff := cmp.Diff(tt.guarded, guarded); diff != "" {
				t.Errorf("guarded (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.switched, switched); diff != "" {
				t.Errorf("%s alone (-want +got):\n%s", tt.bug, diff)
			}
			if got := differing(guarded, switched); !slices.Equal(got, tt.differ) {
				t.Errorf("counts that differ = %v, want %v", got, tt.differ)
			}
		})
	}
}
