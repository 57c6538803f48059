package upstream

import "github.com/replaycheck/replaycheck/internal/wire"

// Reset forgets every run's counts, records, faults and script, the global
// faults and the total; the default script stays, and the flag files act as
// before. A request in flight when Reset is called is counted afresh when it
// ends.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs = make(map[string]*runState)
	s.faults.Reset()
	s.changedLocked()
	s.total = wire.UpstreamCounts{}
	s.untokSeq = 0
}

// Forget forgets one run's counts, records, faults and script, and its
// counts in the global faults' reports, once its history is collected, so
// that a long series of runs on one server holds only the runs in flight. A
// request of the run that arrives later is counted afresh.
func (s *Server) Forget(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.runs, token)
	s.faults.Forget(token)
	s.changedLocked()
}
