package scenario

// checkRepeat checks repeat and expect.allow_failures: at least one run, no
// negative allowance, and an allowance below the number of runs (a scenario
// that allows every run to fail could never fail).
func checkRepeat(s *Scenario, fail func(path []any, format string, args ...any)) {
	if s.Repeat != nil && *s.Repeat < 1 {
		fail([]any{"repeat"}, "repeat %d: want the number of runs, 1 or more (leave repeat out to run once)", *s.Repeat)
		return
	}
	k := s.Expect.AllowFailures
	switch {
	case k < 0:
		fail([]any{"expect", "allow_failures"}, "allow_failures %d: want how many runs may fail, 0 (every run must pass) or more", k)
	case k > 0 && s.Repeat == nil:
		fail([]any{"expect", "allow_failures"}, "allow_failures %d needs repeat: a scenario that runs once cannot allow failed runs; set repeat to more than %d", k, k)
	case k >= s.Runs():
		fail([]any{"expect", "allow_failures"}, "allow_failures %d of repeat %d: the scenario could never fail; allow fewer failures or set repeat to more than %d", k, s.Runs(), k)
	}
}
