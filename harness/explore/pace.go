package explore

import (
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/harness/rules"
)

// paceFactor is how many clean runs of the target a lingering cut lasts
// (Settings.Linger) and how many a dribbled stream's events take together
// (Settings.Dribble times the events): long beside what the target takes to
// answer, so it does not look like an answer at full speed, and short
// beside the sweep.
const paceFactor = 10

// paced returns set with its zero Linger and Dribble scaled to the pace of
// a base on the target, the duration of its clean run: paceFactor clean
// runs (to the millisecond), between a tenth of fault.DefaultSettings' and
// the default itself. A target that answers in microseconds (the built-in
// gateway) lingers tens of milliseconds instead of half a second on each of
// its many retries; an agent CLI, whose clean run takes seconds, lingers the
// default. Set fields are kept: they were asked for. A nil clean run keeps
// the default.
func paced(set fault.Settings, clean *rules.Result) fault.Settings {
	pace := fault.DefaultSettings.Linger
	if clean != nil && clean.History != nil {
		pace = clean.History.Duration.D()
	}
	scale := func(d *time.Duration, def time.Duration, per time.Duration) {
		if *d <= 0 {
			*d = min(max(per.Truncate(time.Millisecond), def/10), def)
		}
	}
	scale(&set.Linger, fault.DefaultSettings.Linger, paceFactor*pace)
	// A dribbled stream has a dozen events or so: its wait per event is a
	// tenth of the linger's.
	scale(&set.Dribble, fault.DefaultSettings.Dribble, paceFactor*pace/10)
	return set
}
