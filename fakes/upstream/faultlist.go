package upstream

import (
	"fmt"

	"github.com/replaycheck/replaycheck/fakes/upstream/cassette"
	"github.com/replaycheck/replaycheck/internal/runtoken"
)

// armable validates faults for token's list, as answered by player (nil:
// the script, the relay or Config.Cassette), and returns them ready to arm.
func (s *Server) armable(token string, player *cassette.Player, faults []Fault) ([]armable, error) {
	armed := make([]armable, len(faults))
	for i, f := range faults {
		if err := f.Validate(); err != nil {
			return nil, fmt.Errorf("arming upstream for %q: faults[%d].%w", token, i, err)
		}
		if s.cfg.Relay != "" && s.cfg.Cassette == nil && player == nil {
			if name := relayUnsupported(&f); name != "" {
				return nil, fmt.Errorf("arming upstream for %q: faults[%d].%s: not available in relay mode (scripted and replayed streams only)", token, i, name)
			}
		}
		armed[i] = armable{Fault: f, streams: f.streams(), reached: new(int)}
	}
	return armed, nil
}

// CheckFault reports whether AddFaults would take f: a valid fault this
// server can act on (a relay takes no stream faults).
func (s *Server) CheckFault(f Fault) error {
	if err := f.Validate(); err != nil {
		return err
	}
	if s.cfg.Relay != "" && s.cfg.Cassette == nil {
		if name := relayUnsupported(&f); name != "" {
			return fmt.Errorf("%s: not available in relay mode (scripted and replayed streams only)", name)
		}
	}
	return nil
}

// AddFaults arms faults after those already armed for token ("" = the
// global ones), whose counts it keeps, and returns their ids in order. It
// changes nothing on error.
func (s *Server) AddFaults(token string, faults []Fault) ([]uint64, error) {
	if token != "" && !runtoken.Valid(token) {
		return nil, fmt.Errorf("arming upstream: %q is not a run token", token)
	}
	armed, err := s.armable(token, nil, faults)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if token != "" {
		s.run(token)
	}
	return s.faults.Add(token, armed), nil
}

// RemoveFault disarms the fault with id, wherever it is armed, and reports
// whether one was.
func (s *Server) RemoveFault(id uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.faults.Remove(id) {
		return false
	}
	s.changedLocked()
	return true
}
