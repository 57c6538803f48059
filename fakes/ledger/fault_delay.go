package ledger

import (
	"errors"

	"github.com/replaycheck/replaycheck/fakes/fault"
)

// delay holds a tool's answer back for its duration after the tool ran, or
// until the client cancels the call (which is counted) or the server closes.
type delay fault.Duration

func (d delay) check() error {
	if d <= 0 {
		return errors.New("want a positive duration such as \"5s\"")
	}
	return nil
}

func (d delay) apply(p *plan) {
	if p.delay == 0 {
		p.delay = fault.Duration(d).D()
	}
}
