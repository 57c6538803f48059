package run

import (
	"context"
	"sync"
)

// Sharing is a cap shared by several Runs at once (a matrix's agents swept
// together): a run of any of them starts only while fewer than Max of all
// their runs are in flight. Each Run still admits its own runs (Admission,
// counting its own runs in flight; a CPUHeadroom sees the others' load on
// the machine). The Runs sharing it also share one lateness probe: they
// run in one process, whose starvation one probe measures, and each probe
// costs a few percent of a CPU (a wake-up every probeInterval). A nil or
// zero Sharing caps nothing; it is safe for concurrent use and must not be
// copied after first use.
type Sharing struct {
	// Max caps the runs in flight of all the Runs sharing it; 0 means no
	// cap but each Run's Parallel.
	Max int

	once   sync.Once
	places chan struct{} // Max places; nil when Max is 0

	mu     sync.Mutex
	probe  *latenessProbe // nil while no Run is in flight
	probes int            // the Runs in flight using probe
}

// startProbe returns the lateness probe of the Runs sharing s, started for
// the first of them; each call is matched by a stopProbe. A nil s starts a
// probe of the caller's own.
func (s *Sharing) startProbe() *latenessProbe {
	if s == nil {
		return startProbe()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.probes == 0 {
		s.probe = startProbe()
	}
	s.probes++
	return s.probe
}

// stopProbe ends a Run's use of p, a probe startProbe returned: the last
// Run's stops it.
func (s *Sharing) stopProbe(p *latenessProbe) {
	if s == nil {
		p.stop()
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.probes--; s.probes == 0 {
		s.probe.stop()
		s.probe = nil
	}
}

// take waits for a place below Max, or for ctx's end.
func (s *Sharing) take(ctx context.Context) error {
	if s == nil {
		return ctx.Err()
	}
	s.once.Do(func() {
		if s.Max > 0 {
			s.places = make(chan struct{}, s.Max)
		}
	})
	if s.places == nil {
		return ctx.Err()
	}
	select {
	case s.places <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// free gives back a place take took.
func (s *Sharing) free() {
	if s != nil && s.places != nil {
		<-s.places
	}
}
