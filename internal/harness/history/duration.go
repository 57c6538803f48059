package history

import "github.com/replaycheck/replaycheck/internal/duration"

// Duration is a time.Duration written as a Go duration string ("250ms",
// "2s") in JSON and YAML, the encoding saved histories and reports use. The
// zero value is no time at all. It is the fakes' duration type too, defined
// in internal/duration, so the harness does not borrow it from a fake.
type Duration = duration.Duration
