package run

import (
	"context"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
)

// EventKind names what the runner is doing, for a progress display.
type EventKind string

// The events Run reports through Options.OnEvent.
const (
	// EventTargetStarting: a target instance is being started (a proxy
	// process launched and waited on until ready).
	EventTargetStarting EventKind = "target-starting"
	// EventTargetReady: the instance of the matching EventTargetStarting
	// is ready; Elapsed is how long its start took.
	EventTargetReady EventKind = "target-ready"
	// EventTargetFailed: the instance did not start; Err says why.
	EventTargetFailed EventKind = "target-failed"
	// EventRunStarted: a scenario run began; Options.OnHistory reports its
	// end.
	EventRunStarted EventKind = "run-started"
)

// Event is one thing the runner did that a user waiting on it may want to
// see: a target starting or ready, a scenario run starting. Events only
// describe; the histories are the record.
type Event struct {
	Kind EventKind
	// Target is the target's name.
	Target string
	// Scenario is the scenario's name; "" for a target instance started
	// for every shared scenario.
	Scenario string
	// Run places a run among a repeated scenario's runs; nil when it runs
	// once.
	Run *history.Repetition
	// At is when the event happened, on Options.Now.
	At time.Time
	// Elapsed is how long the start took (EventTargetReady,
	// EventTargetFailed).
	Elapsed time.Duration
	// Err is why the target did not start (EventTargetFailed).
	Err error
}

// event reports e to opts.OnEvent, when set.
func (opts Options) event(e Event) {
	if opts.OnEvent != nil {
		opts.OnEvent(e)
	}
}

// startTarget starts an instance of j's target on fakes with knobs,
// reporting the start and its end as events; name, the scenario's, is "" for an instance
// shared by many scenarios.
func startTarget(ctx context.Context, opts Options, t target.Target, name string, fakes target.Fakes, knobs *scenario.Gateway) (target.Instance, error) {
	begin := opts.Now()
	opts.event(Event{Kind: EventTargetStarting, Target: t.Name(), Scenario: name, At: begin})
	inst, err := t.Start(ctx, fakes, knobs)
	end := opts.Now()
	if err != nil {
		opts.event(Event{Kind: EventTargetFailed, Target: t.Name(), Scenario: name, At: end, Elapsed: end.Sub(begin), Err: err})
		return nil, err
	}
	opts.event(Event{Kind: EventTargetReady, Target: t.Name(), Scenario: name, At: end, Elapsed: end.Sub(begin)})
	return inst, nil
}
