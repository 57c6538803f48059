package explore

import (
	"context"
	"testing"
)

// BenchmarkSweepNaive is a full depth-1 sweep of one streamed tool-call base
// per dialect on builtin:naive: clean runs, every cell, shrinking and the
// confirming runs. It reports the runs made and the findings.
func BenchmarkSweepNaive(b *testing.B) {
	tg, err := parseTargetB("builtin:naive")
	if err != nil {
		b.Fatal(err)
	}
	all, err := DefaultBases(tg)
	if err != nil {
		b.Fatal(err)
	}
	dialects := all[:3]
	for b.Loop() {
		rep, err := Explore(context.Background(), dialects, Options{Target: tg})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(rep.Runs), "runs/op")
		b.ReportMetric(float64(len(rep.Cells)), "cells/op")
		b.ReportMetric(float64(len(rep.Findings)), "findings/op")
	}
}
