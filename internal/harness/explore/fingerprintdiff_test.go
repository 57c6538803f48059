package explore

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/history"
)

// TestDiffFingerprintsGateway fingerprints the built-in gateway guarded and
// naive and diffs the two policies, through the saved JSON form: the naive
// router retries a 400 and ignores Retry-After; a fingerprint diffed with
// itself has no change.
func TestDiffFingerprintsGateway(t *testing.T) {
	kinds, err := SelectKinds([]string{"400", "429-retry-after", "500"})
	if err != nil {
		t.Fatal(err)
	}
	sweep := func(name string) *Report {
		tg := parseTarget(t, name)
		rep, err := Explore(context.Background(), bases(t, tg, "chat keyed tool call"), Options{Target: tg, Kinds: kinds, Fingerprint: true})
		if err != nil {
			t.Fatal(err)
		}
		// Through the form --fingerprint --json writes.
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		saved, err := ReadReport(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		return saved
	}
	guarded, naive := sweep("builtin:guarded"), sweep("builtin:naive")
	if len(guarded.Fingerprint) != 6 {
		t.Fatalf("guarded fingerprint has %d rows, want 6 (3 faults × initial, follow-up)", len(guarded.Fingerprint))
	}
	if d := DiffFingerprints(guarded.Fingerprint, guarded.Fingerprint); len(d) != 0 {
		t.Errorf("a fingerprint differs from itself: %+v", d)
	}
	type change struct {
		Request, Fault string
		Aspects        []string
	}
	var got []change
	for _, c := range DiffFingerprints(guarded.Fingerprint, naive.Fingerprint) {
		r := c.Row()
		aspects := c.Aspects
		if r.Fault != "429-retry-after" {
			// Jittered backoff against none: tens of milliseconds either
			// way on a busy machine, a change or not.
			aspects = slices.DeleteFunc(aspects, func(a string) bool { return a == AspectGaps })
			if len(aspects) == 0 {
				continue
			}
		}
		got = append(got, change{string(r.Request) + " " + r.Endpoint, r.Fault, aspects})
	}
	// The naive gateway retries the 400 (3 attempts, not 1) and waits no
	// Retry-After (gaps of milliseconds, not a second); the 500 is retried
	// as often by both. After the tool ran, naive retries re-run it.
	want := []change{
		{"initial chat", "400", []string{AspectAttempts}},
		{"initial chat", "429-retry-after", []string{AspectGaps, AspectRetryAfter}},
		{"follow_up chat", "400", []string{AspectAttempts, AspectToolRuns}},
		{"follow_up chat", "429-retry-after", []string{AspectGaps, AspectRetryAfter, AspectToolRuns}},
		{"follow_up chat", "500", []string{AspectToolRuns}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes from guarded to naive (-want +got):\n%s", diff)
	}
}

// TestDiffFingerprintsRows: rows only one side has are listed after the
// changed ones, and gaps within jitter are no change.
func TestDiffFingerprintsRows(t *testing.T) {
	ms := func(n int) history.Duration { return history.Duration(time.Duration(n) * time.Millisecond) }
	row := func(fault string, attempts int, gap history.Duration) FingerprintRow {
		return FingerprintRow{Base: "b", Request: "initial", Endpoint: "chat", Fault: fault, Attempts: attempts, GapMin: gap, GapMedian: gap, GapMax: gap, Outcome: "HTTP 500"}
	}
	outer := func(r FingerprintRow, gaps ...history.Duration) FingerprintRow { r.OuterGaps = gaps; return r }
	cut := func(r FingerprintRow) FingerprintRow { r.Incomplete = true; return r }
	before := []FingerprintRow{row("500", 3, ms(100)), row("502", 3, ms(5)), row("gone", 1, 0),
		outer(row("503", 6, ms(5)), ms(1000)), outer(row("529", 6, ms(5)), ms(1000)), row("408", 28, ms(5))}
	after := []FingerprintRow{row("new", 2, ms(1)), row("500", 3, ms(130)), row("502", 3, ms(400)),
		outer(row("503", 6, ms(5)), ms(4000)), outer(row("529", 6, ms(5)), ms(1050)), cut(row("408", 28, ms(5)))}
	var got []string
	for _, c := range DiffFingerprints(before, after) {
		s := c.Row().Fault + ":"
		switch {
		case c.Before == nil:
			s += "new"
		case c.After == nil:
			s += "gone"
		default:
			s += strings.Join(c.Aspects, ",")
		}
		got = append(got, s)
	}
	want := []string{"502:gaps", "503:gaps", "408:attempts", "new:new", "gone:gone"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}

// TestReadReportRejects: a file that is not a sweep's report, or one of a
// newer format, is refused with the reason.
func TestReadReportRejects(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"results": []}`, "no version"},
		{`{"version": 99}`, "format version 99 is newer"},
		{`not json`, "reading an explore report"},
	} {
		if _, err := ReadReport(strings.NewReader(tt.in)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ReadReport(%s) = %v, want an error with %q", tt.in, err, tt.want)
		}
	}
}
