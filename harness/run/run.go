// Package run runs scenarios against targets: it starts the fakes and the
// targets on loopback listeners, gives every scenario run a token, arms the
// fakes under it, sends the scenario's requests with a deadline, reads the
// whole answers, and collects what the fakes saw for that token into a
// history. It does not judge; package rules does.
//
// Targets are the built-in gateway (ParseTarget) or target files
// (LoadTargetFile): kind proxy, a gateway at a URL that the harness may start
// in a process group of its own with a config rendered from the fakes' URLs,
// and kind client, a command run once per scenario request with an
// environment pointing at the fakes. ResolveTarget takes either.
package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/harness/history"
	"github.com/replaycheck/replaycheck/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/runtoken"
)

// DefaultTimeout bounds one scenario run when neither the scenario nor the
// options set a timeout.
const DefaultTimeout = 30 * time.Second

// settleGrace bounds the wait, after the last answer, for the ledger's calls
// of a run to end (answered, cancelled or faulted).
const settleGrace = time.Second

// Options configure Run. The zero value runs on no target.
type Options struct {
	// Targets are the systems under test; every scenario runs on each.
	Targets []Target
	// Parallel is the number of scenario runs at once; 0 means NumCPU.
	Parallel int
	// Timeout bounds each scenario run; 0 means DefaultTimeout. A scenario's
	// own timeout wins.
	Timeout time.Duration
	// Seed is mixed into every run token; the same seed gives the same tokens.
	Seed string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnHistory, when set, is called with each history as its run ends, one
	// call at a time.
	OnHistory func(*history.History)
	// Logger receives what the harness does; nil discards.
	Logger *slog.Logger
}

// Run runs every scenario on every target it applies to (see Applies) and
// returns their histories in scenario order, then target order. A scenario
// that hangs or fails ends as a history with Error set; Run itself fails only
// when the harness cannot run (a fake or a target cannot start).
//
// Targets whose fakes listen on fixed addresses, or whose started process
// listens on a fixed port, run after the others, on fakes of their own: first
// their shared scenarios, then their isolated ones one at a time.
func Run(ctx context.Context, scenarios []*scenario.Scenario, opts Options) ([]*history.History, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Parallel <= 0 {
		opts.Parallel = runtime.NumCPU()
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	var jobs []job
	for _, s := range scenarios {
		for _, t := range opts.Targets {
			if Applies(s, t) {
				jobs = append(jobs, job{s, t, len(jobs)})
			}
		}
	}
	out := make([]*history.History, len(jobs))
	if len(jobs) == 0 {
		return out, nil
	}
	r := &runner{opts: opts, out: out}
	// Groups: the targets that share port-0 fakes, then each exclusive target.
	var free []job
	exclusive := map[Target][]job{}
	var order []Target
	for _, j := range jobs {
		if _, excl := placementOf(j.t); !excl {
			free = append(free, j)
			continue
		}
		if _, ok := exclusive[j.t]; !ok {
			order = append(order, j.t)
		}
		exclusive[j.t] = append(exclusive[j.t], j)
	}
	err := r.group(ctx, free, FakeAddrs{}, false)
	for _, t := range order {
		if err != nil || ctx.Err() != nil {
			break
		}
		addrs, _ := placementOf(t)
		err = r.group(ctx, exclusive[t], addrs, true)
	}
	if err != nil {
		return out, err
	}
	if r.harnessErr != nil {
		return out, r.harnessErr
	}
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("run interrupted: %w", err)
	}
	return out, nil
}

// Applies reports whether scenario s runs on target t: a scenario that
// expects something of a client (expect.client) runs on client targets
// only, and a client target runs only those (the others describe app
// requests, gateway knobs and guardrails that a client writes itself or
// does not have).
func Applies(s *scenario.Scenario, t Target) bool {
	return (s.Expect.Client != nil) == IsClient(t)
}

// IsClient reports whether t is a client target, whose scenario runs are runs
// of a command rather than HTTP requests.
func IsClient(t Target) bool {
	_, ok := t.(interface{ isClient() })
	return ok
}

// placementOf returns the fixed fake addresses of t and whether t's
// instances must run one at a time (fixed fakes, a fixed port, or a running
// process the harness does not own).
func placementOf(t Target) (FakeAddrs, bool) {
	if p, ok := t.(interface{ placement() (FakeAddrs, bool) }); ok {
		return p.placement()
	}
	return FakeAddrs{}, false
}

type job struct {
	s *scenario.Scenario
	t Target
	i int
}

// runner runs groups of jobs and collects their histories.
type runner struct {
	opts       Options
	mu         sync.Mutex
	out        []*history.History
	harnessErr error
}

// group runs jobs on one pair of fakes at addrs (port 0 where empty) and one
// instance per target. Isolated scenarios get fakes and an instance of their
// own: alongside the shared ones, or, when serial, after them one at a time.
func (r *runner) group(ctx context.Context, jobs []job, addrs FakeAddrs, serial bool) error {
	var shared, isolated []job
	for _, j := range jobs {
		if j.s.Isolated() {
			isolated = append(isolated, j)
		} else {
			shared = append(shared, j)
		}
	}
	do := func(env *fakesEnv, instances map[Target]Instance) func(j job) (*history.History, error) {
		return func(j job) (*history.History, error) {
			if j.s.Isolated() {
				return runIsolated(ctx, j.s, j.t, r.opts, addrs)
			}
			return runOne(ctx, j.s, j.t, env, instances[j.t], r.opts), nil
		}
	}
	first := jobs
	if serial {
		first = shared
	}
	var env *fakesEnv
	instances := map[Target]Instance{}
	if len(shared) > 0 {
		var err error
		if env, err = startFakes(nil, r.opts.Now, addrs); err != nil {
			return err
		}
		for _, j := range shared {
			if _, ok := instances[j.t]; ok {
				continue
			}
			inst, err := j.t.Start(ctx, env.urls, nil)
			if err != nil {
				env.Close()
				closeAll(instances)
				return err
			}
			instances[j.t] = inst
		}
	}
	r.pool(ctx, first, r.opts.Parallel, do(env, instances))
	if env != nil {
		// The fakes first: closing the ledger ends calls a target left
		// running, so the target's own close need not wait for them.
		env.Close()
		closeAll(instances)
	}
	if serial {
		r.pool(ctx, isolated, 1, do(nil, nil))
	}
	return nil
}

// pool runs jobs on up to parallel workers, longest expected wait first.
func (r *runner) pool(ctx context.Context, jobs []job, parallel int, do func(job) (*history.History, error)) {
	if len(jobs) == 0 {
		return
	}
	// Longest first: a scenario that must wait (a Retry-After, a slow tool)
	// starts early, so the others fill the other workers meanwhile.
	order := slices.Clone(jobs)
	sort.SliceStable(order, func(a, b int) bool { return expectedWait(order[a].s) > expectedWait(order[b].s) })
	work := make(chan job)
	var wg sync.WaitGroup
	for range min(parallel, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				h, err := do(j)
				if h != nil {
					r.opts.Logger.Debug("scenario run ended", "scenario", h.Scenario, "target", h.Target, "token", h.Token, "duration", h.Duration.D(), "error", h.Error)
				}
				r.mu.Lock()
				if err != nil && r.harnessErr == nil {
					r.harnessErr = err
				}
				r.out[j.i] = h
				if h != nil && r.opts.OnHistory != nil {
					r.opts.OnHistory(h)
				}
				r.mu.Unlock()
			}
		}()
	}
	for _, j := range order {
		if ctx.Err() != nil {
			break
		}
		work <- j
	}
	close(work)
	wg.Wait()
}

// expectedWait estimates how long a scenario must wait by design: the waits
// its upstream faults ask for (Retry-After, retry-after-ms, delay) and its
// tool timeout. It only orders the runs.
func expectedWait(s *scenario.Scenario) time.Duration {
	var d time.Duration
	for _, f := range s.Faults.Upstream {
		if f.Delay != nil {
			d += f.Delay.D()
		}
		if f.Respond == nil {
			continue
		}
		for k, v := range f.Respond.Headers {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			switch {
			case err != nil:
			case strings.EqualFold(k, "retry-after-ms"):
				d += time.Duration(n * float64(time.Millisecond))
			case strings.EqualFold(k, "retry-after"):
				d += time.Duration(n * float64(time.Second))
			}
		}
	}
	if s.Gateway != nil {
		d += s.Gateway.ToolTimeout.D()
	}
	return d
}

// runIsolated runs s on fakes and an instance of t of its own, for
// scenarios that set ledger-global annotations or gateway knobs.
func runIsolated(ctx context.Context, s *scenario.Scenario, t Target, opts Options, addrs FakeAddrs) (*history.History, error) {
	env, err := startFakes(s.Annotations, opts.Now, addrs)
	if err != nil {
		return nil, err
	}
	inst, err := t.Start(ctx, env.urls, s.Gateway)
	if err != nil {
		env.Close()
		return nil, err
	}
	h := runOne(ctx, s, t, env, inst, opts)
	// The fakes first: closing the ledger ends calls a target left running,
	// so the target's own close need not wait for them.
	env.Close()
	inst.Close()
	return h, nil
}

// runOne runs s once on inst and records its history.
func runOne(ctx context.Context, s *scenario.Scenario, t Target, env *fakesEnv, inst Instance, opts Options) *history.History {
	start := opts.Now()
	at := func(tm time.Time) fault.Duration { return fault.Duration(tm.Sub(start)) }
	token := runtoken.Derive(opts.Seed, s.Name, t.Name())
	h := &history.History{
		Scenario: s.Name, File: s.File, Tags: s.Tags, Target: t.Name(), Token: token, Entry: scenario.Entry(token),
		Started: start.UTC().Format(time.RFC3339Nano), Expect: s.Expect, Setup: inst.Limits(),
	}
	defer func() { h.Duration = at(opts.Now()) }()
	script := s.Script()
	for _, st := range script.Steps {
		if st.Call != "" {
			h.Setup.ToolCalls++
			h.Setup.Tools = append(h.Setup.Tools, st.Call)
		}
	}
	h.Setup.UpstreamFaults = rawJSON(s.Faults.Upstream)
	h.Setup.MCPFaults = rawJSON(s.Faults.MCP)
	h.Setup.Annotations = rawJSON(s.Annotations)

	r, err := s.Render(token)
	if err != nil {
		h.Error = err.Error()
		return h
	}
	var rendered upstream.Script
	if err := json.Unmarshal(r.Script, &rendered); err != nil {
		h.Error = fmt.Sprintf("rendering the model script: %v", err)
		return h
	}
	if n, ok := inst.(interface{ runNotes() []string }); ok {
		h.Notes = append(h.Notes, n.runNotes()...)
	}
	hint := s.RetryAfterHint.D()
	if hint <= 0 {
		if ht, ok := t.(interface{ retryAfterHint() time.Duration }); ok {
			hint = ht.retryAfterHint()
		}
	}
	if hint > 0 && addRetryHint(r.Faults.Upstream, hint) {
		h.Notes = append(h.Notes, fmt.Sprintf("retry_after_hint %s: injected error responses carry retry-after-ms and Retry-After (this changes the behaviour under test)", hint))
		h.Setup.UpstreamFaults = rawJSON(r.Faults.Upstream)
	}
	if out, ok := inst.(interface {
		outputSeq() uint64
		outputSince(uint64) []string
	}); ok {
		seq := out.outputSeq()
		defer func() { h.TargetOutput = out.outputSince(seq) }()
	}
	if err := env.upstream.Arm(token, &rendered, r.Faults.Upstream); err != nil {
		h.Error = fmt.Sprintf("arming the upstream fake: %v", err)
		return h
	}
	if err := env.ledger.Arm(token, r.Faults.MCP); err != nil {
		h.Error = fmt.Sprintf("arming the ledger: %v", err)
		return h
	}
	timeout := opts.Timeout
	if s.Timeout > 0 {
		timeout = s.Timeout.D()
	}
	var own *Fakes
	if IsClient(t) {
		f, closeOwn, err := env.own(token)
		if err != nil {
			h.Error = err.Error()
			return h
		}
		// After settle and collect below: deferred calls run last first.
		defer closeOwn()
		own = &f
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, req := range r.Requests {
		begin := opts.Now()
		x := inst.Send(rctx, Request{Request: req, Token: token, Fakes: own})
		x.Start, x.End = at(begin), at(opts.Now())
		h.Requests = append(h.Requests, x)
		if x.Client != nil && x.Client.Error != "" {
			h.Error = x.Client.Error
			break
		}
		if x.TimedOut || rctx.Err() != nil {
			if x.Client != nil && x.Client.Killed {
				h.Error = x.TransportError
				break
			}
			if ctx.Err() != nil {
				h.Error = "interrupted before the answer to POST " + x.Path + " ended"
			} else {
				h.Error = fmt.Sprintf("the target gave no complete answer to POST %s within the scenario's %s deadline (a hang)", x.Path, timeout)
			}
			break
		}
	}
	settle(ctx, env.ledger, token)
	collect(h, env, token, start, opts.Now(), at)
	return h
}

// collect adds to h what the fakes saw for token, what became of its armed
// faults, and the traffic no run owned that arrived between start and end.
func collect(h *history.History, env *fakesEnv, token string, start, end time.Time, at func(time.Time) fault.Duration) {
	for _, u := range env.upstream.Requests(token) {
		h.Upstream = append(h.Upstream, history.UpstreamRequest{
			At: at(u.Time), Path: u.Path, Endpoint: u.Endpoint, Kind: u.Kind, Outcome: u.Outcome, Stream: u.Stream,
			Status: u.Status, Fault: u.Fault, Headers: u.Headers, Model: u.Model, ToolCalls: len(u.ToolCalls),
			Offered: u.Offered, Unmatched: u.Unmatched,
		})
	}
	for _, e := range env.ledger.Events(token) {
		h.MCP = append(h.MCP, history.MCPEvent{
			At: at(e.Time), Kind: e.Kind, Tool: e.Tool, RequestID: e.RequestID, Entry: e.Entry, Key: e.Key, Detail: e.Detail,
		})
	}
	sort.SliceStable(h.Upstream, func(i, j int) bool { return h.Upstream[i].At < h.Upstream[j].At })
	sort.SliceStable(h.MCP, func(i, j int) bool { return h.MCP[i].At < h.MCP[j].At })
	for i := range h.Requests {
		if x := &h.Requests[i]; x.Client != nil {
			x.Paths = calledPaths(h.Upstream, x.Start, x.End)
		}
	}
	for i, f := range env.upstream.FaultReports(token) {
		h.Faults = append(h.Faults, history.FaultReport{Side: history.FaultUpstream, Index: i, Fault: rawJSON(f.Fault), Matched: f.Matched, Fired: f.Fired})
	}
	for i, f := range env.ledger.FaultReports(token) {
		h.Faults = append(h.Faults, history.FaultReport{Side: history.FaultMCP, Index: i, Fault: rawJSON(f.Fault), Matched: f.Matched, Fired: f.Fired})
	}
	h.Unattributed = unattributed(env, start, end)
}

// calledPaths returns the distinct model API paths of the upstream requests
// between start and end, in order of first call.
func calledPaths(ups []history.UpstreamRequest, start, end fault.Duration) []string {
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
func unattributed(env *fakesEnv, start, end time.Time) *history.Unattributed {
	var u history.Unattributed
	sample := func(s string) {
		if len(u.Samples) < maxUnattributedSamples {
			u.Samples = append(u.Samples, s)
		}
	}
	in := func(t time.Time) bool { return !t.Before(start) && !t.After(end) }
	for _, r := range env.upstream.Requests("") {
		if in(r.Time) {
			u.Upstream++
			sample("POST " + r.Path + " " + r.Kind + " " + r.Outcome)
		}
	}
	for _, e := range env.ledger.Events("") {
		if e.Kind == ledger.EventCall && in(e.Time) {
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
// ended: answered, cancelled, refused or dropped. A target that abandons a
// call without cancelling it leaves it running; the wait then gives up.
func settle(ctx context.Context, l *ledger.Server, token string) {
	ctx, cancel := context.WithTimeout(ctx, settleGrace)
	defer cancel()
	_, _ = l.WaitFor(ctx, token, func(ledger.Counts) bool { return ended(l.Events(token)) })
}

// ended reports whether every call event has a terminal event.
func ended(evs []ledger.Event) bool {
	open := 0
	for _, e := range evs {
		switch {
		case e.Kind == ledger.EventCall:
			open++
		case e.Kind == ledger.EventResult, e.Kind == ledger.EventCancelled,
			e.Kind == ledger.EventFault && (e.Detail == "fail_before_execute" || e.Detail == "drop_after_execute"):
			open--
		}
	}
	return open <= 0
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

func closeAll(m map[Target]Instance) {
	for _, inst := range m {
		_ = inst.Close()
	}
}

// fakesEnv is a ledger and an upstream fake on loopback listeners.
type fakesEnv struct {
	ledger    *ledger.Server
	upstream  *upstream.Server
	ledgerSrv *http.Server
	upSrv     *http.Server
	urls      Fakes
}

// startFakes starts a ledger and an upstream fake, at addrs where set and on
// 127.0.0.1 port 0 otherwise.
func startFakes(annotations map[string]ledger.Annotations, now func() time.Time, addrs FakeAddrs) (*fakesEnv, error) {
	l, err := ledger.New(ledger.Config{Annotations: annotations, Now: now})
	if err != nil {
		return nil, fmt.Errorf("starting the ledger: %w", err)
	}
	u, err := upstream.New(upstream.Config{Clock: now})
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("starting the upstream fake: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", l)
	lsrv, lurl, err := listenAt(addrs.MCP, mux)
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("starting the ledger: %w", err)
	}
	usrv, uurl, err := listenAt(addrs.Upstream, u)
	if err != nil {
		lsrv.Close()
		l.Close()
		return nil, fmt.Errorf("starting the upstream fake: %w", err)
	}
	return &fakesEnv{ledger: l, upstream: u, ledgerSrv: lsrv, upSrv: usrv, urls: Fakes{Upstream: uurl + "/v1", MCP: lurl + "/mcp"}}, nil
}

// own serves the fakes at addresses of the run token's own: everything
// arriving there belongs to the run. The returned func closes them.
func (e *fakesEnv) own(token string) (Fakes, func(), error) {
	usrv, uurl, err := listen(runtoken.Handler(token, e.upstream))
	if err != nil {
		return Fakes{}, nil, fmt.Errorf("starting the run's own model API address: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", runtoken.Handler(token, e.ledger))
	lsrv, lurl, err := listen(mux)
	if err != nil {
		usrv.Close()
		return Fakes{}, nil, fmt.Errorf("starting the run's own MCP address: %w", err)
	}
	return Fakes{Upstream: uurl + "/v1", MCP: lurl + "/mcp"}, func() { usrv.Close(); lsrv.Close() }, nil
}

func (e *fakesEnv) Close() error {
	return errors.Join(e.upSrv.Close(), e.ledgerSrv.Close(), e.ledger.Close())
}

// listen serves h on a new 127.0.0.1 port-0 listener and returns its URL.
func listen(h http.Handler) (*http.Server, string, error) { return listenAt("", h) }

// listenAt serves h on addr (127.0.0.1:0 when empty) and returns its URL.
func listenAt(addr string, h http.Handler) (*http.Server, string, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, "", fmt.Errorf("address %s is already in use (a replaycheck serve or another run still going?): %w", addr, err)
	}
	if err != nil {
		return nil, "", fmt.Errorf("listening on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return srv, "http://" + ln.Addr().String(), nil
}

// Selection picks scenarios to run. The zero value picks all.
type Selection struct {
	// Filter, when not nil, keeps scenarios whose name matches.
	Filter *regexp.Regexp
	// Tags, when not empty, keeps scenarios that have any of them.
	Tags []string
	// Shard (1-based) of Shards keeps a deterministic slice of the
	// scenarios sorted by name; Shards 0 keeps all.
	Shard, Shards int
}

// Select returns the scenarios sel picks, in their original order.
func Select(all []*scenario.Scenario, sel Selection) []*scenario.Scenario {
	var kept []*scenario.Scenario
	for _, s := range all {
		if sel.Filter != nil && !sel.Filter.MatchString(s.Name) {
			continue
		}
		if len(sel.Tags) > 0 && !slices.ContainsFunc(sel.Tags, func(t string) bool { return slices.Contains(s.Tags, t) }) {
			continue
		}
		kept = append(kept, s)
	}
	if sel.Shards <= 1 {
		return kept
	}
	names := make([]string, len(kept))
	for i, s := range kept {
		names[i] = s.Name
	}
	sort.Strings(names)
	mine := map[string]bool{}
	for i, n := range names {
		if i%sel.Shards == sel.Shard-1 {
			mine[n] = true
		}
	}
	var out []*scenario.Scenario
	for _, s := range kept {
		if mine[s.Name] {
			out = append(out, s)
		}
	}
	return out
}
