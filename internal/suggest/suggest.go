// Package suggest finds the names a mistyped one was probably meant to be,
// for "did you mean" in usage errors.
package suggest

import "strings"

// maxDistance is the most edits (insertions, deletions, substitutions) a
// name may be from a candidate to be suggested.
const maxDistance = 2

// Similar returns the candidates, in their order, within two edits of name
// or containing it (when it has four characters or more), compared without
// case; nil when none is.
func Similar(name string, candidates []string) []string {
	name = strings.ToLower(name)
	var out []string
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if distance(name, lc) <= maxDistance || len(name) >= 4 && strings.Contains(lc, name) {
			out = append(out, c)
		}
	}
	return out
}

// distance is the Levenshtein distance between a and b, in bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
