package matrix

import (
	"sync"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/explore"
)

// Progress is the matrix's progress after one more run of an agent's sweep.
type Progress struct {
	// Agent is the agent whose run ended (1-based, of Agents), Target its
	// name and Step its sweep (fingerprint or sweep); Progress is that
	// sweep's own (its phase: clean, sweep, shrink or confirm).
	Agent, Agents int
	Target, Step  string
	explore.Progress
	// Cells counts the matrix's cells (each agent's mechanisms asked for,
	// of the shard); Done those decided, a sweep under way counting for
	// the share of its runs made.
	Cells int
	Done  float64
	// Wall is the time since Build began; Left the time left at the pace
	// of the cells done, Wall × (Cells − Done) / Done (0 before any is).
	Wall, Left time.Duration
}

// tracker turns the agents' sweeps' progress into the matrix's.
type tracker struct {
	mu     sync.Mutex
	start  time.Time
	now    func() time.Time
	on     func(Progress)
	cells  int
	agents []*agentTrack
}

// agentTrack is one agent's share of a tracker: the cells each of its
// sweeps decides, and the share of each done.
type agentTrack struct {
	t      *tracker
	i      int
	target string
	units  map[string]int     // cells per step
	done   map[string]float64 // share done per step, 0–1
}

// newTracker tracks the cells own gives each agent (see shardCells); on
// nil tracks nothing.
func newTracker(agents []Agent, own [][]explore.Kind, start time.Time, now func() time.Time, on func(Progress)) *tracker {
	t := &tracker{start: start, now: now, on: on}
	for i, a := range agents {
		at := &agentTrack{t: t, i: i, target: a.Target.Name(), units: map[string]int{}, done: map[string]float64{}}
		for _, k := range own[i] {
			step := "sweep"
			if k.Fingerprinted() {
				step = "fingerprint"
			}
			at.units[step]++
			t.cells++
		}
		t.agents = append(t.agents, at)
	}
	return t
}

// agent is agent i's track.
func (t *tracker) agent(i int) *agentTrack { return t.agents[i] }

// run records that a run of step's sweep ended, and reports the matrix's
// progress.
func (a *agentTrack) run(step string, p explore.Progress) {
	share := 0.0
	switch p.Phase {
	case "clean":
	case "sweep":
		if p.Total > 0 {
			share = float64(p.Done) / float64(p.Total)
		}
	default: // shrink, confirm: the sweep's cells are run
		share = 1
	}
	t := a.t
	t.mu.Lock()
	defer t.mu.Unlock()
	a.done[step] = max(a.done[step], share)
	if t.on == nil {
		return
	}
	pr := Progress{Agent: a.i + 1, Agents: len(t.agents), Target: a.target, Step: step, Progress: p, Cells: t.cells, Wall: t.now().Sub(t.start)}
	for _, o := range t.agents {
		for s, n := range o.units {
			pr.Done += float64(n) * o.done[s]
		}
	}
	if pr.Done > 0 {
		pr.Left = time.Duration(float64(pr.Wall) * (float64(pr.Cells) - pr.Done) / pr.Done)
	}
	t.on(pr)
}

// phaseDone records that step's sweep ended: its cells are decided.
func (a *agentTrack) phaseDone(step string) {
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	a.done[step] = 1
}

// rowDone records that the agent's row ended, its cells decided or
// failed.
func (a *agentTrack) rowDone() {
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	for s := range a.units {
		a.done[s] = 1
	}
}
