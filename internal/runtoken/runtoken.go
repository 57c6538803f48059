// Package runtoken mints and finds run tokens: the short strings that tie every
// request, tool call and ledger write to the scenario run that caused it.
//
// A token is "rc" followed by ten characters of [0-9a-z], for example
// "rc4k9x2m1pq7". It is embedded in prompts, ledger entries and the ids the
// fake model mints, so a fake can attribute a request by scanning its bytes.
package runtoken

import (
	"hash/fnv"
	"strconv"
)

// Len is the length of a token in bytes.
const Len = 12

const prefix = "rc"

// Derive returns the token for a run identified by the given parts, for
// example a suite seed, a scenario name and a target. The same parts always
// give the same token.
func Derive(parts ...string) string {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	s := strconv.FormatUint(h.Sum64(), 36)
	for len(s) < Len-len(prefix) {
		s = "0" + s
	}
	return prefix + s[len(s)-(Len-len(prefix)):]
}

// Valid reports whether s is exactly one token.
func Valid(s string) bool {
	if len(s) != Len || s[:2] != prefix {
		return false
	}
	for i := 2; i < Len; i++ {
		if !isTokenByte(s[i]) {
			return false
		}
	}
	return true
}

// Find returns the first token in b, or "" when b holds none. A token must not
// be preceded or followed by a character of [0-9a-z], so words that merely
// contain "rc" do not match.
func Find(b []byte) string {
	for i := 0; i+Len <= len(b); i++ {
		if b[i] != 'r' || b[i+1] != 'c' {
			continue
		}
		if i > 0 && isTokenByte(b[i-1]) {
			continue
		}
		if i+Len < len(b) && isTokenByte(b[i+Len]) {
			continue
		}
		ok := true
		for j := i + 2; j < i+Len; j++ {
			if !isTokenByte(b[j]) {
				ok = false
				break
			}
		}
		if ok {
			return string(b[i : i+Len])
		}
	}
	return ""
}

func isTokenByte(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' }
