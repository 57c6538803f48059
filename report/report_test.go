package report

import (
	"bytes"
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/wire"
)

var update = flag.Bool("update", false, "rewrite golden files")

func ms(n float64) history.Duration {
	return history.Duration(time.Duration(n * float64(time.Millisecond)))
}

func intp(n int) *int { return &n }

// seedRun builds the seed's chat case under fault_on with loops tool loops.
func seedRun(target string, loops int) *history.History {
	h := &history.History{
		Scenario: "chat follow-up 500 after tool ran", File: "scenarios/seed/chat.yaml", Tags: []string{"seed"},
		Target: target, Token: "rc0123456789", Entry: "alpha-rc0123456789", Duration: ms(12),
		Setup: history.Setup{ToolCalls: 1, Tools: []string{"commit_write"}, NumRetries: 2},
		Expect: history.Expect{Counts: history.Counts{Status: intp(500), Writes: history.Exactly(1),
			Upstream: map[wire.CountKey]history.Count{{Kind: wire.KindInitial}: *history.Exactly(1), {Kind: wire.KindFollowUp}: *history.Exactly(1)}},
			Rules: []string{"no-replay-after-dispatch", "error-surfaces"}},
	}
	at := 0.5
	for range loops {
		h.Upstream = append(h.Upstream, wire.UpstreamRequest{At: ms(at), Path: "/v1/chat/completions", Endpoint: "chat", Kind: "initial", Outcome: "forwarded", Status: 200, ToolCalls: 1})
		h.MCP = append(h.MCP,
			wire.MCPEvent{At: ms(at + 1), Kind: "call", Tool: "commit_write", RequestID: "2"},
			wire.MCPEvent{At: ms(at + 1.2), Kind: "write", Tool: "commit_write", Entry: "alpha-rc0123456789"},
			wire.MCPEvent{At: ms(at + 1.3), Kind: "result", Tool: "commit_write", RequestID: "2"})
		h.Upstream = append(h.Upstream, wire.UpstreamRequest{At: ms(at + 2), Path: "/v1/chat/completions", Endpoint: "chat", Kind: "follow_up", Outcome: "injected_500", Status: 500, Fault: "follow_up respond 500 always"})
		at += 3
	}
	h.Requests = []history.Exchange{{Endpoint: "chat", Path: "/v1/chat/completions", Start: ms(0), End: ms(at), Status: 500,
		Body: `{"error":{"message":"injected follow-up failure"}}`, CleanEnd: true}}
	return h
}

func fixture() Suite {
	return Suite{
		Results: []rules.Result{rules.Evaluate(seedRun("builtin:guarded", 1)), rules.Evaluate(seedRun("builtin:naive", 3))},
		Wall:    ms(40),
		Run:     &RunInfo{Replaycheck: "v1.2.3", Seed: "replaycheck", Shard: "2/3"},
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -update)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from the golden file (-want +got):\n-%s\n+%s", name, want, got)
	}
}

// goldenFormat is one golden file and the writer that renders a suite as it.
type goldenFormat struct {
	name  string
	write func(*bytes.Buffer, Suite) error
}

// checkGoldenFormats renders suite with each format and compares the output
// with its golden file.
func checkGoldenFormats(t *testing.T, suite func() Suite, formats []goldenFormat) {
	for _, tt := range formats {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.write(&b, suite()); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, b.Bytes())
		})
	}
}

// parseJUnit renders s as JUnit and parses it back.
func parseJUnit(t *testing.T, s Suite) junitSuites {
	t.Helper()
	var b bytes.Buffer
	if err := WriteJUnit(&b, s); err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("JUnit output does not parse: %v", err)
	}
	return got
}

func TestFormats(t *testing.T) {
	checkGoldenFormats(t, fixture, []goldenFormat{
		{"table.golden", func(b *bytes.Buffer, s Suite) error { return WriteTable(b, s, TableOptions{}) }},
		{"table-verbose.golden", func(b *bytes.Buffer, s Suite) error { return WriteTable(b, s, TableOptions{Verbose: true}) }},
		{"table-timelines.golden", func(b *bytes.Buffer, s Suite) error { return WriteTable(b, s, TableOptions{Timelines: true}) }},
		{"table-quiet.golden", func(b *bytes.Buffer, s Suite) error { return WriteTable(b, s, TableOptions{Quiet: true}) }},
		{"junit.golden.xml", func(b *bytes.Buffer, s Suite) error { return WriteJUnit(b, s) }},
		{"report.golden.json", func(b *bytes.Buffer, s Suite) error { return WriteJSON(b, s) }},
		{"summary.golden.md", func(b *bytes.Buffer, s Suite) error { return WriteMarkdown(b, s) }},
	})
}

// TestAbortFormats renders runs that did not complete: one interrupted
// part-way, one that never started (a bad scenario file).
func TestAbortFormats(t *testing.T) {
	checkGoldenFormats(t, interruptedFixture, []goldenFormat{
		{"junit-interrupted.golden.xml", func(b *bytes.Buffer, s Suite) error { return WriteJUnit(b, s) }},
		{"report-interrupted.golden.json", func(b *bytes.Buffer, s Suite) error { return WriteJSON(b, s) }},
		{"summary-interrupted.golden.md", func(b *bytes.Buffer, s Suite) error { return WriteMarkdown(b, s) }},
	})
	checkGoldenFormats(t, usageFixture, []goldenFormat{
		{"junit-bad-input.golden.xml", func(b *bytes.Buffer, s Suite) error { return WriteJUnit(b, s) }},
		{"summary-bad-input.golden.md", func(b *bytes.Buffer, s Suite) error { return WriteMarkdown(b, s) }},
	})
}

func TestJUnitIsValidXML(t *testing.T) {
	got := parseJUnit(t, fixture())
	if got.Tests != 2 || got.Failures != 1 || len(got.Suites) != 2 {
		t.Fatalf("tests=%d failures=%d suites=%d, want 2, 1, 2", got.Tests, got.Failures, len(got.Suites))
	}
	f := got.Suites[1].Cases[0].Failure
	if f == nil || f.Message != "writes: expected 1 write, observed 3" {
		t.Errorf("failure = %+v", f)
	}
}

func TestJSONRoundTripRechecks(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, fixture()); err != nil {
		t.Fatal(err)
	}
	s, err := ReadJSON(&b)
	if err != nil {
		t.Fatal(err)
	}
	// A saved history carries all the checker needs: checked again, it
	// gives the same verdicts (the CLI's --recheck does this).
	var re Suite
	for _, r := range s.Results {
		re.Results = append(re.Results, rules.Evaluate(r.History))
	}
	if len(re.Results) != 2 || re.Results[0].Verdict != rules.Pass || re.Results[1].Verdict != rules.Fail {
		t.Fatalf("recheck verdicts: %+v", re.Results)
	}
	if got := re.Results[1].Counts.Writes; got != 3 {
		t.Errorf("rechecked writes = %d, want 3", got)
	}
}

// TestReadJSONRefuses: what is not one run report is refused, saying what
// it is: an unknown version, an empty file, another JSON value, no version,
// and a second report after the first (concatenated, which read as the
// first alone).
func TestReadJSONRefuses(t *testing.T) {
	var saved bytes.Buffer
	if err := WriteJSON(&saved, fixture()); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, in, want string }{
		{"unknown version", `{"version": 9}`, "format version 9, want 1"},
		{"empty", ``, "the file is empty"},
		{"array", `[]`, "a JSON array, not a run report"},
		{"null", `null`, "no format version"},
		{"other object", `{"foo": 1}`, "no format version"},
		{"concatenated", saved.String() + saved.String(), "concatenated reports?"},
		{"trailing garbage", saved.String() + "garbage", "more after the report's JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadJSON(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}
