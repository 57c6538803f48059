package run

import (
	"context"
	"sync"
)

// Sharing is shared by several Runs at once (a matrix's agents swept
// together): a run of any of them starts only while fewer than Max of all
// their runs are in flight, and their Admissions admit one run at a time
// beside all their runs in flight, not each Run's own — so a CPUHeadroom
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

	admitting sync.Mutex // held while one of the Runs admits a run
	mu        sync.Mutex
	inFlight  int // the admitted runs of all the Runs, not yet ended
}

// admit makes the waits for a run to start (wait: the Admission's and the
// harness's) one at a time among the Runs sharing s, beside the runs in
// flight of all of them, and counts the run in when wait returns nil;
// without s, beside own's runs alone.
func (s *Sharing) admit(wait func(running func() int) error, own func() int) error {
	if s == nil {
		return wait(own)
	}
	s.admitting.Lock()
	defer s.admitting.Unlock()
	if err := wait(s.running); err != nil {
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

// ended counts out a run admit counted in.
func (s *Sharing) ended() { s.add(-1) }

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
