// Package secret is the one scrubber of everything replaycheck writes or
// prints: reports, cassettes, logs and errors. It recognises credentials by
// name (an environment variable, a query parameter, a flag, a JSON field at
// any depth), by where they sit (a URL's userinfo password, a Bearer
// token), by shape (provider API keys, JWTs, Slack and Hugging Face tokens)
// and by value (the secrets a caller knows, such as its environment's).
package secret

import (
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// Mark is what messages, logs and reports show in place of a credential,
// as Go's URL errors show a password. Cassettes have a mark of their own.
const Mark = "***"

// MinLen is the shortest secret Scrub replaces: a shorter value would mangle
// the text and hide nothing.
const MinLen = 4

// minEnvLen is the shortest value of a secret-named variable Environ
// returns: shorter ones ("1", "true") are no credentials, and scrubbing
// them would mangle the text.
const minEnvLen = 8

// Name reports whether a variable's, parameter's, flag's or field's name
// says it holds a secret (GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, api_key,
// apiKey, client_secret, Authorization, sig, …). It goes by the name's
// words (split at non-alphanumerics and at camelCase), so that ordinary
// words (author, design, keyboard) and token counts (max_tokens,
// input_tokens) are no secret names.
func Name(name string) bool {
	return slices.ContainsFunc(words(name), secretWord)
}

// words splits a name into lower-case words at each character that is no
// letter or digit and before each upper-case letter that follows a
// lower-case one or a digit ("apiKey", "APIKey" → api key, apikey).
func words(name string) []string {
	var out []string
	var w strings.Builder
	prev := rune(0)
	flush := func() {
		if w.Len() > 0 {
			out = append(out, strings.ToLower(w.String()))
			w.Reset()
		}
	}
	for _, r := range name {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			flush()
			w.WriteRune(r)
		default:
			w.WriteRune(r)
		}
		prev = r
	}
	flush()
	return out
}

// secretWord reports whether one lower-case word of a name says it holds a
// secret.
func secretWord(w string) bool {
	switch {
	case strings.Contains(w, "passw"), strings.Contains(w, "secret"), strings.Contains(w, "credential"):
		return true
	case strings.HasSuffix(w, "token"), strings.HasSuffix(w, "key"), strings.HasSuffix(w, "keys"):
		return true // apitoken, apikey; not tokens (max_tokens counts them)
	case strings.HasPrefix(w, "auth") && (!strings.HasPrefix(w, "author") || strings.HasPrefix(w, "authoriz")):
		return true // auth, authorization, authtoken; not author
	case strings.HasSuffix(w, "auth"), strings.HasPrefix(w, "signature"):
		return true // oauth, basicauth; X-Amz-Signature
	}
	return w == "sig" || w == "pwd" || w == "cookie"
}

// Environ returns the values of environ's variables ("NAME=value" each)
// whose names say they hold a secret (see Name), of 8 bytes or more: what a
// program's output and messages are scrubbed of, whether or not a process
// it started got them.
func Environ(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if len(v) >= minEnvLen && Name(k) {
			out = append(out, v)
		}
	}
	return out
}

// patterns are the regular expressions Scrub applies, compiled on first use,
// not at the program's start.
type patterns struct {
	// userinfo matches a URL's userinfo with a password (a DSN's too:
	// postgres://user:pw@host); group 2 is the password.
	userinfo *regexp.Regexp
	// param matches name=value as a URL's query (after ?, & or ;, or & as
	// JSON escapes it) or a command-line flag (--name=value) writes it;
	// group 1 is the name, group 2 the value, which ends before a
	// sentence's punctuation ("…?key=K: refused").
	param *regexp.Regexp
	// bearer matches the credentials of a Bearer Authorization; group 2.
	bearer *regexp.Regexp
	// key matches what may be a credential by its shape alone, whole or
	// masked ("Incorrect API key provided: sk-proj-****abcd"): OpenAI and
	// Anthropic (sk-…, sk-ant-…), Google (AIza…), GitHub (gh[pousr]_…,
	// github_pat_…), AWS access key ids (AKIA…), Slack (xox[abposr]-…),
	// Hugging Face (hf_…) and JWTs (eyJ….eyJ….sig). looksLikeKey decides
	// on the sk- ones.
	key *regexp.Regexp
}

var compiled = sync.OnceValue(func() patterns {
	return patterns{
		userinfo: regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://[^\s/?#@:"'<>\\]*):([^\s/?#@"'<>\\]+)@`),
		param:    regexp.MustCompile(`(?:[?&;]|\\u0026|(?:^|[\s"'\[(])--?)([A-Za-z][A-Za-z0-9_.\-]*)=([^\s&;#"'<>\\,]*[^\s&;#"'<>\\,.:)])`),
		bearer:   regexp.MustCompile(`(?i)\b(bearer\s+)([A-Za-z0-9._~+/\-]+=*)`),
		key: regexp.MustCompile(`sk-[A-Za-z0-9_\-*]{8,}|AIza[0-9A-Za-z_\-]{30,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b` +
			`|\bxox[abposr]-[A-Za-z0-9\-]{10,}|\bhf_[A-Za-z0-9]{30,}|\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*`),
	}
})

// looksLikeKey reports whether a key match is a key rather than a word
// ("sk-learn-compatible"): an sk- key has a digit, or a mask's "*".
func looksLikeKey(s string) bool {
	return !strings.HasPrefix(s, "sk-") || strings.ContainsAny(s[3:], "0123456789*")
}

// plainValue reports whether a value under a secret name is no credential
// and is kept: a number or a boolean (max_token=5, auth=false), one
// shorter than MinLen, or one already scrubbed.
func plainValue(v, mark string) bool {
	if len(v) < MinLen || v == mark || v == "true" || v == "false" {
		return true
	}
	return strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' }) < 0
}

// Scrub returns s with every credential in it replaced by mark: each of
// secrets of MinLen bytes or more (longer ones first, so that one inside
// another, "Bearer K" and K, leaves no part behind), the password of a
// URL's userinfo, the value of a query parameter or a --flag=value whose
// name says it holds a secret (see Name; numbers and booleans are kept),
// the credentials of a Bearer token, and anything shaped like a provider
// key, a Slack or Hugging Face token or a JWT. The rest of the text, the
// host and user of a URL and the names of parameters, stays as it is.
func Scrub(s string, secrets []string, mark string) string {
	byLen := slices.Clone(secrets)
	slices.SortFunc(byLen, func(a, b string) int { return len(b) - len(a) })
	for _, v := range byLen {
		if len(v) >= MinLen {
			s = strings.ReplaceAll(s, v, mark)
		}
	}
	p := compiled()
	s = replaceGroup(p.userinfo, s, 2, func(string, string) bool { return true }, mark)
	s = replaceGroup(p.param, s, 2, func(name, v string) bool { return Name(name) && !plainValue(v, mark) }, mark)
	s = replaceGroup(p.bearer, s, 2, func(_, v string) bool {
		return !plainValue(v, mark) && len(v) >= 8 && strings.ContainsAny(v, "0123456789")
	}, mark)
	return p.key.ReplaceAllStringFunc(s, func(m string) string {
		if looksLikeKey(m) {
			return mark
		}
		return m
	})
}

// replaceGroup replaces, in each match of re in s, submatch group with mark
// when scrub says so, given the submatch before it (a parameter's name) and
// the group's text.
func replaceGroup(re *regexp.Regexp, s string, group int, scrub func(before, v string) bool, mark string) string {
	ms := re.FindAllStringSubmatchIndex(s, -1)
	if ms == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range ms {
		start, end := m[2*group], m[2*group+1]
		before := s[m[2*group-2]:m[2*group-1]]
		if start < 0 || !scrub(before, s[start:end]) {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(mark)
		last = end
	}
	b.WriteString(s[last:])
	return b.String()
}

// Argv returns a copy of a command's argv fit to show: each argument
// scrubbed (see Scrub), and the argument after a flag whose name says it
// holds a secret (--api-key VALUE) replaced by mark.
func Argv(argv, secrets []string, mark string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if i > 0 && secretFlag(argv[i-1]) && !strings.HasPrefix(a, "-") {
			out[i] = mark
			continue
		}
		out[i] = Scrub(a, secrets, mark)
	}
	return out
}

// secretFlag reports whether a is a flag without a value (-t, --api-key)
// whose name says it holds a secret.
func secretFlag(a string) bool {
	name, ok := strings.CutPrefix(a, "-")
	return ok && !strings.Contains(a, "=") && Name(strings.TrimPrefix(name, "-"))
}

// Fields scrubs a decoded JSON value (as encoding/json decodes into any:
// maps, slices, strings, numbers, booleans, nil) in place and returns it:
// every string under an object key whose name says it holds a secret (see
// Name), at any depth and within arrays under that key, becomes mark. An
// object under such a key goes by its own keys' names, so that a schema's
// "properties": {"api_key": {"type": "string"}} is kept. Numbers, booleans
// and null are kept (max_tokens, token_count). It
// also returns the strings it replaced of MinLen bytes or more, so that a
// caller can scrub them wherever else they occur.
func Fields(v any, mark string) (any, []string) {
	var found []string
	var walk func(v any, under bool) any
	walk = func(v any, under bool) any {
		switch x := v.(type) {
		case string:
			if !under || x == mark {
				return x
			}
			if len(x) >= MinLen {
				found = append(found, x)
			}
			return mark
		case []any:
			for i := range x {
				x[i] = walk(x[i], under)
			}
		case map[string]any:
			for k, val := range x {
				x[k] = walk(val, Name(k))
			}
		}
		return v
	}
	return walk(v, false), found
}

// Error returns err with its text scrubbed (see Scrub) of secrets and of
// credentials found by name, place or shape; errors.Is and errors.As see
// err as it is. A nil err is nil.
func Error(err error, secrets []string, mark string) error {
	if err == nil {
		return nil
	}
	return &scrubbedError{err: err, secrets: secrets, mark: mark}
}

type scrubbedError struct {
	err     error
	secrets []string
	mark    string
}

func (e *scrubbedError) Error() string { return Scrub(e.err.Error(), e.secrets, e.mark) }
func (e *scrubbedError) Unwrap() error { return e.err }

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
