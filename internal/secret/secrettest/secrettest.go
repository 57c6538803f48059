// Package secrettest holds the one table of credentials that tests run
// through every output replaycheck writes or prints (reports, serve's
// stderr, both cassettes, logs, errors): each must come out scrubbed, the
// text around it still useful.
package secrettest

import (
	"strings"
	"testing"
)

// Leak is one way a credential reaches replaycheck's outputs.
type Leak struct {
	// Name names the row.
	Name string
	// Secret is the value no output may show.
	Secret string
	// Env, when not "", is the environment variable Secret comes from, as
	// ${Env} in mcp.command; Setenv sets it.
	Env string
	// Arg is how Secret appears in text: an argument of a forwarded
	// server's command (as ${Env} expands), a URL, a line a process
	// prints; "" for a credential that only a JSON field holds.
	Arg string
	// URL is a relay URL carrying Secret (a loopback port nothing listens
	// on); "" when Arg has no place in a URL.
	URL string
	// JSON is a JSON object carrying Secret in a field, as a tool's
	// arguments or answer would; "" for a credential only text holds.
	JSON string
	// Keep is text around Secret that an output must still show (a host,
	// a parameter's name); "" for none.
	Keep string
}

const (
	jwt   = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJyZXBsYXljaGVjayJ9.c2lnbmF0dXJlLWJ5dGVzLTQy"
	slack = "xoxb-2048-4096-Zq9SlackBotTok3n"
	hf    = "hf_Zq9aBcDeFgHiJkLmNoPqRsTuVwXyZ01234"
	ghp   = "ghp_Zq9aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456"
	sk    = "sk-ant-api03-Zq9aBcDeFgHi123"
)

// Leaks is the table: every credential shape issue 34 names, each as it
// arrives.
var Leaks = []Leak{
	{Name: "env var expanded into mcp.command", Secret: "Zq9-env-value-from-MY_API_KEY", Env: "MY_API_KEY",
		Arg: "Zq9-env-value-from-MY_API_KEY", URL: "http://127.0.0.1:1/mcp/Zq9-env-value-from-MY_API_KEY"},
	{Name: "relay URL userinfo password", Secret: "pw-Zq9-relay",
		Arg: "http://admin:pw-Zq9-relay@127.0.0.1:1/mcp", URL: "http://admin:pw-Zq9-relay@127.0.0.1:1/mcp", Keep: "admin:"},
	{Name: "api_key query value", Secret: "q-Zq9-api-key-value",
		Arg: "http://127.0.0.1:1/mcp?api_key=q-Zq9-api-key-value&mode=full", URL: "http://127.0.0.1:1/mcp?api_key=q-Zq9-api-key-value&mode=full", Keep: "mode=full"},
	{Name: "secret-named flag", Secret: "f-Zq9-flag-token", Arg: "--auth-token=f-Zq9-flag-token", Keep: "--auth-token="},
	{Name: "nested cfg.secret", Secret: "n-Zq9-cfg-secret", JSON: `{"cfg":{"secret":"n-Zq9-cfg-secret","region":"eu"}}`, Keep: "eu"},
	{Name: "nested cfg.client_secret", Secret: "n-Zq9-client-secret", JSON: `{"cfg":{"client_id":"app-1","client_secret":"n-Zq9-client-secret"}}`, Keep: "app-1"},
	{Name: "nested cfg.Authorization bearer", Secret: "n-Zq9-bearer-0001", JSON: `{"cfg":{"headers":{"Authorization":"Bearer n-Zq9-bearer-0001"}}}`},
	{Name: "list[].apiKey", Secret: "n-Zq9-list-api-key", JSON: `{"list":[{"name":"a","apiKey":"n-Zq9-list-api-key"}],"max_tokens":5}`, Keep: `"max_tokens":5`},
	{Name: "JWT", Secret: jwt, Arg: jwt, URL: "http://127.0.0.1:1/mcp?session=" + jwt, JSON: `{"note":"` + jwt + `"}`},
	{Name: "Slack xoxb- token", Secret: slack, Arg: slack, URL: "http://127.0.0.1:1/mcp?bot=" + slack, JSON: `{"note":"` + slack + `"}`},
	{Name: "Hugging Face hf_ token", Secret: hf, Arg: hf, URL: "http://127.0.0.1:1/mcp?hub=" + hf, JSON: `{"note":"` + hf + `"}`},
	{Name: "GitHub ghp_ token", Secret: ghp, Arg: ghp, URL: "http://127.0.0.1:1/mcp?gh=" + ghp, JSON: `{"note":"` + ghp + `"}`},
	{Name: "Anthropic sk- key", Secret: sk, Arg: sk, URL: "http://127.0.0.1:1/mcp?k=" + sk, JSON: `{"note":"` + sk + `"}`},
	{Name: "postgres DSN password", Secret: "pg-Zq9-password",
		Arg: "postgres://app:pg-Zq9-password@db.internal.test:5432/ledger", URL: "http://127.0.0.1:1/mcp?dsn=postgres://app:pg-Zq9-password@db.internal.test:5432/ledger",
		JSON: `{"db":{"url":"postgres://app:pg-Zq9-password@db.internal.test:5432/ledger"}}`, Keep: "db.internal.test"},
}

// Setenv sets the variables the table's rows come from, for t's duration.
func Setenv(t *testing.T) {
	for _, l := range Leaks {
		if l.Env != "" {
			t.Setenv(l.Env, l.Secret)
		}
	}
}

// Check fails t for each of leaks' secrets that out, what the output named
// what wrote, shows (see NoSecret), and for each Keep it does not.
func Check(t *testing.T, what, out string, leaks []Leak) {
	t.Helper()
	NoSecret(t, what, out, leaks)
	for _, l := range leaks {
		if l.Keep != "" && !strings.Contains(out, l.Keep) {
			t.Errorf("%s lost %q around the secret of %q:\n%s", what, l.Keep, l.Name, out)
		}
	}
}

// With returns the rows whose field of kind is set: "arg", "url" or "json".
func With(kind string) []Leak {
	var out []Leak
	for _, l := range Leaks {
		if map[string]string{"arg": l.Arg, "url": l.URL, "json": l.JSON}[kind] != "" {
			out = append(out, l)
		}
	}
	return out
}

// NoSecret fails t for each of leaks' secrets that out, what the output
// named what wrote, shows.
func NoSecret(t *testing.T, what, out string, leaks []Leak) {
	t.Helper()
	for _, l := range leaks {
		if strings.Contains(out, l.Secret) {
			t.Errorf("%s shows the secret of %q (%s):\n%s", what, l.Name, l.Secret, out)
		}
	}
}
