package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/harness/explore"
	"github.com/replaycheck/replaycheck/harness/history"
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
