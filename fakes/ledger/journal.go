package ledger

import (
	"errors"
	"fmt"
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
type journal struct {
	file *linefile.File // nil keeps the ledger in memory only

	mu      sync.Mutex
	lines   []string // synced lines, in file order
	pending *batch   // lines waiting for the writer
	closed  bool
	syncs   int // fsyncs done, for the benchmark's writes/fsync figure

	wake chan struct{} // buffered(1): a batch is pending or the journal closes
	done chan struct{} // closed when the writer goroutine has exited
}

// batch is one group of lines written and synced together.
type batch struct {
	lines []string
	first int           // index in journal.lines of lines[0], set when synced
	err   error         // set before done is closed
	done  chan struct{} // closed when the batch is synced (or failed)
}

// openJournal opens the ledger file at path for appending (creating it), or
// keeps the ledger in memory when path is "".
func openJournal(path string) (*journal, error) {
	j := &journal{wake: make(chan struct{}, 1), done: make(chan struct{})}
	if path == "" {
		close(j.done)
		return j, nil
	}
	f, err := linefile.Open(path, linefile.Options{Sync: true})
	if err != nil {
		return nil, fmt.Errorf("opening ledger file: %w", err)
	}
	j.file = f
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

// append writes line and returns its 1-based line number once it is synced.
// A queued line is written even if the caller stops waiting, so append does
// not take a context; it waits for one write and fsync at most.
func (j *journal) append(line string) (int, error) {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return 0, errClosed
	}
	if j.file == nil {
		j.lines = append(j.lines, line)
		n := len(j.lines)
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
				b.first = len(j.lines)
				j.lines = append(j.lines, b.lines...)
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

// snapshot returns a copy of the synced lines.
func (j *journal) snapshot() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.lines...)
}

// close writes what is pending, stops the writer and closes the file.
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
	if err := j.file.Close(); err != nil {
		return fmt.Errorf("ledger file: %w", err)
	}
	return nil
}
