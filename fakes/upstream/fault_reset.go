package upstream

// resetAction resets the connection (RST) before any byte of an answer.
type resetAction struct{}

func (resetAction) validate(*Fault) error { return nil }

func (resetAction) apply(x *exchange) bool {
	x.acted = true
	x.finish(OutcomeReset, 0)
	x.closeConn(true)
	return true
}
