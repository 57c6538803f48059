package explore

import (
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// paceFactor is how many clean runs of the target a lingering cut lasts
// (Settings.Linger), a slow tool holds its answer (Settings.Slow) and a
// dribbled stream's events take together (Settings.Dribble times the
// events): long beside what the target takes to answer, so it does not
// look like an answer at full speed, and short beside the sweep.
const paceFactor = 10

// paced returns set with its zero Slow, Linger and Dribble scaled to the
// pace of a base on the target, the duration of its clean run: paceFactor
// clean runs (to the millisecond), between a tenth of
// fault.DefaultSettings' and the default itself; a slow tool at least twice
// toolTimeout, the base's own bound of a tool call (the built-in gateway's
// tool_timeout; 0 when the base sets none), so it still outlasts it. A
// target that answers in microseconds (the built-in gateway) lingers tens of
// milliseconds instead of half a second on each of its many retries; an
// agent CLI, whose clean run takes seconds, keeps the defaults. Set fields
// are kept: they were asked for. A nil clean run keeps the defaults.
func paced(set fault.Settings, clean *rules.Result, toolTimeout time.Duration) fault.Settings {
	pace := fault.DefaultSettings.Linger
	if clean != nil && clean.History != nil {
		pace = clean.History.Duration.D()
	}
	scale := func(d *time.Duration, def, per, least time.Duration) {
		if *d <= 0 {
			*d = min(max(per.Truncate(time.Millisecond), def/10, least), def)
		}
	}
	scale(&set.Slow, fault.DefaultSettings.Slow, paceFactor*pace, 2*toolTimeout)
	scale(&set.Linger, fault.DefaultSettings.Linger, paceFactor*pace, 0)
	// A dribbled stream has a dozen events or so: its wait per event is a
	// tenth of the linger's.
	scale(&set.Dribble, fault.DefaultSettings.Dribble, paceFactor*pace/10, 0)
	return set
}
