// Package replaychecktest runs replaycheck's fakes inside a Go test, as
// net/http/httptest runs a server: Start serves the faulting model API
// (fakes/upstream) and the ledger MCP server (fakes/ledger) in process on
// loopback port 0 for one *testing.T, the test arms faults in Go with the
// fakes' own types, runs the agent under test against ModelURL and MCPURL,
// and then reads the counts and the replay rules' verdicts of what the fakes
// saw. Everything stops at the end of the test (t.Cleanup); New and Close do
// the same outside a test.
//
// This package is part of replaycheck's Go API, with fakes/upstream and
// fakes/ledger (whose Fault types arm the fakes) and fakes/fault (Times, how
// often a fault fires); Verdict, Status and History name the harness's own
// types, which live under internal/.
//
//	f := replaychecktest.Start(t, nil)
//	if err := f.ArmModel(upstream.Fault{On: "follow_up", Respond: &upstream.Respond{Status: 500}}); err != nil {
//		t.Fatal(err)
//	}
//	err := myAgent.Run(ctx, f.ModelURL, f.MCPURL)
//	replaychecktest.Require(t, f.Check(err, "no-replay-after-dispatch", "error-surfaces"))
package replaychecktest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/fakepair"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/runtoken"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// Options configure Start; nil is the zero Options.
type Options struct {
	// Name names the run (Start: the test's name); the run token is derived
	// from it, so the same name gives the same tool-call ids and entries.
	Name string
	// Script is what the fake model answers, with {{entry}} and {{token}}
	// filled for the run; empty is the seed's: call commit_write with the
	// run's entry, then say done.
	Script upstream.Script
	// Annotations override the ledger tools' MCP annotations by tool name.
	Annotations map[string]ledger.Annotations
}

// Fakes are a model API fake and a ledger MCP server serving one test. Every
// request that reaches ModelURL or MCPURL belongs to the test's run (Token),
// whatever its prompt says. Its methods are safe to call from the test's
// goroutine while the agent runs; Close stops both.
type Fakes struct {
	// ModelURL is the model API's base URL with /v1: OpenAI's base URL (the
	// Anthropic and Gemini paths are served under the same host).
	ModelURL string
	// MCPURL is the ledger's Streamable HTTP endpoint (…/mcp).
	MCPURL string
	// Token is the run token; Entry is the ledger entry the default script
	// asks commit_write to write.
	Token, Entry string
	// Upstream and Ledger are the fakes themselves, for what this package
	// does not wrap.
	Upstream *upstream.Server
	Ledger   *ledger.Server

	name     string
	pair     *fakepair.Pair
	started  time.Time
	script   upstream.Script
	tools    []string
	upFaults []upstream.Fault
	mcp      []ledger.Fault
}

// Start serves both fakes for t, named after it (Options.Name is ignored),
// and closes them when t ends; it fails t when they cannot start.
func Start(t testing.TB, opts *Options) *Fakes {
	t.Helper()
	o := Options{}
	if opts != nil {
		o = *opts
	}
	o.Name = t.Name()
	f, err := New(&o)
	if err != nil {
		t.Fatalf("replaychecktest: %v", err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// New serves both fakes on loopback port 0 until Close. It fails when a
// fake cannot start or the script is not valid.
func New(opts *Options) (*Fakes, error) {
	if opts == nil {
		opts = &Options{}
	}
	token := runtoken.Derive("replaychecktest", opts.Name)
	s := scenario.Scenario{Name: opts.Name, Model: scenario.Model{Script: opts.Script}}
	r, err := s.Render(token)
	if err != nil {
		return nil, err
	}
	p, err := fakepair.New(fakepair.Config{Ledger: ledger.Config{Annotations: opts.Annotations}, Owner: token, OwnModel: true})
	if err != nil {
		return nil, err
	}
	f := &Fakes{Token: token, Entry: r.Entry, Upstream: p.Upstream(), Ledger: p.Ledger(), pair: p, name: opts.Name, started: time.Now(), script: r.Script, tools: s.Model.Calls()}
	if err := f.Upstream.Arm(token, &f.script, nil); err != nil {
		p.Close()
		return nil, err
	}
	if err := p.Serve(); err != nil {
		p.Close()
		return nil, err
	}
	f.ModelURL, f.MCPURL = p.UpstreamURL(), p.MCPURL()
	return f, nil
}

// Close stops both fakes and their listeners.
func (f *Fakes) Close() error { return f.pair.Close() }

// ArmModel sets the model API's faults for the run, replacing those armed
// before (none: no fault). A fault that is not valid is an error naming it,
// and nothing is armed.
func (f *Fakes) ArmModel(faults ...upstream.Fault) error {
	if err := f.Upstream.Arm(f.Token, &f.script, faults); err != nil {
		return err
	}
	f.upFaults = slices.Clone(faults)
	return nil
}

// ArmMCP sets the ledger's faults for the run, replacing those armed before
// (none: no fault). A fault that is not valid is an error naming it, and
// nothing is armed.
func (f *Fakes) ArmMCP(faults ...ledger.Fault) error {
	if err := f.Ledger.Arm(f.Token, faults); err != nil {
		return err
	}
	f.mcp = slices.Clone(faults)
	return nil
}

// Verdict is the outcome of one check over the run: Check names the rule or
// count, Status says pass, fail or unknown, Message says why.
type Verdict = rules.Verdict

// Status is a verdict's outcome.
type Status = rules.Status

// The statuses a Verdict can have.
const (
	Pass    = rules.Pass
	Fail    = rules.Fail
	Unknown = rules.Unknown
)

// History is what the run recorded, as the harness records a client
// target's run.
type History = history.History

// Counts are what both fakes counted for the run so far.
type Counts struct {
	Upstream wire.UpstreamCounts
	MCP      wire.MCPCounts
}

// Counts returns the run's counts so far.
func (f *Fakes) Counts() Counts {
	return Counts{Upstream: f.Upstream.Counts(f.Token), MCP: f.Ledger.Counts(f.Token)}
}

// History returns the run so far as the harness records a client target's
// run: the agent's run as one client run (agentErr nil: exit 0; otherwise
// exit 1 with the error as its stderr), what both fakes saw, and what became
// of every armed fault, expecting rules. Call it after the agent returned.
func (f *Fakes) History(agentErr error, ruleNames ...string) *History {
	at := func(tm time.Time) history.Duration { return history.Duration(tm.Sub(f.started)) }
	client := &history.ClientRun{}
	if agentErr != nil {
		client.Exit, client.Stderr = 1, agentErr.Error()
	}
	h := &history.History{
		Scenario: f.name, Target: "go test", Token: f.Token, Entry: f.Entry,
		Started: f.started.UTC().Format(time.RFC3339Nano), Duration: at(time.Now()),
		Setup: history.Setup{
			Tools: f.tools, ToolCalls: len(f.tools), NumRetries: -1,
			UpstreamFaults: listJSON(f.upFaults), MCPFaults: listJSON(f.mcp),
		},
		Expect:   history.Expect{Rules: ruleNames},
		Requests: []history.Exchange{{End: at(time.Now()), Client: client}},
		Upstream: f.Upstream.Requests(f.Token),
		MCP:      f.Ledger.Events(f.Token),
	}
	for i := range h.Upstream {
		h.Upstream[i].At = at(h.Upstream[i].Time)
	}
	for i := range h.MCP {
		h.MCP[i].At = at(h.MCP[i].Time)
	}
	for _, r := range slices.Concat(f.Upstream.FaultReports(f.Token), f.Ledger.FaultReports(f.Token)) {
		h.Faults = append(h.Faults, r.OfRun())
	}
	return h
}

// Check judges the run with the named replay rules (see `replaycheck
// rules`) after the agent returned agentErr, and returns the verdicts: a
// rule that saw nothing to judge, or whose armed fault never fired, says
// unknown, never pass.
func (f *Fakes) Check(agentErr error, ruleNames ...string) []Verdict {
	return rules.Check(f.History(agentErr, ruleNames...))
}

// Require fails t with the message of every verdict that is not a pass,
// and when there is none at all (nothing was judged).
func Require(t testing.TB, verdicts []Verdict) {
	t.Helper()
	if len(verdicts) == 0 {
		t.Error("replaychecktest: no verdict: name the rules to check")
	}
	for _, v := range verdicts {
		if v.Status != rules.Pass {
			t.Errorf("%s: %s: %s", v.Check, v.Status, v.Message)
		}
	}
}

// listJSON is a list as JSON; nil when it is empty.
func listJSON[T any](v []T) json.RawMessage {
	if len(v) == 0 {
		return nil
	}
	return rawJSON(v)
}

// rawJSON is v as JSON. The fakes' faults always marshal.
func rawJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
