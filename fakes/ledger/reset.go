package ledger

import (
	"maps"
	"slices"
)

// Reset forgets every run's counts, events and faults, the global faults, the
// total and the idempotency keys seen (so a keyed write after it executes
// again), and gives back the tool list a change_tools fault changed. The
// ledger file is kept as it is: its lines stay, in the file and in memory
// (read_ledger, Entries, Lines), and later writes are appended; the lines
// kept and the ends of ledger-stdio processes recorded (each is recorded
// once) stay as those of no run, which Trim bounds. Calls in flight finish
// as they would have; what they record after the reset counts afresh.
func (s *Server) Reset() {
	s.restoreTools()
	s.mu.Lock()
	defer s.mu.Unlock()
	var ended []string
	for _, t := range slices.Sorted(maps.Keys(s.runs)) {
		ended = append(ended, s.runs[t].stdioEnded...)
	}
	s.runs = map[string]*run{}
	if len(ended) > 0 {
		r := newRun()
		r.stdioEnded = ended
		s.runs[""] = r
	}
	s.journal.orphan()
	s.total = newRun()
	s.faults.Reset()
	s.dedup = map[string]*keyedWrite{}
	s.keyRuns = map[string]int{}
	s.keysForgotten = 0
	s.wakeLocked() // WaitFor looks again
}

// Forget forgets one run's counts, events and faults, its counts in the
// global faults' reports, and the idempotency keys it saw that no other run
// kept saw (with the first results commit_write_keyed answers them with),
// once its history is collected, so that a long series of runs on one
// ledger holds only the runs in flight; the total and the global faults
// stay. The run's ledger lines go too (the file keeps them; read_ledger no
// longer returns them), and the ends of its ledger-stdio processes recorded.
// A call of the run that arrives later is counted afresh, and a keyed
// call with a forgotten key writes again. Keys and Lines count what was
// forgotten.
func (s *Server) Forget(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.runs[token]; ok {
		for _, key := range r.keys.all() {
			s.dropKeyLocked(key)
		}
		for _, session := range r.stdioEnded {
			delete(s.stdioEnded, session)
		}
	}
	s.journal.forget(token)
	delete(s.runs, token)
	s.faults.Forget(token)
}

// dropKeyLocked lets go of key for one run forgotten, and forgets it when
// no run kept saw it. s.mu must be held.
func (s *Server) dropKeyLocked(key string) {
	if s.keyRuns[key] > 1 {
		s.keyRuns[key]--
		return
	}
	delete(s.keyRuns, key)
	delete(s.dedup, key)
	s.keysForgotten++
}

// Keys are the idempotency keys the ledger remembers for
// commit_write_keyed: the ones the runs it keeps saw, and the ones it
// forgot with the last run that saw them (Forget).
type Keys struct {
	Kept      int `json:"kept"`
	Forgotten int `json:"forgotten"`
}

// Keys returns how many idempotency keys the ledger remembers and forgot.
func (s *Server) Keys() Keys {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Keys{Kept: len(s.keyRuns), Forgotten: s.keysForgotten}
}
