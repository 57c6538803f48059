package cassette

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/replaycheck/replaycheck/internal/secret"
)

// Redacted replaces a secret in a recorded answer.
const Redacted = "[REDACTED]"

// secretHeaders are request headers whose values are credentials.
var secretHeaders = [...]string{
	"Authorization", "Proxy-Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key", "Cookie",
}

// Secrets returns the credentials a request carried: the values of its
// credential headers (a bearer token also alone, each cookie's value) and
// of the key-like parameters of its query (key, api_key, token, sig, …).
// Values shorter than 4 bytes are left out: scrubbing them would mangle the
// answer and hide nothing.
func Secrets(h http.Header, query string) []string {
	var out []string
	add := func(v string) {
		if v = strings.TrimSpace(v); len(v) >= secret.MinLen {
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
			if secret.Name(k) {
				for _, v := range vs {
					add(v)
				}
			}
		}
	}
	return out
}

// Scrub returns s with every secret, and anything shaped like a provider
// API key, replaced by Redacted (see secret.Scrub).
func Scrub(s string, secrets []string) string { return secret.Scrub(s, secrets, Redacted) }

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
