package fault

import (
	"encoding/json"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// Armable is a fault as a fake arms it in a Registry: the fake's fault type,
// or a fake's value that carries it with what the fake derived from it when
// it was armed.
type Armable interface {
	// Occurrences says on which of its matching occurrences the fault
	// fires (its Times).
	Occurrences() Times
	// Report returns what a report of the fault says before any count: its
	// Side, the fault as armed (Fault, see FaultJSON) and its filters
	// (Method, Endpoint, Stream).
	Report() wire.FaultReport
}

// FaultJSON returns v, a fault, as JSON for wire.FaultReport.Fault; nil for
// nil or an empty value.
func FaultJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" || string(b) == "{}" {
		return nil
	}
	return b
}

// Armed is one fault armed in a Registry, with its counts. It is guarded by
// the lock that guards its registry.
type Armed[F Armable] struct {
	// Fault is the fault as armed; it must not be modified.
	Fault F
	// id is the fault's id in its registry (wire.FaultReport.ID).
	id uint64
	// matched counts its matching occurrences, fired those it acted on.
	matched, fired int
	// runs counts matched and fired per run token.
	runs wire.FaultRuns
}

// Fire counts one occurrence of token's that the fault acted on. The
// registry counts the occurrences a fault matched; the fake says when it
// acted (Registry.FireEach does both at once).
func (a *Armed[F]) Fire(token string) {
	a.fired++
	a.runs.Fire(token)
}

// report is what became of a: a.Fault's report with its counts.
func (a *Armed[F]) report(index int) wire.FaultReport {
	r := a.Fault.Report()
	r.Index, r.ID = index, a.id
	r.Matched, r.Fired, r.Runs = a.matched, a.fired, a.runs.List()
	return r
}

// Registry holds the faults armed on one fake: the global ones (token "",
// which apply to every run) and each run token's, each list in armed order.
// It numbers every fault it arms with an id never given before (arming
// again gives new ones), counts per fault the occurrences it matched and
// those it fired on, in total and per run, and reports both. The zero value
// is empty and ready. A Registry is not safe for concurrent use: the fake
// guards it with its own lock.
//
// An occurrence (a model request, a tools/call, a session step, a spawn) is
// matched against its run's faults first, then the global ones (Pick,
// FireEach); each fault counts its own matching occurrences for its Times.
type Registry[F Armable] struct {
	seq    uint64
	global []*Armed[F]
	runs   map[string][]*Armed[F]
}

// number arms faults as new entries with the next ids.
func (r *Registry[F]) number(faults []F) []*Armed[F] {
	out := make([]*Armed[F], len(faults))
	for i, f := range faults {
		r.seq++
		out[i] = &Armed[F]{Fault: f, id: r.seq}
	}
	return out
}

// list returns the faults armed for token ("" = the global ones).
func (r *Registry[F]) list(token string) []*Armed[F] {
	if token == "" {
		return r.global
	}
	return r.runs[token]
}

// set replaces the faults armed for token.
func (r *Registry[F]) set(token string, list []*Armed[F]) {
	if token == "" {
		r.global = list
		return
	}
	if r.runs == nil {
		r.runs = make(map[string][]*Armed[F])
	}
	r.runs[token] = list
}

// Arm replaces the faults armed for token ("" = the global ones), and their
// counts, with faults.
func (r *Registry[F]) Arm(token string, faults []F) {
	r.set(token, r.number(faults))
}

// Add arms faults after those already armed for token ("" = the global
// ones), whose counts it keeps, and returns their ids in order.
func (r *Registry[F]) Add(token string, faults []F) []uint64 {
	added := r.number(faults)
	r.set(token, append(r.list(token), added...))
	ids := make([]uint64, len(added))
	for i, a := range added {
		ids[i] = a.id
	}
	return ids
}

// Remove disarms the fault with id, wherever it is armed, and reports
// whether one was.
func (r *Registry[F]) Remove(id uint64) bool {
	drop := func(list []*Armed[F]) ([]*Armed[F], bool) {
		for i, a := range list {
			if a.id == id {
				return append(list[:i:i], list[i+1:]...), true
			}
		}
		return list, false
	}
	var ok bool
	if r.global, ok = drop(r.global); ok {
		return true
	}
	for token, list := range r.runs {
		if list, ok = drop(list); ok {
			r.runs[token] = list
			return true
		}
	}
	return false
}

// Reports returns, in armed order, what became of the faults armed for
// token ("" = the global faults), numbered from 1 in that order
// (wire.FaultReport.Index); nil when none are armed.
func (r *Registry[F]) Reports(token string) []wire.FaultReport {
	list := r.list(token)
	if len(list) == 0 {
		return nil
	}
	out := make([]wire.FaultReport, len(list))
	for i, a := range list {
		out[i] = a.report(i + 1)
	}
	return out
}

// Armed returns the faults armed for token ("" = the global faults), in
// armed order, and their reports (see Reports), index by index; nil when
// none are armed.
func (r *Registry[F]) Armed(token string) ([]F, []wire.FaultReport) {
	list := r.list(token)
	if len(list) == 0 {
		return nil, nil
	}
	faults := make([]F, len(list))
	for i, a := range list {
		faults[i] = a.Fault
	}
	return faults, r.Reports(token)
}

// Forget drops the faults armed for token and its counts in the global
// faults' reports (their totals stay).
func (r *Registry[F]) Forget(token string) {
	delete(r.runs, token)
	for _, a := range r.global {
		a.runs.Forget(token)
	}
}

// Reset drops every armed fault, global and per run. Ids given before are
// still never given again.
func (r *Registry[F]) Reset() {
	r.global, r.runs = nil, nil
}

// occur is the firing sequence, written once: it counts one occurrence of
// token's against each fault that matches it — token's faults, then the
// global ones — and hands each fault whose Times pick this occurrence to
// picked, until picked returns false: the faults after it count nothing.
func (r *Registry[F]) occur(token string, match func(*F) bool, picked func(*Armed[F]) bool) {
	lists := [2][]*Armed[F]{r.global}
	if token != "" {
		lists = [2][]*Armed[F]{r.runs[token], r.global}
	}
	for _, list := range lists {
		for _, a := range list {
			if !match(&a.Fault) {
				continue
			}
			a.matched++
			a.runs.Match(token)
			if a.Fault.Occurrences().Fires(a.matched) && !picked(a) {
				return
			}
		}
	}
}

// Pick matches one occurrence of token's (see Registry) and returns the
// first fault whose Times pick it, nil when none does; the faults after
// that one do not count it. The fake calls Fire on the returned fault once
// it acted.
func (r *Registry[F]) Pick(token string, match func(*F) bool) *Armed[F] {
	var first *Armed[F]
	r.occur(token, match, func(a *Armed[F]) bool {
		first = a
		return false
	})
	return first
}

// FireEach matches one occurrence of token's (see Registry) against every
// fault, fires each whose Times pick it (it acts on the occurrence) and
// hands its fault to fired, in order.
func (r *Registry[F]) FireEach(token string, match func(*F) bool, fired func(*F)) {
	r.occur(token, match, func(a *Armed[F]) bool {
		a.Fire(token)
		fired(&a.Fault)
		return true
	})
}
