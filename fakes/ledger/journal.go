package ledger

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/replaycheck/replaycheck/internal/linefile"
)

// errClosed is returned by writes after the ledger was closed.
var errClosed = errors.New("ledger is closed")

// journal keeps the ledger lines in memory and, when it has a file, appends
// them to it. Writes to a file are grouped: one writer goroutine takes every
// line queued while the previous group was being synced, writes them with
// one write and one fsync, and only then wakes their callers. A line is never
// acknowledged before it is synced, and a group that fails is cut back off
// the file (linefile), so the file holds exactly the acknowledged lines.
//
// In memory it keeps each line with the run token that wrote it, so that a
// run's lines go with the run (forget) and the lines of no run can be
// bounded (trim); the file keeps every line, and line numbers are the file's.
type journal struct {
	file   *linefile.File // nil keeps the ledger in memory only
	shared bool           // file is another's: close leaves it open

	mu sync.Mutex
	// lines are the synced lines kept, in file order; the forgotten ones
	// among them (holes) are dropped once they are half of them.
	lines     []keptLine
	holes     int
	byRun     map[string][]int // the numbers of the lines kept, by run token, ascending
	written   int              // lines synced: the number of the last one
	forgotten int              // lines forgotten (forget, trim)
	pending   *batch           // lines waiting for the writer
	closed    bool
	syncs     int // fsyncs done, for the benchmark's writes/fsync figure

	wake chan struct{} // buffered(1): a batch is pending or the journal closes
	done chan struct{} // closed when the writer goroutine has exited
}

// keptLine is one ledger line kept in memory; gone is set when it is
// forgotten (its text is let go then).
type keptLine struct {
	n    int // 1-based, in the file
	text string
	gone bool
}

// batch is one group of lines written and synced together.
type batch struct {
	lines []string
	runs  []string      // the run token of each line
	first int           // number of the line before lines[0], set when synced
	err   error         // set before done is closed
	done  chan struct{} // closed when the batch is synced (or failed)
}

// openJournal opens the ledger file at path for appending (creating it),
// or appends to shared, a file open already, or keeps the ledger in memory
// when neither is given.
func openJournal(path string, shared *linefile.File) (*journal, error) {
	j := &journal{byRun: map[string][]int{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	switch {
	case shared != nil:
		j.file, j.shared = shared, true
	case path == "":
		close(j.done)
		return j, nil
	default:
		f, err := linefile.Open(path, linefile.Options{Sync: true})
		if err != nil {
			return nil, fmt.Errorf("opening ledger file: %w", err)
		}
		j.file = f
	}
	go j.writer()
	return j, nil
}

// oneLine makes entry one ledger line: line breaks are escaped, so every
// write is exactly one line of the file.
func oneLine(entry string) string {
	if !strings.ContainsAny(entry, "\r\n") {
		return entry
	}
	return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(entry)
}

// append writes line for the run of token run ("" = no run) and returns its
// 1-based line number once it is synced. A queued line is written even if
// the caller stops waiting, so append does not take a context; it waits for
// one write and fsync at most.
func (j *journal) append(run, line string) (int, error) {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return 0, errClosed
	}
	if j.file == nil {
		j.keepLocked(run, line)
		n := j.written
		j.mu.Unlock()
		return n, nil
	}
	b := j.pending
	if b == nil {
		b = &batch{done: make(chan struct{})}
		j.pending = b
	}
	i := len(b.lines)
	b.lines = append(b.lines, line)
	b.runs = append(b.runs, run)
	j.mu.Unlock()
	select {
	case j.wake <- struct{}{}:
	default:
	}
	<-b.done
	if b.err != nil {
		return 0, b.err
	}
	return b.first + i + 1, nil
}

// writer writes pending batches until the journal closes and nothing is
// pending.
func (j *journal) writer() {
	defer close(j.done)
	var buf []byte
	for range j.wake {
		for {
			j.mu.Lock()
			b, closed := j.pending, j.closed
			j.pending = nil
			j.mu.Unlock()
			if b == nil {
				if closed {
					return
				}
				break
			}
			buf = buf[:0]
			for _, l := range b.lines {
				buf = append(buf, l...)
				buf = append(buf, '\n')
			}
			err := j.writeSync(buf)
			j.mu.Lock()
			j.syncs++
			if err == nil {
				b.first = j.written
				for i, l := range b.lines {
					j.keepLocked(b.runs[i], l)
				}
			}
			j.mu.Unlock()
			b.err = err
			close(b.done)
		}
	}
}

func (j *journal) writeSync(buf []byte) error {
	if err := j.file.Append(buf); err != nil {
		return fmt.Errorf("ledger file: %w", err)
	}
	return nil
}

// keepLocked keeps line, the next one synced, as the run's. j.mu must be
// held.
func (j *journal) keepLocked(run, line string) {
	j.written++
	j.lines = append(j.lines, keptLine{n: j.written, text: line})
	j.byRun[run] = append(j.byRun[run], j.written)
}

// snapshot returns a copy of the synced lines kept, in file order.
func (j *journal) snapshot() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]string, 0, len(j.lines)-j.holes)
	for _, l := range j.lines {
		if !l.gone {
			out = append(out, l.text)
		}
	}
	return out
}

// forget lets go of the lines of run.
func (j *journal) forget(run string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.dropLocked(j.byRun[run])
	delete(j.byRun, run)
}

// trim lets go of the lines of run but the newest keep.
func (j *journal) trim(run string, keep int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	ns := j.byRun[run]
	if len(ns) <= keep {
		return
	}
	j.dropLocked(ns[:len(ns)-keep])
	j.byRun[run] = slices.Clone(ns[len(ns)-keep:])
}

// orphan makes every line kept a line of no run (""), as Server.Reset
// forgets the runs but keeps the lines, so that trim bounds them.
func (j *journal) orphan() {
	j.mu.Lock()
	defer j.mu.Unlock()
	var all []int
	for _, ns := range j.byRun {
		all = append(all, ns...)
	}
	slices.Sort(all)
	j.byRun = map[string][]int{}
	if len(all) > 0 {
		j.byRun[""] = all
	}
}

// dropLocked forgets the lines numbered ns, and drops the forgotten lines
// from j.lines once they are half of it. j.mu must be held.
func (j *journal) dropLocked(ns []int) {
	for _, n := range ns {
		i, ok := slices.BinarySearchFunc(j.lines, n, func(l keptLine, n int) int { return cmp.Compare(l.n, n) })
		if !ok || j.lines[i].gone {
			continue
		}
		j.lines[i] = keptLine{n: n, gone: true}
		j.holes++
		j.forgotten++
	}
	if j.holes == 0 || j.holes*2 < len(j.lines) {
		return
	}
	kept := make([]keptLine, 0, len(j.lines)-j.holes)
	for _, l := range j.lines {
		if !l.gone {
			kept = append(kept, l)
		}
	}
	j.lines, j.holes = kept, 0
}

// counts returns how many lines are kept and forgotten.
func (j *journal) counts() Lines {
	j.mu.Lock()
	defer j.mu.Unlock()
	return Lines{Kept: len(j.lines) - j.holes, Forgotten: j.forgotten}
}

// close writes what is pending, stops the writer and closes the file (a
// shared one stays open).
func (j *journal) close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		<-j.done
		return nil
	}
	j.closed = true
	j.mu.Unlock()
	if j.file == nil {
		return nil
	}
	select {
	case j.wake <- struct{}{}:
	default:
	}
	<-j.done
	if j.shared {
		return nil
	}
	if err := j.file.Close(); err != nil {
		return fmt.Errorf("ledger file: %w", err)
	}
	return nil
}
