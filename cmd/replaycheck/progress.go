package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/run"
	"github.com/replaycheck/replaycheck/report"
)

// When the progress display speaks up about something slow.
const (
	// slowStart is how long a target start goes unmentioned.
	slowStart = 2 * time.Second
	// slowRun is how long a scenario run goes unmentioned.
	slowRun = 5 * time.Second
	// beatEvery is the least time between two heartbeat lines.
	beatEvery = 10 * time.Second
	// tickEvery is how often the heartbeat looks at what is pending.
	tickEvery = time.Second
)

// progress reports on stderr what a run does while it runs: each finished
// scenario run (in place on a terminal, one plain line each otherwise; none
// when quiet), and, at most every beatEvery, a heartbeat line naming target
// starts and scenario runs that are taking long, with a line when such a
// start ends. It is safe for concurrent use.
type progress struct {
	mu       sync.Mutex
	w        io.Writer
	now      func() time.Time
	terminal bool
	quiet    bool
	total    int
	n        int
	failed   int
	// status is the in-place line on a terminal, redrawn after a heartbeat.
	status string
	// starts and runs are what is pending, by when it began.
	starts    map[pending]time.Time
	runs      map[pending]time.Time
	announced map[pending]bool
	lastBeat  time.Time
	stop      chan struct{}
	stopped   sync.WaitGroup
}

// pending names a target start (Scenario "" when shared) or a scenario run.
type pending struct {
	Target, Scenario string
	Run              int
}

func newProgress(opts *runOptions, total int) *progress {
	term := isTerminal(opts.ErrOut)
	if opts.Terminal != nil {
		term = *opts.Terminal
	}
	return &progress{
		w: opts.ErrOut, now: opts.Now, terminal: term, quiet: opts.Quiet, total: total,
		starts: map[pending]time.Time{}, runs: map[pending]time.Time{}, announced: map[pending]bool{},
	}
}

// beat calls heartbeat on every tick of ticks until finish; nil ticks
// means a ticker of tickEvery.
func (p *progress) beat(ticks <-chan time.Time) {
	p.stop = make(chan struct{})
	var ticker *time.Ticker
	if ticks == nil {
		ticker = time.NewTicker(tickEvery)
		ticks = ticker.C
	}
	p.stopped.Add(1)
	go func() {
		defer p.stopped.Done()
		if ticker != nil {
			defer ticker.Stop()
		}
		for {
			select {
			case <-p.stop:
				return
			case <-ticks:
				p.heartbeat()
			}
		}
	}()
}

func runKey(target, scenario string, rep *history.Repetition) pending {
	k := pending{Target: target, Scenario: scenario}
	if rep != nil {
		k.Run = rep.Index
	}
	return k
}

// event follows the runner's targets and runs (run.Options.OnEvent).
func (p *progress) event(e run.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := pending{Target: e.Target, Scenario: e.Scenario}
	switch e.Kind {
	case run.EventTargetStarting:
		p.starts[k] = e.At
	case run.EventTargetReady, run.EventTargetFailed:
		delete(p.starts, k)
		if !p.announced[k] {
			return
		}
		delete(p.announced, k)
		what := "ready in " + e.Elapsed.Round(100*time.Millisecond).String()
		if e.Kind == run.EventTargetFailed {
			what = "did not start (after " + e.Elapsed.Round(100*time.Millisecond).String() + ")"
		}
		p.line(fmt.Sprintf("target %s%s %s", report.TerminalText(e.Target), forScenario(e.Scenario), what))
	case run.EventRunStarted:
		p.runs[runKey(e.Target, e.Scenario, e.Run)] = e.At
	}
}

func forScenario(name string) string {
	if name == "" {
		return ""
	}
	return " (for " + report.TerminalText(name) + ")"
}

// heartbeat writes a line about the target starts and runs that take long,
// at most every beatEvery.
func (p *progress) heartbeat() {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if !p.lastBeat.IsZero() && now.Sub(p.lastBeat) < beatEvery {
		return
	}
	var lines []string
	for _, k := range sortedSlow(p.starts, now, slowStart) {
		p.announced[k] = true
		lines = append(lines, fmt.Sprintf("waiting for target %s%s to be ready… %s",
			report.TerminalText(k.Target), forScenario(k.Scenario), now.Sub(p.starts[k]).Round(time.Second)))
	}
	if slow := sortedSlow(p.runs, now, slowRun); len(slow) > 0 {
		k := slow[0]
		what := report.TerminalText(k.Scenario) + " on " + report.TerminalText(k.Target)
		if k.Run > 0 {
			what += fmt.Sprintf(" run %d", k.Run)
		}
		line := fmt.Sprintf("still running: %s… %s", what, now.Sub(p.runs[k]).Round(time.Second))
		if len(slow) > 1 {
			line = fmt.Sprintf("still running: %d runs for more than %s, the longest %s… %s", len(slow), slowRun, what, now.Sub(p.runs[k]).Round(time.Second))
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return
	}
	p.lastBeat = now
	for _, l := range lines {
		p.line(l)
	}
}

// sortedSlow returns the keys of m that began more than after before now,
// the longest pending first.
func sortedSlow(m map[pending]time.Time, now time.Time, after time.Duration) []pending {
	var out []pending
	for k, at := range m {
		if now.Sub(at) > after {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !m[out[i]].Equal(m[out[j]]) {
			return m[out[i]].Before(m[out[j]])
		}
		return fmt.Sprint(out[i]) < fmt.Sprint(out[j])
	})
	return out
}

// line writes a line of its own, above the in-place status on a terminal.
func (p *progress) line(l string) {
	if p.terminal && p.status != "" {
		fmt.Fprintf(p.w, "\r\033[K%s\n%s", l, p.status)
		return
	}
	fmt.Fprintln(p.w, l)
}

// done reports one finished, checked run; it is called one at a time.
func (p *progress) done(r rules.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	h, v := r.History, r.Verdict
	delete(p.runs, runKey(h.Target, h.Scenario, h.Repetition))
	if v != rules.Pass && v != rules.Skipped {
		p.failed++
	}
	if p.quiet {
		return
	}
	name, target := report.TerminalText(h.Scenario), report.TerminalText(h.Target)
	if p.terminal {
		p.status = fmt.Sprintf("\r\033[K[%d/%d] %d not passing · %s %s", p.n, p.total, p.failed, v, name)
		fmt.Fprint(p.w, p.status)
		return
	}
	run := ""
	if rp := h.Repetition; rp != nil {
		run = fmt.Sprintf(" run %d/%d", rp.Index, rp.Of)
	}
	fmt.Fprintf(p.w, "[%d/%d] %-7s %s on %s%s (%s)\n", p.n, p.total, v, name, target, run, h.Duration.D().Round(time.Millisecond))
}

// finish stops the heartbeat and ends the progress display.
func (p *progress) finish() {
	if p.stop != nil {
		close(p.stop)
		p.stopped.Wait()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal && p.status != "" {
		fmt.Fprint(p.w, "\r\033[K")
	} else if p.n > 0 && !p.quiet {
		fmt.Fprintln(p.w)
	}
}

// isTerminal reports whether w is a character device.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// terminalWidth is the width of w in columns when it is a terminal: $COLUMNS
// when set, else what the terminal says; 0 when unknown.
func terminalWidth(w io.Writer, getenv func(string) string) int {
	if !isTerminal(w) {
		return 0
	}
	var n int
	if _, err := fmt.Sscan(strings.TrimSpace(getenv("COLUMNS")), &n); err == nil && n > 0 {
		return n
	}
	return ttyWidth(w.(*os.File))
}
