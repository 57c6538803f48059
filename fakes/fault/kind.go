package fault

import (
	"fmt"
	"time"
)

// Action is one fault kind's settings as a fault F of a fake carries them
// (a field of F): what every kind says of itself, whatever hooks of its fake
// it acts at.
type Action[F any] interface {
	// Check reports a bad setting of the kind, naming the setting; f is the
	// whole fault.
	Check(f *F) error
	// Holds estimates how long one firing of the kind holds its run back,
	// for a scheduler that starts the longest runs first; giveUp is how long
	// the caller waits for an answer before it gives up. Zero: it holds
	// nothing back.
	Holds(giveUp time.Duration) time.Duration
}

// Kind is one row of a fake's fault kind table: F is the fake's fault type,
// A its kinds' interface (an Action and the fake's hooks), T what else the
// fake knows of a kind (how it combines, the transport it needs). Each kind's
// file returns its row.
type Kind[F any, A Action[F], T any] struct {
	// Name is the kind's YAML name, its field in F.
	Name string
	// Get returns f's settings of the kind as its action, nil when f does
	// not use it.
	Get func(f *F) A
	// Probes returns the kind's explore probes; nil: none.
	Probes func() []Probe[F]
	// Traits is what else the fake knows of the kind.
	Traits T
}

// Used is one kind a fault uses: its row and the fault's action of it.
type Used[F any, A Action[F], T any] struct {
	Kind *Kind[F, A, T]
	Act  A
}

// KindTable is a fake's fault kinds, keyed by YAML name, in explore's sweep
// order: the one place a fake lists its kinds. Its methods read it and
// never change it.
type KindTable[F any, A Action[F], T any] []Kind[F, A, T]

// Names returns the kinds' YAML names, in table order.
func (t KindTable[F, A, T]) Names() []string {
	names := make([]string, len(t))
	for i := range t {
		names[i] = t[i].Name
	}
	return names
}

// Lookup returns the row of the kind called name, and whether there is one.
func (t KindTable[F, A, T]) Lookup(name string) (*Kind[F, A, T], bool) {
	for i := range t {
		if t[i].Name == name {
			return &t[i], true
		}
	}
	return nil, false
}

// Uses returns the kinds f uses, in table order, each with its action.
func (t KindTable[F, A, T]) Uses(f *F) []Used[F, A, T] {
	var out []Used[F, A, T]
	for i := range t {
		if a := t[i].Get(f); any(a) != nil {
			out = append(out, Used[F, A, T]{Kind: &t[i], Act: a})
		}
	}
	return out
}

// Check checks the settings of each kind f uses, in table order, and
// returns the first error, prefixed with its kind's name ("delay: …").
func (t KindTable[F, A, T]) Check(f *F) error {
	for _, u := range t.Uses(f) {
		if err := u.Act.Check(f); err != nil {
			return fmt.Errorf("%s: %w", u.Kind.Name, err)
		}
	}
	return nil
}

// Hold estimates how long one firing of f holds its run back: the sum of
// what each kind it uses Holds (see Action); giveUp is how long the caller
// waits for an answer before it gives up.
func (t KindTable[F, A, T]) Hold(f *F, giveUp time.Duration) time.Duration {
	var d time.Duration
	for _, u := range t.Uses(f) {
		d += u.Act.Holds(giveUp)
	}
	return d
}

// Probes returns the kinds' probes as explore sweeps them, each kind's own
// in table order, with Family set to the kind's name; fill, when not nil,
// completes each from its kind's row. The slice is new on every call.
func (t KindTable[F, A, T]) Probes(fill func(k *Kind[F, A, T], p *Probe[F])) []Probe[F] {
	var out []Probe[F]
	for i := range t {
		if t[i].Probes == nil {
			continue
		}
		for _, p := range t[i].Probes() {
			p.Family = t[i].Name
			if fill != nil {
				fill(&t[i], &p)
			}
			out = append(out, p)
		}
	}
	return out
}
