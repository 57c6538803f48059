package ledger

// Reset forgets every run's counts, events and faults, the global faults, the
// total and the idempotency keys seen (so a keyed write after it executes
// again), and gives back the tool list a change_tools fault changed. The
// ledger file is kept as it is: its lines stay, and later writes are
// appended. Calls in flight finish as they would have; what they record
// after the reset counts afresh.
func (s *Server) Reset() {
	s.restoreTools()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs = map[string]*run{}
	s.total = newRun()
	s.faults.Reset()
	s.dedup = map[string]*keyedWrite{}
	s.wakeLocked() // WaitFor looks again
}

// Forget forgets one run's counts, events and faults, and its counts in the
// global faults' reports, once its history is collected, so that a long
// series of runs on one ledger holds only the runs in flight; the total,
// the global faults and the idempotency keys stay. A call of the run that
// arrives later is counted afresh.
func (s *Server) Forget(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.runs, token)
	s.faults.Forget(token)
}
