package upstream

import "fmt"

// dropAction cuts a streamed answer: the exchange sends the stream up to the
// drop point and then closes the connection.
type dropAction struct{ d *Drop }

func (a dropAction) validate(f *Fault) error {
	switch a.d.After {
	case DropAfterHeaders, DropAfterToolCall:
		if a.d.Events != 0 {
			return fmt.Errorf("events: only with after: events")
		}
	case DropAfterEvents:
		if a.d.Events < 1 {
			return fmt.Errorf("events: want at least 1 with after: events")
		}
	default:
		return fmt.Errorf("after: %q is not headers, tool_call or events", a.d.After)
	}
	if f.Stream != nil && !*f.Stream {
		return fmt.Errorf("stream: a drop applies only to streamed requests; remove stream: false")
	}
	return nil
}

func (a dropAction) apply(x *exchange) bool {
	x.cut = a.d
	return false
}
