package run

import (
	"fmt"
	"testing"
)

// FuzzParseShard: ParseShard never panics, and what it accepts is a shard
// 1 <= I <= N that reads back the same.
func FuzzParseShard(f *testing.F) {
	for _, s := range []string{"1/1", "2/3", "50/100", "0/3", "4/3", "1/", "/1", "a/b", "1/2/3", "+1/2", " 1/2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		i, n, err := ParseShard(s)
		if err != nil {
			return
		}
		if i < 1 || i > n {
			t.Fatalf("ParseShard(%q) = %d/%d", s, i, n)
		}
		j, m, err := ParseShard(fmt.Sprintf("%d/%d", i, n))
		if err != nil || j != i || m != n {
			t.Fatalf("ParseShard(%q) = %d/%d, which reads back as %d/%d (%v)", s, i, n, j, m, err)
		}
	})
}
