package run

import (
	"context"
	"sync"
)

// Sharing is shared by several Runs at once (a matrix's agents swept
// together): a run of any of them starts only while fewer than Max of all
// their runs are in flight, and their Admissions admit one run that starts
// processes at a time beside all their runs in flight, not each Run's own
// (a run that starts none is not held behind them) — so a CPUHeadroom
// starts a Run's first run at once only when none of any is in flight, and
// twenty Runs starting together do not start twenty processes at once. A
// nil Sharing shares nothing; it is safe for concurrent use and must not
// be copied after first use.
type Sharing struct {
	// Max caps the runs in flight of all the Runs sharing it; 0 means no
	// cap but each Run's Parallel.
	Max int

	once   sync.Once
	places chan struct{} // Max places; nil when Max is 0

	admitting sync.Mutex // held while one of the Runs admits a run that starts processes
	mu        sync.Mutex
	inFlight  int // the admitted runs of all the Runs, not yet ended
}

// admit asks a to admit a run that starts processes beside the runs in
// flight: those of all the Runs sharing s, one such admission at a time,
// and counts the run in as it is admitted; without s, beside own's runs
// alone.
func (s *Sharing) admit(ctx context.Context, a Admission, own func() int) error {
	if s == nil {
		return a.Admit(ctx, own)
	}
	s.admitting.Lock()
	defer s.admitting.Unlock()
	if err := a.Admit(ctx, s.running); err != nil {
		return err
	}
	s.add(1)
	return nil
}

// running returns the runs in flight of all the Runs sharing s.
func (s *Sharing) running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight
}

// started counts in a run that starts no processes, which needs no
// admission; ended counts out a run admit or started counted in.
func (s *Sharing) started() { s.add(1) }
func (s *Sharing) ended()   { s.add(-1) }

func (s *Sharing) add(n int) {
	if s != nil {
		s.mu.Lock()
		s.inFlight += n
		s.mu.Unlock()
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
