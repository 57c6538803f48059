package targets_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/matrix"
	"github.com/replaycheck/replaycheck/internal/targettest"
)

// killScenarios are the kill kinds of explore's table and the resume
// scenario (scenarios/resume) that kills at the same point.
var killScenarios = map[string]string{
	"kill-after-execute": "client resume kill after execute",
	"kill-at-follow-up":  "client resume kill at follow-up",
}

// matrixResumeTarget is the resume target TestResumeMatrix builds a row
// of: Restate's, which writes twice at one kill point and not at the other,
// so both verdicts are held. TestResume holds every resume target's runs;
// a matrix row of each is make matrix's, not make test's (minutes per agent).
const matrixResumeTarget = "restate.yaml"

// TestResumeMatrix builds the matrix of a shipped target that resumes a
// killed agent (matrixResumeTarget) as a row, with the kill kinds only, inside a loopback-only
// network namespace, and holds its cells to TestResume's expectations: the
// resume scenario that kills at the same point writes twice there where the
// cell is DUPLICATE here, and passes where it is safe (either of its
// summaries where the agent races its own timer). The row names the agent's
// version. Not installed (make clients, make engines), it skips.
func TestResumeMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("killing and resuming real agents takes minutes; not in -short")
	}
	if err := targettest.LoopbackNamespace(); err != nil {
		t.Skipf("no loopback-only network namespace: %v", err)
	}
	for _, c := range resumeTargets {
		if c.file != matrixResumeTarget {
			continue
		}
		t.Run(c.file, func(t *testing.T) {
			env := prepareResumeTarget(t, c)
			t.Parallel()
			js := filepath.Join(t.TempDir(), "matrix.json")
			kinds := slices.Sorted(maps.Keys(killScenarios))
			code, out := inNamespaceEnv(t, 10*time.Minute, env, "matrix", "targets/"+c.file, "--kinds", strings.Join(kinds, ","), "--json", js)
			if code != 0 {
				t.Fatalf("matrix: exit %d\n%s", code, out)
			}
			f, err := os.Open(js)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			m, err := matrix.Read(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Rows) != 1 || m.Rows[0].Error != "" || m.Rows[0].Version == "" {
				t.Fatalf("want one swept row with a version:\n%s", out)
			}
			row := m.Rows[0]
			for _, kind := range kinds {
				scenario := killScenarios[kind]
				var want []matrix.Verdict
				for _, s := range append([]string{c.want[scenario]}, c.alt[scenario]...) {
					want = append(want, resumeVerdict(s))
				}
				cell, ok := row.Cell(kind)
				switch {
				case !ok:
					t.Errorf("%s: no cell of %s; pruned %v", row.Target, kind, row.Pruned)
				case cell.Family != matrix.FamilyKill || !slices.Contains(want, cell.Verdict):
					t.Errorf("%s %s: %s in %q, want one of %v (as %q in TestResume)\n%s", row.Target, kind, cell.Verdict, cell.Family, want, scenario, out)
				}
			}
		})
	}
}

// resumeVerdict is the matrix's verdict of a resume scenario's summary (see
// resumeSummary): DUPLICATE where it wrote twice, safe where it passed.
func resumeVerdict(summary string) matrix.Verdict {
	switch {
	case strings.Contains(summary, " writes=2 "):
		return matrix.Duplicate
	case strings.HasPrefix(summary, "pass "):
		return matrix.Safe
	}
	return matrix.Unknown
}
