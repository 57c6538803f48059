package ledger

import (
	"fmt"

	"github.com/replaycheck/replaycheck/internal/runtoken"
)

// CheckFault reports whether AddFaults would take f: a valid fault naming a
// tool this server offers (a forwarding ledger's, once listed).
func (s *Server) CheckFault(f Fault) error {
	_, _, err := f.resolveFor(s.knownTool, s.toolNames())
	return err
}

// armable validates faults against this server's tools and returns them
// ready to arm.
func (s *Server) armable(faults []Fault) ([]*armed, error) {
	return arm(faults, s.knownTool, s.toolNames())
}

// toolNames returns the function that lists the tools a fault may name.
func (s *Server) toolNames() func() []string {
	if s.fwd != nil {
		return s.fwd.names
	}
	return toolNames
}

// AddFaults arms faults after those already armed for token ("" = the
// global ones), whose counts it keeps, and returns their ids in order. It
// changes nothing on error; the error names the fault.
func (s *Server) AddFaults(token string, faults []Fault) ([]uint64, error) {
	if token != "" && !runtoken.Valid(token) {
		return nil, fmt.Errorf("arming the ledger: %q is not a run token", token)
	}
	a, err := s.armable(faults)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.numberLocked(a)
	if token == "" {
		s.global = append(s.global, a...)
	} else {
		r := s.runLocked(token)
		r.faults = append(r.faults, a...)
	}
	ids := make([]uint64, len(a))
	for i, x := range a {
		ids[i] = x.id
	}
	return ids, nil
}

// RemoveFault disarms the fault with id, wherever it is armed, and reports
// whether one was.
func (s *Server) RemoveFault(id uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	drop := func(list []*armed) ([]*armed, bool) {
		for i, a := range list {
			if a.id == id {
				return append(list[:i:i], list[i+1:]...), true
			}
		}
		return list, false
	}
	var ok bool
	if s.global, ok = drop(s.global); ok {
		return true
	}
	for _, r := range s.runs {
		if r.faults, ok = drop(r.faults); ok {
			return true
		}
	}
	return false
}

// numberLocked gives each fault the next id. s.mu must be held.
func (s *Server) numberLocked(a []*armed) {
	for _, x := range a {
		s.faultSeq++
		x.id = s.faultSeq
	}
}

// report is what became of a. The server's lock must be held.
func (a *armed) report() FaultReport {
	return FaultReport{ID: a.id, Fault: a.fault, Matched: a.seen, Fired: a.fired, Runs: a.runs.List()}
}
