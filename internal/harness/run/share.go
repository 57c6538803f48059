package run

import (
	"context"
	"sync"
)

// Sharing is a cap shared by several Runs at once (a matrix's agents swept
// together): a run of any of them starts only while fewer than Max of all
// their runs are in flight. Each Run still admits its own runs (Admission,
// counting its own runs in flight; a CPUHeadroom sees the others' load on
// the machine). A nil or zero Sharing caps nothing; it is safe for
// concurrent use and must not be copied after first use.
type Sharing struct {
	// Max caps the runs in flight of all the Runs sharing it; 0 means no
	// cap but each Run's Parallel.
	Max int

	once   sync.Once
	places chan struct{} // Max places; nil when Max is 0
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
