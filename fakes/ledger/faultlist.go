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
func (s *Server) armable(faults []Fault) ([]armable, error) {
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
	if token != "" {
		s.runLocked(token)
	}
	return s.faults.Add(token, a), nil
}

// RemoveFault disarms the fault with id, wherever it is armed, and reports
// whether one was.
func (s *Server) RemoveFault(id uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults.Remove(id)
}
