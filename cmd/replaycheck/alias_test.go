package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// laughs is a billion-laughs mapping (nine anchors of nine aliases each),
// each line indented by indent.
func laughs(indent string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%sl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n", indent)
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "%sl%d: &l%d [%s]\n", indent, i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 9), ", "))
	}
	return b.String()
}

// TestAliasBombIsBadInput: a YAML alias bomb in a scenario's request body or
// a target file's bodies makes validate and run return exit 2 with the
// place of the alias, instead of running out of memory or spinning.
func TestAliasBombIsBadInput(t *testing.T) {
	dir := t.TempDir()
	scenarioBomb := filepath.Join(dir, "bomb.yaml")
	targetBomb := filepath.Join(dir, "target-bomb.yaml")
	files := map[string]string{
		scenarioBomb: "name: bomb\nrequest:\n  endpoint: chat\n  body:\n" + laughs("    ") + "expect: {writes: 1}\n",
		targetBomb:   "kind: proxy\nurl: http://127.0.0.1:{{port}}\nstart: {command: [x]}\nbodies:\n  chat:\n" + laughs("    "),
	}
	for path, src := range files {
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const msg = "document expands to more than 1048576 nodes through its aliases"
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "validate a scenario", args: []string{"validate", scenarioBomb}, wantErr: "bomb.yaml:11:14: " + msg},
		{name: "run a scenario", args: []string{"run", "--target", "builtin:guarded", scenarioBomb}, wantErr: "bomb.yaml:11:14: " + msg},
		{name: "validate a target", args: []string{"validate", "--target", targetBomb}, wantErr: "target-bomb.yaml:12:14: " + msg},
		{name: "run on a target", args: []string{"run", "--target", targetBomb, "../../scenarios"}, wantErr: "target-bomb.yaml:12:14: " + msg},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			type result struct {
				code        int
				out, errOut string
			}
			done := make(chan result, 1)
			go func() {
				code, out, errOut := execute(t, tt.args...)
				done <- result{code, out, errOut}
			}()
			// The test's own deadline, not a timing assertion: a bomb that
			// is expanded takes minutes or all the memory.
			wait := 2 * time.Minute
			if d, ok := t.Deadline(); ok {
				wait = min(wait, time.Until(d)/2)
			}
			select {
			case r := <-done:
				if r.code != exitBadUsage || !strings.Contains(r.errOut, tt.wantErr) {
					t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", r.code, r.errOut, tt.wantErr)
				}
			case <-time.After(wait):
				t.Fatalf("replaycheck %s did not return", strings.Join(tt.args, " "))
			}
		})
	}
}
