package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/explore"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// TestWriteFingerprintMarksCutRunsAndOuterGaps checks that attempts of a run
// cut by its deadline read N+, with the footnote, and that an outer retry
// loop's waits are shown.
func TestWriteFingerprintMarksCutRunsAndOuterGaps(t *testing.T) {
	var b bytes.Buffer
	rows := []explore.FingerprintRow{
		{Base: "b", Request: "follow_up", Endpoint: "chat", Fault: "500", Attempts: 8, Incomplete: true, OuterGaps: []history.Duration{history.Duration(3 * time.Second), history.Duration(3400 * time.Millisecond)}},
		{Base: "b", Request: "initial", Endpoint: "chat", Fault: "500", Attempts: 3},
	}
	if err := WriteFingerprint(&b, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"OUTER GAPS", "│ 8+ ", "│ 3s 3.4s ", "│ 3 ", "N+: the run hit its deadline"} {
		if !strings.Contains(out, want) {
			t.Errorf("fingerprint lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := WriteFingerprint(&b, rows[1:]); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "N+:") {
		t.Errorf("a fingerprint of complete runs has the footnote:\n%s", b.String())
	}
}

// TestExploreMark: the Markdown headline is a tick only for a whole sweep
// with no failing cell and no finding.
func TestExploreMark(t *testing.T) {
	failing := explore.Cell{Verdict: rules.Fail}
	tests := []struct {
		name string
		rep  *explore.Report
		want string
	}{
		{"clean", &explore.Report{Cells: []explore.Cell{{Verdict: rules.Pass}}}, "✅"},
		{"a failing cell, no finding yet", &explore.Report{Cells: []explore.Cell{failing}}, "❌"},
		{"a finding", &explore.Report{Findings: []explore.Finding{{}}}, "❌"},
		{"interrupted with failing cells", &explore.Report{Cells: []explore.Cell{failing}, Interrupted: true}, "⚠️"},
		{"a base failing clean", &explore.Report{BaseFailed: &explore.BaseFailedError{Base: "b", Result: rules.Result{Verdict: rules.Fail, History: &history.History{}}}}, "❌"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var md bytes.Buffer
			if err := WriteExploreMarkdown(&md, tt.rep, ExploreOptions{}); err != nil {
				t.Fatal(err)
			}
			if want := "## " + tt.want + " replaycheck explore"; !strings.HasPrefix(md.String(), want) {
				t.Errorf("headline %q, want %q", strings.SplitN(md.String(), "\n", 2)[0], want)
			}
		})
	}
}

// TestExploreNextStepOnlyAfterFindings: the terminal and Markdown reports
// end with the next step and each finding's fix only when the sweep found
// something.
func TestExploreNextStepOnlyAfterFindings(t *testing.T) {
	opts := ExploreOptions{Next: &NextStep{Say: "do this:", Command: "replaycheck run found"}}
	found := &explore.Report{Findings: []explore.Finding{{Mechanism: explore.Mechanism{Rule: "no-splice"}, Fix: "End the stream."}}}
	for _, tt := range []struct {
		name string
		rep  *explore.Report
		want []string
	}{
		{"a finding", found, []string{"   fix: End the stream. More: replaycheck rules no-splice\n", "\nnext: do this:\n  replaycheck run found\n",
			"What a fix looks like:\n\n- `no-splice`: End the stream.\n", "Next: do this:\n\n```sh\nreplaycheck run found\n```\n"}},
		{"nothing found", &explore.Report{}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var text, md bytes.Buffer
			if err := WriteExploreTable(&text, tt.rep, opts); err != nil {
				t.Fatal(err)
			}
			if err := WriteExploreMarkdown(&md, tt.rep, opts); err != nil {
				t.Fatal(err)
			}
			got := text.String() + md.String()
			for _, want := range tt.want {
				if !strings.Contains(got, want) {
					t.Errorf("reports lack %q:\n%s", want, got)
				}
			}
			if tt.want == nil && (strings.Contains(got, "next") || strings.Contains(got, "Next") || strings.Contains(got, "fix")) {
				t.Errorf("reports of an empty sweep say what to do next:\n%s", got)
			}
		})
	}
}
