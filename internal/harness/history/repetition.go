package history

// Repetition places a run among the runs of a repeated scenario on one
// target (its repeat: N, multiplied by run --repeat). Every run has a token
// of its own; the checker judges each run, then the runs together (see
// rules.Aggregate).
type Repetition struct {
	// Index is the run's place among the runs, from 1; Of is how many runs
	// the scenario has on the target.
	Index int `json:"index"`
	Of    int `json:"of"`
	// AllowFailures is how many of the Of runs may fail with the scenario
	// still passing: its expect.allow_failures times run --repeat.
	AllowFailures int `json:"allow_failures"`
}
