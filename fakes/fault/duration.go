package fault

import "github.com/replaycheck/replaycheck/internal/duration"

// Duration is a time.Duration written as a Go duration string ("250ms",
// "2s") in YAML and JSON (see internal/duration). The zero value is no wait.
type Duration = duration.Duration
