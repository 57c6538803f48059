package scenario

import (
	"errors"
	"fmt"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/harness/history"
)

// TargetFault is a fault on the target's process: a kill at a point the
// harness sees, followed by the target's resume command (see
// target.Traits.Resumes). Times says how many kill-and-resume cycles the run
// makes (once, N); each later life may be killed again at the same point.
type TargetFault struct {
	// Kill kills the target's process group.
	Kill *Kill `yaml:"kill" json:"kill" jsonschema_description:"kill the target's process group at a point the harness sees, then start its resume command (target file resume) in the same run directory"`
	// Times is the number of kill-and-resume cycles: once or N; zero is
	// once (always is refused).
	Times fault.Times `yaml:"times,omitempty" json:"times,omitempty" jsonschema_description:"kill-and-resume cycles: once (default) or N; each later life may be killed again at the same point"`
}

// Kill says where and how the target is killed.
type Kill struct {
	// After is the kill point.
	After history.KillPoint `yaml:"after" json:"after" jsonschema:"enum=execute,enum=follow_up,enum=stream,enum=delay" jsonschema_description:"execute: once the ledger executed the tool's call (the write committed; the ledger holds its answer until the kill is done); follow_up: when a follow-up model request (carrying a tool result) arrived, before it is answered: the first point after the tool's answer the harness sees; stream: once the model stream's first chunk was flushed to the target; delay: after delay from the life's start"`
	// Tool names the tool of execute; empty is commit_write.
	Tool string `yaml:"tool,omitempty" json:"tool,omitempty" jsonschema_description:"with execute: the tool whose call is the kill point (default commit_write)"`
	// Signal is sent first; empty is SIGKILL.
	Signal history.Signal `yaml:"signal,omitempty" json:"signal,omitempty" jsonschema:"enum=SIGKILL,enum=SIGTERM" jsonschema_description:"SIGKILL (default) or SIGTERM, followed by SIGKILL after grace"`
	// Grace is the time between SIGTERM and SIGKILL; zero is
	// DefaultKillGrace.
	Grace fault.Duration `yaml:"grace,omitempty" json:"grace,omitempty" jsonschema_description:"with SIGTERM: time before SIGKILL (default 2s)"`
	// Delay is the time after a life's start of the delay point.
	Delay fault.Duration `yaml:"delay,omitempty" json:"delay,omitempty" jsonschema_description:"with after: delay: the time after the life's start"`
}

// DefaultKillTool is the tool of a kill after execute that names
// none.
const DefaultKillTool = "commit_write"

// DefaultKillGrace is the time between SIGTERM and SIGKILL of a kill that
// sets no grace.
const DefaultKillGrace = 2 * time.Second

// KillTool returns the tool of the kill point: Tool, or DefaultKillTool.
func (k *Kill) KillTool() string {
	if k.Tool == "" {
		return DefaultKillTool
	}
	return k.Tool
}

// KillSignal returns the signal sent first: Signal, or SIGKILL.
func (k *Kill) KillSignal() history.Signal {
	if k.Signal == "" {
		return history.SIGKILL
	}
	return k.Signal
}

// Cycles returns the number of kill-and-resume cycles of f: Times' count,
// 1 when unset.
func (f TargetFault) Cycles() int {
	return max(f.Times.Count, 1)
}

// Validate reports a bad setting of the fault, naming it.
func (f TargetFault) Validate() error {
	k := f.Kill
	if k == nil {
		return errors.New("a target fault needs kill: {after: execute|follow_up|stream|delay}")
	}
	if k.After == "answer" {
		// The harness cannot see a target read an answer: the first point
		// after it that it sees is the next model request.
		return errors.New(`kill.after "answer": not a kill point, the harness sees no target read an answer; use follow_up, the target's next model request, the first point after the answer it sees`)
	}
	if !k.After.Valid() {
		return fmt.Errorf("kill.after %q: want one of execute, follow_up, stream, delay", k.After)
	}
	if k.Signal != "" && k.Signal != history.SIGKILL && k.Signal != history.SIGTERM {
		return fmt.Errorf("kill.signal %q: want SIGKILL or SIGTERM", k.Signal)
	}
	if k.Grace < 0 || (k.Grace > 0 && k.KillSignal() != history.SIGTERM) {
		return errors.New("kill.grace: a positive duration, with signal: SIGTERM only")
	}
	if (k.After == history.KillAfterDelay) != (k.Delay > 0) {
		return errors.New("kill.delay: a positive duration, with after: delay only (and required there)")
	}
	if k.Tool != "" && k.After != history.KillAfterExecute {
		return errors.New("kill.tool: with after: execute only")
	}
	if f.Times.Nth > 0 || f.Times.Count < 0 {
		return errors.New("times: once or a count N of kill-and-resume cycles")
	}
	return nil
}

// Resumes reports whether the scenario kills the target and resumes it
// (faults.target): a target without a resume command skips it.
func (s *Scenario) Resumes() bool { return len(s.Faults.Target) > 0 }
