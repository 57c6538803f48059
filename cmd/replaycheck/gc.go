package main

import (
	"os"
	"runtime/debug"
)

// Garbage collection of a replaycheck process, unless GOGC or GOMEMLIMIT
// say otherwise. A run's heap is small and short-lived (each scenario's
// requests, answers and MCP messages; the MCP SDK decodes every message
// through a fresh 32 KB buffer), so at Go's default (GOGC 100) the collector
// took a third of the CPU of a suite run (`go test -cpuprofile` of 1,000
// runs of the seed scenario). gcPercent 400 collects a quarter as often; the
// soft limit gcMemoryLimit brings the default pace back before a long run's
// kept histories make the heap large.
const (
	gcPercent     = 400
	gcMemoryLimit = 512 << 20
)

// tuneGC sets the collector's pace for a replaycheck process (see
// gcPercent), leaving GOGC and GOMEMLIMIT, when set, in charge.
func tuneGC() {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(gcPercent)
		debug.SetMemoryLimit(gcMemoryLimit)
	}
}
