package scenario

import (
	"strings"
	"testing"
)

// TestRepeatFields checks that repeat and expect.allow_failures decode, and
// that a scenario without repeat runs once.
func TestRepeatFields(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		wantRuns  int
		wantAllow int
	}{
		{name: "no repeat", src: "name: a\nrequest: {endpoint: chat}\nexpect: {writes: 1}\n", wantRuns: 1},
		{name: "repeat once", src: "name: a\nrequest: {endpoint: chat}\nrepeat: 1\nexpect: {writes: 1}\n", wantRuns: 1},
		{name: "repeat, every run must pass", src: "name: a\nrequest: {endpoint: chat}\nrepeat: 20\nexpect: {writes: 1}\n", wantRuns: 20},
		{name: "repeat with allowance", src: "name: a\nrequest: {endpoint: chat}\nrepeat: 20\nexpect: {writes: 1, allow_failures: 19}\n", wantRuns: 20, wantAllow: 19},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss, errs := Parse("t.yaml", []byte(tt.src))
			if len(errs) > 0 || len(ss) != 1 {
				t.Fatalf("Parse: %v", errs)
			}
			if got := ss[0].Runs(); got != tt.wantRuns {
				t.Errorf("Runs() = %d, want %d", got, tt.wantRuns)
			}
			if got := ss[0].Expect.AllowFailures; got != tt.wantAllow {
				t.Errorf("AllowFailures = %d, want %d", got, tt.wantAllow)
			}
		})
	}
}

// TestRepeatAloneExpectsNothing checks that allow_failures is not taken for
// an expectation: a scenario that sets only it still expects nothing.
func TestRepeatAloneExpectsNothing(t *testing.T) {
	_, errs := Parse("t.yaml", []byte("name: a\nrequest: {endpoint: chat}\nrepeat: 5\nexpect: {allow_failures: 1}\n"))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "expects nothing") {
		t.Errorf("errors = %v, want one saying the scenario expects nothing", errs)
	}
}

// TestSchemaRepeat checks the schema against repeat and allow_failures: it
// accepts the example and rejects the bad values the loader rejects.
func TestSchemaRepeat(t *testing.T) {
	sch := compileSchema(t)
	if err := sch.Validate(yamlToJSONValue(t, "testdata/repeat/flaky.yaml")); err != nil {
		t.Errorf("schema rejects testdata/repeat/flaky.yaml: %v", err)
	}
	for _, f := range []string{"repeat-zero", "repeat-negative", "repeat-not-a-number", "allow-failures-negative"} {
		t.Run(f, func(t *testing.T) {
			if err := sch.Validate(yamlToJSONValue(t, "testdata/bad/"+f+".yaml")); err == nil {
				t.Errorf("schema accepts testdata/bad/%s.yaml", f)
			}
		})
	}
	b, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"repeat"`, `"allow_failures"`, "judge the rate"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("schema lacks %s", want)
		}
	}
}
