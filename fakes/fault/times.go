// Package fault holds what the fakes' faults share: how often a fault fires
// (Times), the registry of armed faults with their counts and reports and
// the firing sequence (Registry), and how explore sweeps a kind (Probe).
//
// It is part of replaycheck's Go API: Times says how often a fault of
// fakes/upstream or fakes/ledger fires; the rest serves the fakes.
package fault

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Times says on which of its matching occurrences a fault fires. The zero
// value fires always.
//
// In YAML and JSON it is written `always`, `once`, a count `N` (the first N
// occurrences), or `{nth: K}` (only the K-th occurrence); on a command line
// the last is written `nth:K`.
type Times struct {
	// Count, when > 0, fires on occurrences 1..Count.
	Count int
	// Nth, when > 0, fires only on occurrence Nth.
	Nth int
}

// Always fires on every occurrence.
var Always = Times{}

// Once fires on the first occurrence only.
var Once = Times{Count: 1}

// Fires reports whether the fault fires on occurrence n (1-based) of its match.
func (t Times) Fires(n int) bool {
	switch {
	case t.Nth > 0:
		return n == t.Nth
	case t.Count > 0:
		return n <= t.Count
	default:
		return true
	}
}

// String renders t in its command-line form.
func (t Times) String() string {
	switch {
	case t.Nth > 0:
		return "nth:" + strconv.Itoa(t.Nth)
	case t.Count == 1:
		return "once"
	case t.Count > 0:
		return strconv.Itoa(t.Count)
	default:
		return "always"
	}
}

// ParseTimes parses the command-line form: always, once, N or nth:K.
func ParseTimes(s string) (Times, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "", "always":
		return Always, nil
	case "once":
		return Once, nil
	}
	if k, ok := strings.CutPrefix(s, "nth:"); ok {
		n, err := strconv.Atoi(strings.TrimSpace(k))
		if err != nil || n < 1 {
			return Times{}, fmt.Errorf("times %q: nth wants a whole number of at least 1", s)
		}
		return Times{Nth: n}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return Times{}, fmt.Errorf("times %q: want always, once, a count of at least 1, or nth:K", s)
	}
	return Times{Count: n}, nil
}

// MarshalJSON writes the YAML/JSON form.
func (t Times) MarshalJSON() ([]byte, error) {
	switch {
	case t.Nth > 0:
		return json.Marshal(map[string]int{"nth": t.Nth})
	case t.Count > 1:
		return json.Marshal(t.Count)
	default:
		return json.Marshal(t.String())
	}
}

// UnmarshalJSON reads the YAML/JSON form.
func (t *Times) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return t.fromValue(v)
}

// UnmarshalYAML reads the YAML form (github.com/goccy/go-yaml).
func (t *Times) UnmarshalYAML(unmarshal func(any) error) error {
	var v any
	if err := unmarshal(&v); err != nil {
		return err
	}
	return t.fromValue(v)
}

func (t *Times) fromValue(v any) error {
	switch x := v.(type) {
	case string:
		if strings.HasPrefix(x, "nth") {
			return fmt.Errorf("times %q: write nth as {nth: K}", x)
		}
		p, err := ParseTimes(x)
		if err != nil {
			return err
		}
		*t = p
		return nil
	case float64, int, int64, uint64:
		n, ok := wholeNumber(x)
		if !ok || n < 1 {
			return fmt.Errorf("times %v: want a count of at least 1", x)
		}
		*t = Times{Count: n}
		return nil
	case map[string]any:
		if len(x) != 1 {
			return fmt.Errorf("times: want {nth: K}, got %d keys", len(x))
		}
		k, ok := x["nth"]
		if !ok {
			return fmt.Errorf("times: unknown key; want {nth: K}")
		}
		n, ok := wholeNumber(k)
		if !ok || n < 1 {
			return fmt.Errorf("times: nth %v: want a whole number of at least 1", k)
		}
		*t = Times{Nth: n}
		return nil
	default:
		return fmt.Errorf("times: want always, once, a count or {nth: K}, got %v", v)
	}
}

func wholeNumber(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case int64:
		return int(x), true
	case uint64:
		return int(x), true
	case float64:
		if x != float64(int(x)) {
			return 0, false
		}
		return int(x), true
	}
	return 0, false
}
