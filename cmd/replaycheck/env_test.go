package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The REPLAYCHECK_* variables set the flags the command line does not give;
// these tests set the process environment, so none of them runs in
// parallel.

func TestEnvSetsFlags(t *testing.T) {
	js := filepath.Join(t.TempDir(), "run.json")
	t.Setenv("REPLAYCHECK_TARGET", "builtin:naive,builtin:replay-after-dispatch")
	t.Setenv("REPLAYCHECK_FILTER", "fault_on$")
	t.Setenv("REPLAYCHECK_SHARD", "1/3")
	t.Setenv("REPLAYCHECK_SEED", "from-env")
	t.Setenv("REPLAYCHECK_JSON", js)
	code, out, errOut := execute(t, "run", "../../scenarios/seed")
	if code != exitRuleBroken {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitRuleBroken, out, errOut)
	}
	s := readSuite(t, js)
	if s.Run == nil || s.Run.Seed != "from-env" || s.Run.Shard != "1/3" {
		t.Errorf("run info %+v, want seed from-env and shard 1/3", s.Run)
	}
	var got []string
	for _, r := range s.Results {
		got = append(got, r.History.Scenario+" on "+r.History.Target)
	}
	want := []string{"seed chat fault_on on builtin:naive", "seed chat fault_on on builtin:replay-after-dispatch"}
	if !slices.Equal(got, want) {
		t.Errorf("ran %q, want %q (shard 1/3 of the fault_on scenarios, on both targets)", got, want)
	}
}

func TestEnvCommandLineWins(t *testing.T) {
	t.Setenv("REPLAYCHECK_FILTER", "no such scenario")
	t.Setenv("REPLAYCHECK_TAG", "no-such-tag")
	t.Setenv("REPLAYCHECK_SHARD", "not a shard") // given on the command line: never parsed
	code, out, errOut := execute(t, "list", "../../scenarios/seed", "--filter", "fault_on$", "--tag", "seed", "--shard", "1/1")
	if code != exitOK {
		t.Fatalf("exit %d, want 0\n%s%s", code, out, errOut)
	}
	if n := strings.Count(out, "fault_on"); n != 3 {
		t.Errorf("listed %d fault_on scenarios, want the 3 the command line selects:\n%s", n, out)
	}
}

func TestEnvEmptyIsUnset(t *testing.T) {
	t.Setenv("REPLAYCHECK_FILTER", "")
	t.Setenv("REPLAYCHECK_SHARD", "")
	code, out, errOut := execute(t, "list", "../../scenarios/seed")
	if code != exitOK || strings.Count(out, "\n") < 10 {
		t.Fatalf("exit %d, want 0 and every seed scenario\n%s%s", code, out, errOut)
	}
}

// A variable sets only the commands that bind it: validate's --target is a
// file to check, not the target to run on.
func TestEnvOnlyBoundCommands(t *testing.T) {
	t.Setenv("REPLAYCHECK_TARGET", "builtin:naive")
	t.Setenv("REPLAYCHECK_JSON", "list-must-not-read-this")
	for _, args := range [][]string{{"validate", "../../scenarios/seed"}, {"list", "../../scenarios/seed"}} {
		if code, out, errOut := execute(t, args...); code != exitOK {
			t.Errorf("%s: exit %d, want 0\n%s%s", args, code, out, errOut)
		}
	}
}

func TestEnvBadValue(t *testing.T) {
	tests := []struct {
		name, variable, value string
		args                  []string
		want                  string
	}{
		{"not a number", "REPLAYCHECK_PARALLEL", "many", []string{"run"}, `REPLAYCHECK_PARALLEL="many" (for --parallel): want a whole number`},
		{"negative", "REPLAYCHECK_PARALLEL", "-1", []string{"explore"}, `REPLAYCHECK_PARALLEL="-1" (for --parallel): want a whole number, 0`},
		{"zero timeout", "REPLAYCHECK_TIMEOUT", "0s", []string{"run"}, `REPLAYCHECK_TIMEOUT="0s" (for --timeout): want a positive duration`},
		{"bad shard", "REPLAYCHECK_SHARD", "4/3", []string{"list"}, `REPLAYCHECK_SHARD="4/3" (for --shard): want I/N with 1 <= I <= N`},
		{"bad filter", "REPLAYCHECK_FILTER", "(", []string{"baseline"}, `REPLAYCHECK_FILTER="(" (for --filter): error parsing regexp`},
		{"bad repeat", "REPLAYCHECK_REPEAT", "0", []string{"run"}, `REPLAYCHECK_REPEAT="0" (for --repeat): want how many times`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(tt.variable, tt.value)
			code, out, errOut := execute(t, append(tt.args, "../../scenarios/seed")...)
			if code != exitBadUsage || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q\n%s", code, errOut, exitBadUsage, tt.want, out)
			}
		})
	}
}

// The root help lists every bound variable, from the commands' flags, and
// never a value from the environment.
func TestEnvHelp(t *testing.T) {
	t.Setenv("REPLAYCHECK_SEED", "value-from-the-environment")
	code, out, errOut := execute(t, "--help")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, want := range []string{
		"REPLAYCHECK_TARGET       --target of baseline, explore, run",
		"REPLAYCHECK_TAG          --tag of baseline, list, run",
		"REPLAYCHECK_JSON         --json of explore, matrix, run",
		"REPLAYCHECK_HTML         --html of explore, matrix, run",
		"REPLAYCHECK_BASELINE", "REPLAYCHECK_FILTER", "REPLAYCHECK_JUNIT", "REPLAYCHECK_MARKDOWN",
		"REPLAYCHECK_PARALLEL", "REPLAYCHECK_REPEAT", "REPLAYCHECK_SEED", "REPLAYCHECK_SHARD", "REPLAYCHECK_TIMEOUT",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "value-from-the-environment") {
		t.Errorf("help shows a variable's value:\n%s", out)
	}
	// Each command's help names its own variables.
	_, out, _ = execute(t, "list", "--help")
	if !strings.Contains(out, "the command line does not give:\n  REPLAYCHECK_FILTER, REPLAYCHECK_SHARD, REPLAYCHECK_TAG\n") {
		t.Errorf("list help lacks its variables:\n%s", out)
	}
}
