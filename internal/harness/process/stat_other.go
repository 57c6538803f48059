//go:build !linux

package process

import "time"

// cpuTime cannot read a process's CPU time without /proc: known is false.
func cpuTime(int) (d time.Duration, known bool) { return 0, false }

// groupRunDelay cannot read how long a process waited for a CPU without
// /proc: known is false.
func groupRunDelay(int) (d time.Duration, known bool) { return 0, false }
