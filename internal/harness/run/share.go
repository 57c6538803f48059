package run

import (
	"context"
	"sync"
)

// Sharing is what several Runs at once share (a matrix's agents swept
// together): their runs in flight, which each Run's Admission sees as one
// count, and a cap on them. Each Run given it asks its Admission one call
// at a time across all of them. The zero value caps nothing; a Sharing is
// safe for concurrent use and must not be copied after first use.
type Sharing struct {
	// Max caps the runs in flight of all the Runs sharing it; 0 means no
	// cap but each Run's Parallel.
	Max int

	once      sync.Once
	places    chan struct{} // Max places; nil when Max is 0
	admitting sync.Mutex    // held while an Admission is asked
	mu        sync.Mutex
	inFlight  int
}

// init makes s's places once.
func (s *Sharing) init() {
	s.once.Do(func() {
		if s.Max > 0 {
			s.places = make(chan struct{}, s.Max)
		}
	})
}

// take waits for a place below Max, or for ctx's end.
func (s *Sharing) take(ctx context.Context) error {
	s.init()
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
	if s.places != nil {
		<-s.places
	}
}

// start counts a run in; end counts it out and frees its place.
func (s *Sharing) start() {
	s.mu.Lock()
	s.inFlight++
	s.mu.Unlock()
}

func (s *Sharing) end() {
	s.mu.Lock()
	s.inFlight--
	s.mu.Unlock()
	s.free()
}

// running is the runs in flight of all the Runs sharing s.
func (s *Sharing) running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight
}
