package upstream

import "fmt"

// maxLinger bounds a drop's linger, as maxDelay bounds a delay.
const maxLinger = maxDelay

// dropAction cuts a streamed answer: the exchange sends the stream up to the
// drop point, flushes it, lingers as long as the drop says, and then closes
// the connection.
type dropAction struct{ d *Drop }

func (a dropAction) validate(f *Fault) error {
	if a.d.After == DropAfterElapsed {
		switch {
		case a.d.Events != 0:
			return fmt.Errorf("events: only with after: events")
		case a.d.Elapsed <= 0:
			return fmt.Errorf("elapsed: want a positive duration such as 1500ms with after: elapsed")
		case a.d.Elapsed.D() > maxDelay:
			return fmt.Errorf("elapsed: %s is over the %s limit", a.d.Elapsed, maxDelay)
		}
	} else {
		if a.d.Elapsed != 0 {
			return fmt.Errorf("elapsed: only with after: elapsed")
		}
		if err := validatePoint(a.d.After, a.d.Events); err != nil {
			if a.d.After != DropAfterHeaders && a.d.After != DropAfterToolCall && a.d.After != DropAfterEvents {
				return fmt.Errorf("after: %q is not headers, tool_call, events or elapsed", a.d.After)
			}
			return err
		}
	}
	if a.d.Linger < 0 {
		return fmt.Errorf("linger: %s must not be negative", a.d.Linger)
	}
	if a.d.Linger.D() > maxLinger {
		return fmt.Errorf("linger: %s is over the %s limit", a.d.Linger, maxLinger)
	}
	return streamOnly(f, "a drop")
}

func (a dropAction) apply(x *exchange) bool {
	x.cut = a.d
	return false
}

// cutStream closes the connection of a stream being dropped, whose events
// up to the cut have been flushed: at once, or after the drop's linger. The
// linger ends early when the request's context ends (the client left, or
// the server's base context ended).
func (x *exchange) cutStream() {
	if d := x.cut.Linger.D(); d > 0 {
		wait := waitCtx
		if x.s.lingerWait != nil {
			wait = x.s.lingerWait
		}
		wait(x.r.Context(), d) // cut either way: elapsed or abandoned
	}
	x.closeConn(false)
}
