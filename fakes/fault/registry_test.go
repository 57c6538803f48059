package fault

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// testFault is a fault that matches occurrences of one name.
type testFault struct {
	On    string `json:"on"`
	Times Times  `json:"times,omitzero"`
}

func (f testFault) Occurrences() Times { return f.Times }

func (f testFault) Report() wire.FaultReport {
	return wire.FaultReport{Side: "test", Fault: FaultJSON(f)}
}

func on(name string) func(*testFault) bool {
	return func(f *testFault) bool { return f.On == name }
}

// counts are a report's counts, for diffs.
type counts struct {
	ID             uint64
	Matched, Fired int
	Runs           []wire.FaultRunCounts
}

func countsOf(rs []wire.FaultReport) []counts {
	var out []counts
	for _, r := range rs {
		out = append(out, counts{r.ID, r.Matched, r.Fired, r.Runs})
	}
	return out
}

func TestRegistry(t *testing.T) {
	const run, other = "rc1", "rc2"
	tests := []struct {
		name       string
		do         func(r *Registry[testFault])
		wantRun    []counts
		wantGlobal []counts
	}{
		{
			name: "pick takes the run's first fault that fires; the ones after it count nothing",
			do: func(r *Registry[testFault]) {
				r.Arm(run, []testFault{{On: "a", Times: Times{Nth: 2}}, {On: "a"}})
				r.Arm("", []testFault{{On: "a"}})
				for range 2 {
					if a := r.Pick(run, on("a")); a != nil {
						a.Fire(run)
					}
				}
			},
			wantRun: []counts{
				{ID: 1, Matched: 2, Fired: 1, Runs: []wire.FaultRunCounts{{Run: run, Matched: 2, Fired: 1}}},
				{ID: 2, Matched: 1, Fired: 1, Runs: []wire.FaultRunCounts{{Run: run, Matched: 1, Fired: 1}}},
			},
			wantGlobal: []counts{{ID: 3}},
		},
		{
			name: "fire each fires every fault whose times pick the occurrence, the run's then the global ones",
			do: func(r *Registry[testFault]) {
				r.Arm(run, []testFault{{On: "a", Times: Once}, {On: "b"}})
				r.Arm("", []testFault{{On: "a"}})
				var order []string
				for range 2 {
					r.FireEach(run, on("a"), func(f *testFault) { order = append(order, f.On) })
				}
				r.FireEach(other, on("a"), func(*testFault) {})
				if diff := cmp.Diff([]string{"a", "a", "a"}, order); diff != "" {
					t.Errorf("fired (-want +got):\n%s", diff)
				}
			},
			wantRun: []counts{
				{ID: 1, Matched: 2, Fired: 1, Runs: []wire.FaultRunCounts{{Run: run, Matched: 2, Fired: 1}}},
				{ID: 2},
			},
			wantGlobal: []counts{{ID: 3, Matched: 3, Fired: 3, Runs: []wire.FaultRunCounts{{Run: run, Matched: 2, Fired: 2}, {Run: other, Matched: 1, Fired: 1}}}},
		},
		{
			name: "ids are never reused: arming again, adding, removing and resetting give new ones",
			do: func(r *Registry[testFault]) {
				r.Arm(run, []testFault{{On: "a"}})
				r.Arm(run, []testFault{{On: "a"}})
				if ids := r.Add(run, []testFault{{On: "b"}, {On: "c"}}); !cmp.Equal(ids, []uint64{3, 4}) {
					t.Errorf("Add = %v, want [3 4]", ids)
				}
				if !r.Remove(3) || r.Remove(3) || r.Remove(1) {
					t.Error("Remove(3) twice, then Remove(1) of a fault armed over: want true, false, false")
				}
				r.Reset()
				r.Add("", []testFault{{On: "a"}})
			},
			wantGlobal: []counts{{ID: 5}},
		},
		{
			name: "forget drops the run's faults and its counts in the global ones",
			do: func(r *Registry[testFault]) {
				r.Arm(run, []testFault{{On: "a"}})
				r.Arm("", []testFault{{On: "b"}})
				r.FireEach(run, on("b"), func(*testFault) {})
				r.FireEach(other, on("b"), func(*testFault) {})
				r.Forget(run)
			},
			wantGlobal: []counts{{ID: 2, Matched: 2, Fired: 2, Runs: []wire.FaultRunCounts{{Run: other, Matched: 1, Fired: 1}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Registry[testFault]
			tt.do(&r)
			if diff := cmp.Diff(tt.wantRun, countsOf(r.Reports(run))); diff != "" {
				t.Errorf("run reports (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantGlobal, countsOf(r.Reports(""))); diff != "" {
				t.Errorf("global reports (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRegistryReport(t *testing.T) {
	var r Registry[testFault]
	r.Arm("", []testFault{{On: "a", Times: Once}, {On: "b"}})
	faults, reports := r.Armed("")
	want := []wire.FaultReport{
		{Side: "test", Index: 1, ID: 1, Fault: []byte(`{"on":"a","times":"once"}`)},
		{Side: "test", Index: 2, ID: 2, Fault: []byte(`{"on":"b"}`)},
	}
	if diff := cmp.Diff(want, reports); diff != "" {
		t.Errorf("reports (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]testFault{{On: "a", Times: Once}, {On: "b"}}, faults); diff != "" {
		t.Errorf("faults (-want +got):\n%s", diff)
	}
	if got := r.Reports("rc9"); got != nil {
		t.Errorf("Reports of a run with none armed = %v, want nil", got)
	}
}
