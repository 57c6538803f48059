// Package duration is the duration both the fakes and the harness write as a Go
// duration string ("250ms", "2s") in YAML and JSON.
package duration

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration written as a Go duration string ("250ms",
// "2s") in YAML and JSON. The zero value is no wait.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String renders d like time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: want a string such as \"250ms\" or \"2s\", got %s", b)
	}
	return d.parse(s)
}

// UnmarshalYAML reads a duration string (github.com/goccy/go-yaml).
func (d *Duration) UnmarshalYAML(unmarshal func(any) error) error {
	var v any
	if err := unmarshal(&v); err != nil {
		return err
	}
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("duration: want a string such as \"250ms\" or \"2s\", got %v", v)
	}
	return d.parse(s)
}

func (d *Duration) parse(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: want a number with a unit, such as \"250ms\" or \"2s\"", s)
	}
	if v < 0 {
		return fmt.Errorf("duration %q: must not be negative", s)
	}
	*d = Duration(v)
	return nil
}
