package ledger

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestForgetDropsKeys: Forget lets go of the idempotency keys a run saw
// with the run, unless a run still kept saw them too; a keyed call with a
// forgotten key writes again, one with a key still kept is answered from
// its first write, and Keys says how many were kept and forgotten.
func TestForgetDropsKeys(t *testing.T) {
	s, url := newLedger(t, Config{})
	const a, b, c = "rcaaaaaaaaaa", "rcbbbbbbbbbb", "rccccccccccc"
	cs := connect(t, url, "")
	keyed := func(token, key string) {
		t.Helper()
		res, err := callTool(t, cs, ToolCommitWriteKeyed, map[string]any{"entry": "write " + token, "idempotency_key": key})
		if err != nil || res.IsError {
			t.Fatalf("commit_write_keyed %s %s: %v, %+v", token, key, err, res)
		}
	}
	keyed(a, "key-of-a")
	keyed(b, "key-shared")
	keyed(c, "key-shared")
	if got, want := s.Keys(), (Keys{Kept: 2}); got != want {
		t.Errorf("Keys before Forget (-want +got):\n%s", cmp.Diff(want, got))
	}
	s.Forget(a)
	s.Forget(b)
	if got, want := s.Keys(), (Keys{Kept: 1, Forgotten: 1}); got != want {
		t.Errorf("Keys after forgetting a and b (-want +got):\n%s", cmp.Diff(want, got))
	}
	keyed(c, "key-shared") // c is kept: answered from the first write
	keyed(a, "key-of-a")   // a was forgotten with its key: writes again
	if got := s.Total().Writes; got != 3 {
		t.Errorf("total writes %d, want 3: key-of-a twice (forgotten between), key-shared once", got)
	}
	if got := s.Counts(a); got.Writes != 1 || got.Keys != 1 {
		t.Errorf("run a seen again: %d writes, %d keys; want 1 and 1, counted afresh", got.Writes, got.Keys)
	}
	s.Forget(a)
	s.Forget(c)
	if got, want := s.Keys(), (Keys{Forgotten: 3}); got != want {
		t.Errorf("Keys after forgetting every run (-want +got):\n%s", cmp.Diff(want, got))
	}
	s.mu.Lock()
	left := len(s.dedup)
	s.mu.Unlock()
	if left != 0 {
		t.Errorf("%d first results of keyed writes kept after every run that saw them was forgotten, want 0", left)
	}
}
