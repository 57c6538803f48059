package cassette

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// Redacted replaces a secret in a recorded answer.
const Redacted = "[REDACTED]"

// secretHeaders are request headers whose values are credentials.
var secretHeaders = [...]string{
	"Authorization", "Proxy-Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key", "Cookie",
}

// keyPattern matches what may be a provider API key in an answer, whole or
// masked ("Incorrect API key provided: sk-proj-****abcd"); looksLikeKey
// decides.
var keyPattern = regexp.MustCompile(`sk-[A-Za-z0-9_\-*]{8,}|AIza[0-9A-Za-z_\-]{30,}`)

// looksLikeKey reports whether a keyPattern match is a key rather than a
// word ("sk-learn-compatible"): a key has a digit, or a mask's "*".
func looksLikeKey(s string) bool { return strings.ContainsAny(s[3:], "0123456789*") }

// Secrets returns the credentials a request carried: the values of its
// credential headers (a bearer token also alone, each cookie's value) and
// of the key-like parameters of its query (key, api_key, token, sig, …).
// Values shorter than 4 bytes are left out: scrubbing them would mangle the
// answer and hide nothing.
func Secrets(h http.Header, query string) []string {
	var out []string
	add := func(v string) {
		if v = strings.TrimSpace(v); len(v) >= 4 {
			out = append(out, v)
		}
	}
	for _, k := range secretHeaders {
		for _, v := range h.Values(k) {
			add(v)
			if k == "Cookie" {
				for _, c := range strings.Split(v, ";") {
					if _, val, ok := strings.Cut(c, "="); ok {
						add(val)
					}
				}
				continue
			}
			if scheme, cred, ok := strings.Cut(v, " "); ok && scheme != "" {
				add(cred)
			}
		}
	}
	if q, err := url.ParseQuery(query); err == nil {
		for k, vs := range q {
			if KeyLike(k) {
				for _, v := range vs {
					add(v)
				}
			}
		}
	}
	return out
}

// KeyLike reports whether a query parameter's name says it holds a secret.
func KeyLike(name string) bool {
	n := strings.ToLower(name)
	for _, s := range []string{"key", "token", "secret", "sig", "password", "auth", "credential"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// Scrub returns s with every secret, and anything shaped like a provider
// API key, replaced by Redacted.
func Scrub(s string, secrets []string) string {
	for _, v := range secrets {
		s = strings.ReplaceAll(s, v, Redacted)
	}
	return keyPattern.ReplaceAllStringFunc(s, func(m string) string {
		if looksLikeKey(m) {
			return Redacted
		}
		return m
	})
}

// ScrubEntry scrubs the answer of e: its headers, body and event data.
func ScrubEntry(e *Entry, secrets []string) {
	a := &e.Answer
	for k, v := range a.Headers {
		a.Headers[k] = Scrub(v, secrets)
	}
	a.Body = Scrub(a.Body, secrets)
	for i := range a.Events {
		a.Events[i].Data = Scrub(a.Events[i].Data, secrets)
	}
}
