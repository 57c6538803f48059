// Package secret recognises credentials and scrubs them from text the
// harness keeps: the names that say a value is one (an environment
// variable, a query parameter), and values shaped like a provider API key.
// Cassettes scrub recorded answers with it, targets the output of the
// processes they start.
package secret

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// MinLen is the shortest secret Scrub replaces: a shorter value would mangle
// the text and hide nothing.
const MinLen = 4

// nameParts are what a name holding a secret contains, in lower case.
var nameParts = [...]string{"key", "token", "secret", "passw", "credential", "auth", "sig"}

// Name reports whether a variable's or parameter's name says it holds a
// secret (GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, api_key, sig, …).
func Name(name string) bool {
	n := strings.ToLower(name)
	for _, s := range nameParts {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// keyPattern matches what may be a provider API key, whole or masked
// ("Incorrect API key provided: sk-proj-****abcd"): OpenAI and Anthropic
// (sk-…), Google (AIza…), GitHub (ghp_…, github_pat_…) and AWS access key
// ids (AKIA…). looksLikeKey decides on the sk- ones. It is compiled on first
// use, not at the program's start.
var keyPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`sk-[A-Za-z0-9_\-*]{8,}|AIza[0-9A-Za-z_\-]{30,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)
})

// looksLikeKey reports whether a keyPattern match is a key rather than a
// word ("sk-learn-compatible"): an sk- key has a digit, or a mask's "*".
func looksLikeKey(s string) bool {
	return !strings.HasPrefix(s, "sk-") || strings.ContainsAny(s[3:], "0123456789*")
}

// Scrub returns s with every secret of MinLen bytes or more, and anything
// shaped like a provider API key, replaced by mark. Longer secrets go first,
// so that one inside another ("Bearer K" and K) leaves no part behind.
func Scrub(s string, secrets []string, mark string) string {
	byLen := slices.Clone(secrets)
	slices.SortFunc(byLen, func(a, b string) int { return len(b) - len(a) })
	for _, v := range byLen {
		if len(v) >= MinLen {
			s = strings.ReplaceAll(s, v, mark)
		}
	}
	return keyPattern().ReplaceAllStringFunc(s, func(m string) string {
		if looksLikeKey(m) {
			return mark
		}
		return m
	})
}

// Bearer returns the credentials of an Authorization header of the Bearer
// scheme, whose name is case-insensitive (RFC 7235 section 2.1), without
// the blanks around them; ok is false for another scheme or none.
func Bearer(header string) (token string, ok bool) {
	scheme, token, found := strings.Cut(strings.TrimSpace(header), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(token), true
}
