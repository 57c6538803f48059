package upstream

import (
	"fmt"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
)

// maxDribble bounds the wait before each event of a dribbled stream.
const maxDribble = time.Minute

// dribbleAction paces a streamed answer: it waits its duration before each
// event. Like a delay it may accompany drop, stream_error or stall (it
// then fires when they do); alone it fires by pacing an answer, logged
// delayed — or client_gone when the client left before the last event.
type dribbleAction struct{ d fault.Duration }

func (a dribbleAction) validate(f *Fault) error {
	switch {
	case a.d <= 0:
		return fmt.Errorf("%s: want a positive duration such as 50ms", a.d)
	case a.d.D() > maxDribble:
		return fmt.Errorf("%s is over the %s limit per event", a.d, maxDribble)
	}
	return streamOnly(f, "a dribble")
}

func (a dribbleAction) apply(x *exchange) bool {
	x.dribble = a.d.D()
	return false
}
