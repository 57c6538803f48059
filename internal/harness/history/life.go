package history

import "slices"

// KillPoint is where in a run the harness kills the target (a scenario's
// faults.target kill.after): a point it sees on the fakes.
type KillPoint string

// The kill points.
const (
	// KillAfterExecute kills once the ledger executed the named tool's call
	// (its write committed), while the ledger holds its answer back.
	KillAfterExecute KillPoint = "execute"
	// KillAtFollowUp kills when a follow-up model request (one carrying a
	// tool result) reached the upstream fake, before it is answered.
	KillAtFollowUp KillPoint = "follow_up"
	// KillInStream kills while the target reads a streamed model answer,
	// after its first chunk.
	KillInStream KillPoint = "stream"
	// KillAfterDelay kills a fixed time after the life started.
	KillAfterDelay KillPoint = "delay"
)

// KillPoints lists the kill points in the order explore sweeps them.
func KillPoints() []KillPoint {
	return []KillPoint{KillAfterExecute, KillAtFollowUp, KillInStream, KillAfterDelay}
}

// Valid reports whether p is one of KillPoints.
func (p KillPoint) Valid() bool {
	return slices.Contains(KillPoints(), p)
}

// Signal is the signal a kill sends the target's process group first.
type Signal string

// The kill signals.
const (
	// SIGKILL kills at once.
	SIGKILL Signal = "SIGKILL"
	// SIGTERM asks the target to stop and kills it (SIGKILL) after the
	// kill's grace.
	SIGTERM Signal = "SIGTERM"
)

// TargetEventKind says what happened to the target process.
type TargetEventKind string

// The target event kinds.
const (
	// TargetKilled is a kill of the target's process group by the harness.
	TargetKilled TargetEventKind = "target_killed"
	// TargetResumed is a start of the target's resume command after a kill.
	TargetResumed TargetEventKind = "target_resumed"
)

// TargetEvent is a kill of the target or a resume of it: one run is all the
// target's lives, life 1 the first start, each resume the next.
type TargetEvent struct {
	// Kind is TargetKilled or TargetResumed.
	Kind TargetEventKind `json:"kind"`
	// Life is the life the event ends (killed) or begins (resumed), from 1.
	Life int `json:"life"`
	// At is the time since the run began.
	At Duration `json:"at"`
	// Point, Tool and Signal say where and how a killed life was killed;
	// Tool is empty for the points that name none.
	Point  KillPoint `json:"point,omitempty"`
	Tool   string    `json:"tool,omitempty"`
	Signal Signal    `json:"signal,omitempty"`
	// KilledAfterGrace, on a SIGTERM kill, says the target had not exited
	// within the kill's grace (stretched by the time it waited for a CPU)
	// and was killed with SIGKILL: it did not finish what it does on SIGTERM.
	KilledAfterGrace bool `json:"killed_after_grace,omitempty"`
	// PID is the killed process (its group's leader).
	PID int `json:"pid,omitempty"`
	// Exit is a resumed life's exit code: -1 when it did not exit by itself
	// (killed again, or past the deadline); absent for a kill.
	Exit *int `json:"exit,omitempty"`
	// Success, for a resumed life that ended by itself, says it reported
	// success: a client exited 0, a gateway finished its resumed turns with
	// a final answer, a proxy got the run's final model answer after its
	// resume started. Said is the end of what it reported (output, answer).
	Success bool   `json:"success,omitempty"`
	Said    string `json:"said,omitempty"`
	// Proxy is set for a proxy target: its resume restarted the proxy, which
	// carries on with its own pending work; the harness does not re-send the
	// app request.
	Proxy bool `json:"proxy,omitempty"`
}

// Lives returns the number of lives of the target in the run: 1 plus its
// resumes.
func (h *History) Lives() int {
	n := 1
	for _, e := range h.TargetEvents {
		if e.Kind == TargetResumed {
			n++
		}
	}
	return n
}

// Kills returns the target's kill events, in order.
func (h *History) Kills() []TargetEvent {
	var out []TargetEvent
	for _, e := range h.TargetEvents {
		if e.Kind == TargetKilled {
			out = append(out, e)
		}
	}
	return out
}
