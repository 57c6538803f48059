package replaychecktest_test

import (
	"testing"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/replaychecktest"
)

// TestStart runs the example's agent on fakes started for the test: with no
// fault the rules pass; an invalid fault is an error that arms nothing; and
// a fault that never fires makes the rule unknown, which Require reports.
func TestStart(t *testing.T) {
	f := replaychecktest.Start(t, nil)
	if f.Token == "" || f.Entry != "alpha-"+f.Token {
		t.Fatalf("token %q, entry %q", f.Token, f.Entry)
	}
	answer, err := agent(t.Context(), f.ModelURL, f.MCPURL, 0)
	if err != nil || answer != "done" {
		t.Fatalf("agent: %q, %v", answer, err)
	}
	replaychecktest.Require(t, f.Check(err, "no-replay-after-dispatch"))
	if got := f.Ledger.Entries(); len(got) != 1 || got[0] != f.Entry {
		t.Errorf("ledger %q, want the run's entry once", got)
	}

	if err := f.ArmModel(upstream.Fault{Respond: &upstream.Respond{Status: 200}}); err == nil {
		t.Error("a 200 respond fault was armed")
	}
	if err := f.ArmMCP(ledger.Fault{Tool: "read_ledger", IsError: &ledger.IsError{}}); err != nil {
		t.Fatal(err)
	}
	vs := f.Check(nil, "no-replay-after-dispatch")
	if len(vs) != 1 || vs[0].Status != "unknown" {
		t.Errorf("with an armed fault that never fired: %+v, want unknown", vs)
	}
}
