package ledger

import "slices"

// Lines are the ledger lines the server keeps in memory, which read_ledger
// and Entries return, and those it forgot: with the runs that wrote them
// (Forget) and the oldest of no run (Trim). The ledger file keeps them all.
type Lines struct {
	Kept      int `json:"kept"`
	Forgotten int `json:"forgotten"`
}

// Lines returns how many ledger lines the server keeps and forgot.
func (s *Server) Lines() Lines { return s.journal.counts() }

// Trim bounds what the ledger keeps of no run token (""), which Forget
// never drops: of the idempotency keys seen without a token (with their
// first results, as Forget lets a run's go), the ledger lines written
// without one, the ends of ledger-stdio processes recorded without one and
// the events without one, it keeps the newest keep of each and forgets the
// older ones; Keys and Lines count them. keep 0 forgets them all. A
// long-lived ledger (replaycheck serve) calls it with Forget so that what
// it keeps stays bounded however many runs and calls come.
func (s *Server) Trim(keep int) {
	keep = max(keep, 0)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.journal.trim("", keep)
	r, ok := s.runs[""]
	if !ok {
		return
	}
	for _, key := range r.keys.dropOldest(keep) {
		s.dropKeyLocked(key)
	}
	if n := len(r.stdioEnded) - keep; n > 0 {
		for _, session := range r.stdioEnded[:n] {
			delete(s.stdioEnded, session)
		}
		r.stdioEnded = slices.Clone(r.stdioEnded[n:])
	}
	if n := len(r.events) - keep; n > 0 {
		r.events = slices.Clone(r.events[n:])
	}
}

// orderedSet is a set of strings that keeps the order they were added in,
// so that the oldest can be let go first. The zero value is empty.
type orderedSet struct {
	has   map[string]struct{}
	order []string
}

// add adds v and reports whether it was new.
func (o *orderedSet) add(v string) bool {
	if _, ok := o.has[v]; ok {
		return false
	}
	if o.has == nil {
		o.has = map[string]struct{}{}
	}
	o.has[v] = struct{}{}
	o.order = append(o.order, v)
	return true
}

// all returns the members, oldest first; the caller must not modify it.
func (o *orderedSet) all() []string { return o.order }

// dropOldest removes every member but the newest keep and returns them,
// oldest first.
func (o *orderedSet) dropOldest(keep int) []string {
	n := len(o.order) - keep
	if n <= 0 {
		return nil
	}
	old := o.order[:n]
	for _, v := range old {
		delete(o.has, v)
	}
	o.order = slices.Clone(o.order[n:])
	return old
}
