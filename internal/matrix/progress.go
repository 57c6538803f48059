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
	// of the shard, and its client scenarios); Done those decided, a sweep
	// (or the client scenarios) under way counting for the share of its
	// runs made.
	Cells int
	Done  float64
	// Wall is the time since Build began. Left is the time the matrix has
	// left: the longest of its unfinished agents' (they run at once), each
	// at its own pace, its wall time × its cells left / its cells done; an
	// agent that has not decided a whole cell yet goes at the pace of the
	// slowest that has. LeftKnown is false, and Left 0, while no agent has decided any.
	Wall, Left time.Duration
	LeftKnown  bool
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
// sweeps decides, the share of each done, and when its row ended.
type agentTrack struct {
	t      *tracker
	i      int
	target string
	units  map[string]int     // cells per step
	done   map[string]float64 // share done per step, 0–1
	begin  time.Time          // when the agent first reported a run; zero before
	end    time.Time          // when the row ended; zero while it runs
	paced  bool               // the row ended with its cells decided, not failed
}

// newTracker tracks the cells own gives each agent (see shardCells) and
// its scenarios[i] client scenarios' cells (none when scenarios is nil); on
// nil tracks nothing.
func newTracker(agents []Agent, own [][]explore.Kind, scenarios []int, start time.Time, now func() time.Time, on func(Progress)) *tracker {
	t := &tracker{start: start, now: now, on: on}
	for i, a := range agents {
		at := &agentTrack{t: t, i: i, target: a.Target.Name(), units: map[string]int{}, done: map[string]float64{}}
		if scenarios != nil && scenarios[i] > 0 {
			at.units["scenarios"] = scenarios[i]
			t.cells += scenarios[i]
		}
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
	case "sweep", scenariosPhase:
		if p.Total > 0 {
			share = float64(p.Done) / float64(p.Total)
		}
	default: // shrink, confirm: the sweep's cells are run
		share = 1
	}
	t := a.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if a.begin.IsZero() {
		a.begin = t.now()
	}
	a.done[step] = max(a.done[step], share)
	if t.on == nil {
		return
	}
	pr := Progress{Agent: a.i + 1, Agents: len(t.agents), Target: a.target, Step: step, Progress: p, Cells: t.cells, Wall: t.now().Sub(t.start)}
	for _, o := range t.agents {
		pr.Done += o.cellsDone()
	}
	pr.Left, pr.LeftKnown = t.left(pr.Wall)
	t.on(pr)
}

// phaseDone records that step's sweep ended: its cells are decided.
func (a *agentTrack) phaseDone(step string) {
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	a.done[step] = 1
}

// rowDone records that the agent's row ended, its cells decided
// (decided) or failed: a failed row's pace is not the others'.
func (a *agentTrack) rowDone(decided bool) {
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	for s := range a.units {
		a.done[s] = 1
	}
	a.end, a.paced = a.t.now(), decided
}

// cells is the number of the agent's cells; cellsDone those decided, a
// sweep under way counting for the share of its runs made.
func (a *agentTrack) cells() int {
	n := 0
	for _, u := range a.units {
		n += u
	}
	return n
}

// cellsDone: see cells.
func (a *agentTrack) cellsDone() float64 {
	d := 0.0
	for s, u := range a.units {
		d += float64(u) * a.done[s]
	}
	return d
}

// pace is the time each of the agent's cells has taken since it first
// reported a run (an agent admitted late is not paced by the time it
// waited), wall being the matrix's wall time; false until it has decided a
// whole cell (a sliver of a sweep, its runs admitted one by one beside the
// other agents', said hours for a 29-minute matrix), when its row failed,
// or when no time has passed since its first report.
func (a *agentTrack) pace(wall time.Duration) (time.Duration, bool) {
	if !a.end.IsZero() {
		if !a.paced || a.cells() == 0 {
			return 0, false
		}
		wall = a.end.Sub(a.t.start)
	}
	done := a.cellsDone()
	took := wall - a.begin.Sub(a.t.start)
	if done < 1 || a.begin.IsZero() || took <= 0 {
		return 0, false
	}
	return time.Duration(float64(took) / done), true
}

// left is the time the matrix has left at wall time wall (see
// Progress.Left), and false when no agent has a pace yet.
func (t *tracker) left(wall time.Duration) (time.Duration, bool) {
	var slowest time.Duration
	known := false
	for _, a := range t.agents {
		if p, ok := a.pace(wall); ok {
			slowest, known = max(slowest, p), true
		}
	}
	if !known {
		return 0, false
	}
	var left time.Duration
	for _, a := range t.agents {
		if !a.end.IsZero() {
			continue
		}
		p, ok := a.pace(wall)
		if !ok {
			p = slowest
		}
		left = max(left, time.Duration(float64(p)*(float64(a.cells())-a.cellsDone())))
	}
	return left, true
}
