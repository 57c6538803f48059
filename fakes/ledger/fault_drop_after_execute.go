package ledger

// DropAfterExecute lets the tool run (the write is executed and synced), then
// closes the connection before any byte of the answer reaches the client: the
// client cannot tell whether the write happened. It has no settings. When it
// fires on a call in a JSON-RPC batch, the whole POST's answer is lost.
type DropAfterExecute struct{}

func (*DropAfterExecute) apply(p *plan) { p.drop = true }
