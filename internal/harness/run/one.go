package run

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/fakepair"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/procnet"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// settleGrace bounds the wait, after the last answer, for the ledger's calls
// of a run to end (answered, cancelled or faulted).
const settleGrace = time.Second

// runOne runs j's scenario once on inst and records its history: it arms
// the fakes under a run token of its own, sends the scenario's requests, and
// collects what the fakes saw. A run that cannot be armed ends with h.Error
// set.
func runOne(ctx context.Context, j job, env *fakepair.Pair, inst target.Instance, opts Options) *history.History {
	s, t := j.s, j.t
	start := opts.Now()
	at := func(tm time.Time) history.Duration { return history.Duration(tm.Sub(start)) }
	h := newHistory(s, t, inst, j.token(opts.Seed), start)
	h.Repetition = j.rep
	timeout := opts.Timeout
	if s.Timeout > 0 {
		timeout = s.Timeout.D()
	}
	late := opts.probe.watch(start)
	defer func() {
		h.Duration = at(opts.Now())
		if opts.probe != nil {
			most, stalls := late()
			h.Harness = &history.Harness{Lateness: history.Duration(most), Deadline: history.Duration(timeout), Stalls: stalls}
		}
	}()
	a, err := arm(s, t, inst, env, h)
	if err != nil {
		h.Error = err.Error()
		return h
	}
	// After collect: a client's own addresses stay open until its run's
	// traffic has been counted.
	defer a.release()
	kill, disarm, err := armKill(s, env, a.token, timeout, h, at)
	if err != nil {
		h.Error = err.Error()
		return h
	}
	a.kill = kill
	last := func() time.Time { return lastSeen(env, a.token) }
	send(ctx, a, inst, timeout, last, opts.Now, at, h)
	// The kill points' holds are the harness's, not the scenario's faults.
	disarm()
	collect(ctx, h, env, a, start, opts.Now, at)
	return h
}

// newHistory starts the history of a run of s on inst with token: what the
// scenario asks and how the target is set up (nil inst: an instance that
// did not start, set up as nothing).
func newHistory(s *scenario.Scenario, t target.Target, inst target.Instance, token string, start time.Time) *history.History {
	h := &history.History{
		Scenario: s.Name, File: s.File, Tags: s.Tags, Target: t.Name(), Token: token, Entry: scenario.Entry(token),
		Started: start.UTC().Format(time.RFC3339Nano), Expect: s.Expect,
	}
	if inst != nil {
		h.Setup = inst.Limits()
	}
	h.Setup.Tools = s.Model.Calls()
	h.Setup.ToolCalls = len(h.Setup.Tools)
	h.Setup.UpstreamFaults = rawJSON(s.Faults.Upstream)
	h.Setup.MCPFaults = rawJSON(s.Faults.MCP)
	h.Setup.Annotations = rawJSON(s.Annotations)
	return h
}

// armed is a scenario run whose fakes are armed: what to send, and where.
type armed struct {
	token    string
	requests []scenario.Request
	// own, for a client target, are the run's own fake addresses, and
	// ownMCP the listener of its MCP address; nil otherwise.
	own    *target.Fakes
	ownMCP *procnet.Listener
	// release closes the run's own addresses; it is never nil.
	release func()
	// output returns what the target printed since it was armed; nil when
	// the target's output is not captured (see target.Instance.Output).
	output func() []string
	// kill, when set, kills the target and resumes it during the first
	// request (the scenario's faults.target).
	kill *target.Kill
}

// arm renders s for h's token, adds the instance's notes and the target's
// retry hint (see target.Instance.Notes, target.Traits) to h, arms the upstream
// fake with the model script or a player of its cassette of the run's own,
// and both fakes with the scenario's faults, and
// gives a client target addresses of the run's own (see target.Traits).
func arm(s *scenario.Scenario, t target.Target, inst target.Instance, env *fakepair.Pair, h *history.History) (*armed, error) {
	token := h.Token
	r, err := s.Render(token)
	if err != nil {
		return nil, err
	}
	h.Notes = append(h.Notes, inst.Notes()...)
	hint := s.RetryAfterHint.D()
	if hint <= 0 {
		hint = t.Traits().RetryAfterHint
	}
	if hint > 0 && addRetryHint(r.Faults.Upstream, hint) {
		h.Notes = append(h.Notes, fmt.Sprintf("retry_after_hint %s: injected error responses carry retry-after-ms and Retry-After (this changes the behaviour under test)", hint))
		h.Setup.UpstreamFaults = rawJSON(r.Faults.Upstream)
	}
	a := &armed{token: token, requests: r.Requests, release: func() {}}
	if out := inst.Output(); out != nil {
		seq := out.Seq()
		a.output = func() []string { return out.Since(seq) }
	}
	if player := s.Model.Player(); player != nil {
		err = env.Upstream().ArmCassette(token, player, r.Faults.Upstream)
	} else {
		err = env.Upstream().Arm(token, &r.Script, r.Faults.Upstream)
	}
	if err != nil {
		return nil, fmt.Errorf("arming the upstream fake: %w", err)
	}
	if err := env.Ledger().Arm(token, r.Faults.MCP); err != nil {
		return nil, fmt.Errorf("arming the ledger: %w", err)
	}
	if t.Traits().Client {
		o, err := env.Own(token)
		if err != nil {
			return nil, err
		}
		a.own = &target.Fakes{Upstream: o.UpstreamURL(), MCP: o.MCPURL()}
		a.ownMCP, a.release = o.MCPListener(), func() { o.Close() }
	}
	return a, nil
}

// send sends a's requests in order through inst within the run's deadline
// (see activityDeadline: timeout, restarted by what the fakes see of the run
// at last) and records each exchange in h. It stops at the first request
// whose answer did not end: a client that could not run or was killed, a
// hang past the deadline, or an interruption (ctx done); h.Error then says
// which.
func send(ctx context.Context, a *armed, inst target.Instance, timeout time.Duration, last, now func() time.Time, at func(time.Time) history.Duration, h *history.History) {
	rctx, cancel := activityDeadline(ctx, timeout, last, now)
	defer cancel()
	for i, req := range a.requests {
		begin := now()
		r := target.Request{Request: req, Token: a.token, Fakes: a.own}
		if i == 0 {
			r.Kill = a.kill
		}
		x := inst.Send(rctx, r)
		x.Start, x.End = at(begin), at(now())
		h.Requests = append(h.Requests, x)
		if x.Client != nil && x.Client.Error != "" {
			h.Error = x.Client.Error
			return
		}
		if x.TimedOut || rctx.Err() != nil {
			switch {
			case x.Client != nil && x.Client.Killed:
				h.Error = x.TransportError
			case ctx.Err() != nil:
				h.Error = "interrupted before the answer to POST " + x.Path + " ended"
			default:
				h.Error = fmt.Sprintf("the target gave no complete answer to POST %s: %v (a hang)", x.Path, context.Cause(rctx))
			}
			return
		}
	}
}

// busyRounds bounds a run whose target keeps the fakes busy without
// answering (a retry loop): it ends busyRounds times its deadline after it
// started.
const busyRounds = 10

// activityDeadline returns a context that ends when the fakes have seen
// nothing of the run for timeout since it started or since last (the time
// of the run's latest model request or MCP event) — a deadline that
// restarts on the run's activity, so a machine that runs the harness and
// the target slowly stretches the run instead of cutting it — or, however
// busy, busyRounds times timeout after it started. Its cause then wraps
// context.DeadlineExceeded and says which.
func activityDeadline(ctx context.Context, timeout time.Duration, last, now func() time.Time) (context.Context, context.CancelFunc) {
	rctx, cancel := context.WithCancelCause(ctx)
	start := now()
	go func() {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-timer.C:
			}
			t := now()
			if busy := t.Sub(start); busy >= busyRounds*timeout {
				cancel(fmt.Errorf("the run was still going on %s after it started, %d times its %s deadline: %w", busy.Round(time.Millisecond), busyRounds, timeout, context.DeadlineExceeded))
				return
			}
			quiet := t.Sub(start)
			if l := last(); l.After(start) {
				quiet = t.Sub(l)
			}
			if quiet >= timeout {
				cancel(fmt.Errorf("the fakes saw nothing of the run for its %s deadline: %w", timeout, context.DeadlineExceeded))
				return
			}
			timer.Reset(min(timeout-quiet, start.Add(busyRounds*timeout).Sub(t)))
		}
	}()
	return rctx, func() { cancel(context.Canceled) }
}

// lastSeen returns the time of the latest model request and MCP event of
// token the fakes of env recorded; the zero time when there is none.
func lastSeen(env *fakepair.Pair, token string) time.Time {
	var t time.Time
	if rs := env.Upstream().Requests(token); len(rs) > 0 {
		t = rs[len(rs)-1].Time
	}
	if es := env.Ledger().Events(token); len(es) > 0 && es[len(es)-1].Time.After(t) {
		t = es[len(es)-1].Time
	}
	return t
}

// collect waits for the run's tool calls to settle, then adds to h what the
// fakes saw for the run's token, what became of its armed faults, what the
// target printed meanwhile, and the traffic no run owned that arrived between
// start and now.
func collect(ctx context.Context, h *history.History, env *fakepair.Pair, a *armed, start time.Time, now func() time.Time, at func(time.Time) history.Duration) {
	token := a.token
	var own *procnet.Listener
	switch {
	case a.ownMCP != nil:
		own = a.ownMCP
	case env.Owner() != "":
		own = env.MCPListener()
	}
	settle(ctx, env.Ledger(), token, own)
	end := now()
	if a.output != nil {
		h.TargetOutput = a.output()
	}
	// The history stores the fakes' records as they are, with their times
	// as offsets from the run's start.
	h.Upstream = append(h.Upstream, env.Upstream().Requests(token)...)
	for i := range h.Upstream {
		h.Upstream[i].At = at(h.Upstream[i].Time)
	}
	h.MCP = append(h.MCP, env.Ledger().Events(token)...)
	for i := range h.MCP {
		h.MCP[i].At = at(h.MCP[i].Time)
	}
	sort.SliceStable(h.Upstream, func(i, j int) bool { return h.Upstream[i].At < h.Upstream[j].At })
	sort.SliceStable(h.MCP, func(i, j int) bool { return h.MCP[i].At < h.MCP[j].At })
	for i := range h.Requests {
		if x := &h.Requests[i]; x.Client != nil {
			x.Paths = calledPaths(h.Upstream, x.Start, x.End)
		}
	}
	for _, f := range slices.Concat(env.Upstream().FaultReports(token), env.Ledger().FaultReports(token)) {
		h.Faults = append(h.Faults, f.OfRun())
	}
	h.Unattributed = unattributed(env, start, end)
	// The history holds what the run needs: the fakes, which a long repeat
	// shares across all its runs, let go of it.
	env.Upstream().Forget(token)
	env.Ledger().Forget(token)
}

// calledPaths returns the distinct model API paths of the upstream requests
// between start and end, in order of first call.
func calledPaths(ups []wire.UpstreamRequest, start, end history.Duration) []string {
	var out []string
	for _, u := range ups {
		if u.At >= start && u.At <= end && !slices.Contains(out, u.Path) {
			out = append(out, u.Path)
		}
	}
	return out
}

// maxUnattributedSamples bounds the samples of unattributed traffic kept in
// a history.
const maxUnattributedSamples = 5

// unattributed returns the model requests and tool calls that no run owned
// (no run token, not at a run's own address) which the fakes saw between
// start and end, or nil when there were none.
func unattributed(env *fakepair.Pair, start, end time.Time) *history.Unattributed {
	var u history.Unattributed
	sample := func(s string) {
		if len(u.Samples) < maxUnattributedSamples {
			u.Samples = append(u.Samples, s)
		}
	}
	in := func(t time.Time) bool { return !t.Before(start) && !t.After(end) }
	for _, r := range env.Upstream().Requests("") {
		if in(r.Time) {
			u.Upstream++
			sample("POST " + r.Path + " " + r.CountKey().String())
		}
	}
	for _, e := range env.Ledger().Events("") {
		if e.Kind == wire.MCPCall && in(e.Time) {
			u.MCP++
			sample("tools/call " + e.Tool)
		}
	}
	if u.Upstream == 0 && u.MCP == 0 {
		return nil
	}
	return &u
}

// addRetryHint adds retry-after-ms (d in milliseconds) and Retry-After (d in
// whole seconds, rounded up) to every fault that answers with an error and
// sets neither; it reports whether any got them.
func addRetryHint(faults []upstream.Fault, d time.Duration) bool {
	added := false
	for i := range faults {
		rs := faults[i].Respond
		if rs == nil {
			continue
		}
		has := false
		for k := range rs.Headers {
			has = has || strings.EqualFold(k, "retry-after-ms") || strings.EqualFold(k, "retry-after")
		}
		if has {
			continue
		}
		headers := maps.Clone(rs.Headers)
		if headers == nil {
			headers = map[string]string{}
		}
		headers["retry-after-ms"] = strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64)
		// Whole seconds, as HTTP's delay-seconds requires (a strict client
		// rejects "0.001"), rounded up so it never asks for less than d.
		headers["Retry-After"] = strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
		cp := *rs
		cp.Headers = headers
		faults[i].Respond = &cp
		added = true
	}
	return added
}

// settle waits, up to settleGrace, until every tools/call of the token has
// ended: answered, cancelled, refused or dropped, and every ledger-stdio
// process a later one replaced has reported its end (see replacedEnded). A
// target that abandons a call without cancelling it leaves it running; the
// wait then gives up.
// With own, the listener of the run's own MCP address, it then waits until
// the ledger has taken in everything that arrived there (see drained), and
// if it had not, for the calls to end once more: what the target sent is
// counted however late a busy machine lets the ledger read it — a call its
// target timed out and cancelled before the ledger read it is still the
// target's call, and still cancelled.
func settle(ctx context.Context, l *ledger.Server, token string, own *procnet.Listener) {
	over := func(wire.MCPCounts) bool {
		evs := l.Events(token)
		return ended(evs) && replacedEnded(evs)
	}
	grace, cancel := context.WithTimeout(ctx, settleGrace)
	_, _ = l.WaitFor(grace, token, over)
	cancel()
	if own == nil || !drained(ctx, own) {
		return
	}
	grace, cancel = context.WithTimeout(ctx, settleGrace)
	defer cancel()
	_, _ = l.WaitFor(grace, token, over)
}

// drainLimit bounds drained's wait: far more than a ledger takes to read
// what arrived, also on a saturated machine.
const drainLimit = 10 * time.Second

// drained waits, up to drainLimit or the end of ctx, until ln holds no
// input its server has not taken in (procnet.Listener.Pending), and reports
// whether it had to wait. Where the system cannot tell it returns false at
// once.
func drained(ctx context.Context, ln *procnet.Listener) bool {
	ctx, cancel := context.WithTimeout(ctx, drainLimit)
	defer cancel()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for waited := false; ; waited = true {
		if pending, err := ln.Pending(); err != nil || !pending {
			return waited
		}
		select {
		case <-ctx.Done():
			return waited
		case <-tick.C:
		}
	}
}

// ended reports whether every call event has a terminal event of the same
// request id after it: its answer, its cancellation, a fault that ended it
// (wire.MCPFaultMeaning.EndsCall),
// or the death of the stdio server process that had it in flight.
func ended(evs []wire.MCPEvent) bool {
	open := map[string]int{}
	for _, e := range evs {
		_, inFlight := e.IsExit()
		m, isFault := e.FaultMeaning()
		switch {
		case e.Kind == wire.MCPCall:
			open[e.RequestID]++
		case e.Kind == wire.MCPResult, e.Kind == wire.MCPCancelled, inFlight,
			isFault && m.EndsCall:
			if open[e.RequestID] > 0 {
				open[e.RequestID]--
			}
		}
	}
	for _, n := range open {
		if n > 0 {
			return false
		}
	}
	return true
}

// replacedEnded reports whether every ledger-stdio process spawned before
// the run's latest spawn has reported its end (an MCPExit of its pid): a
// client that spawned another has let it go, and its end says what it never
// did with the calls it had (wire.MCPUnforwarded), which a starved process
// may report after the target has moved on. The latest process may serve on.
func replacedEnded(evs []wire.MCPEvent) bool {
	var spawned []string
	exited := map[string]bool{}
	for _, e := range evs {
		switch e.Kind {
		case wire.MCPSpawn:
			spawned = append(spawned, e.PID)
		case wire.MCPExit:
			exited[e.PID] = true
		}
	}
	for i := 0; i < len(spawned)-1; i++ {
		if !exited[spawned[i]] {
			return false
		}
	}
	return true
}

func rawJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" || string(b) == "[]" || string(b) == "{}" {
		return nil
	}
	return b
}
