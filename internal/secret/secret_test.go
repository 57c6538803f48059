package secret

import (
	"encoding/json"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/secret/secrettest"
)

func TestName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"GITHUB_TOKEN", true},
		{"AWS_SECRET_ACCESS_KEY", true},
		{"ANTHROPIC_AUTH_TOKEN", true},
		{"GEMINI_API_KEY", true},
		{"db_password", true},
		{"PGPASSWORD", true},
		{"sig", true},
		{"X-Amz-Signature", true},
		{"apiKey", true},
		{"APIKey", true},
		{"client_secret", true},
		{"clientSecret", true},
		{"Authorization", true},
		{"oauth", true},
		{"access_token", true},
		{"token_count", true},
		{"Cookie", true},
		{"PATH", false},
		{"HOME", false},
		{"api-version", false},
		{"max_tokens", false},
		{"input_tokens", false},
		{"author", false},
		{"design", false},
		{"keyboard", false},
		{"signal", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Name(tt.name); got != tt.want {
				t.Errorf("Name(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

func TestEnviron(t *testing.T) {
	env := []string{"PATH=/usr/bin", "GITHUB_TOKEN=ghp_secret_value_1", "AWS_SECRET_ACCESS_KEY=aws-secret-value", "GEMINI_API_KEY=short", "MY_TOKEN=passed-token-value", "AUTHOR=someone-long"}
	want := []string{"ghp_secret_value_1", "aws-secret-value", "passed-token-value"}
	if d := cmp.Diff(want, Environ(env)); d != "" {
		t.Errorf("Environ (-want +got):\n%s", d)
	}
}

func TestScrub(t *testing.T) {
	secrets := []string{"hunter", "hunter2-secret", "zz"}
	tests := []struct {
		name, in, want string
	}{
		{"a secret", "x hunter y", "x *** y"},
		{"the longer secret first", "hunter2-secret", "***"},
		{"short values stay", "zz", "zz"},
		{"openai key", "key sk-proj-Ab12Cd34Ef56", "key ***"},
		{"masked key", "sk-proj-****wxyz.", "***."},
		{"a word is no key", "sk-learn-compatible", "sk-learn-compatible"},
		{"gemini key", "AIzaSyA1234567890abcdefghijklmnopqrstu", "***"},
		{"github token", "ghp_0123456789abcdefghijABCDEFGHIJ012345", "***"},
		{"github fine-grained token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "***"},
		{"aws key id", "id=AKIAIOSFODNN7EXAMPLE;", "id=***;"},
		{"no key in words", "an AKIA word", "an AKIA word"},
		{"url password", `Post "http://admin:pw9@mcp.test:8080/mcp": refused`, `Post "http://admin:***@mcp.test:8080/mcp": refused`},
		{"dsn password", "postgres://app:pg-pw@db:5432/x", "postgres://app:***@db:5432/x"},
		{"url without userinfo", "see http://mcp.test:8080/mcp?page=2#top", "see http://mcp.test:8080/mcp?page=2#top"},
		{"query key", "GET /v1?alt=sse&key=k-value-1&x=1", "GET /v1?alt=sse&key=***&x=1"},
		{"query key as JSON escapes it", `"/v1?a=1\u0026api_key=k-value-1"`, `"/v1?a=1\u0026api_key=***"`},
		{"query key as HTML escapes it", `/v1?a=1&amp;token=k-value-1`, `/v1?a=1&amp;token=***`},
		{"flag", `["srv" "--api-key=k-value-1"]`, `["srv" "--api-key=***"]`},
		{"numbers stay", "/v1?max_token=5&token_count=1024", "/v1?max_token=5&token_count=1024"},
		{"a booleans stays", "--auth=false", "--auth=false"},
		{"bearer", "Authorization: Bearer abc123def456", "Authorization: Bearer ***"},
		{"bearer in words", "a Bearer authentication scheme", "a Bearer authentication scheme"},
		{"jwt", "id eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln-_x end", "id *** end"},
		{"slack", "xoxb-2048-4096-abcDEF123", "***"},
		{"hugging face", "HF hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567", "HF ***"},
		{"sk-ant", "sk-ant-api03-abc123XYZ", "***"},
		{"ordinary text", "max_tokens: 5, scikit sk-learn, token count 3", "max_tokens: 5, scikit sk-learn, token count 3"},
		{"scrubbed twice", "http://u:***@h/?key=***", "http://u:***@h/?key=***"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Scrub(tt.in, secrets, "***"); got != tt.want {
				t.Errorf("Scrub(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestScrubLeaks: every credential of the shared table that text can carry
// is scrubbed from it, knowing only the environment, the text around it
// kept.
func TestScrubLeaks(t *testing.T) {
	secrettest.Setenv(t)
	env := Environ([]string{"MY_API_KEY=" + secrettest.Leaks[0].Secret})
	for _, l := range secrettest.With("arg") {
		t.Run(l.Name, func(t *testing.T) {
			got := Scrub(`starting ["mcp-server" "`+l.Arg+`"]`, env, "***")
			secrettest.Check(t, "Scrub", got, []secrettest.Leak{l})
			if !strings.Contains(got, `"mcp-server"`) {
				t.Errorf("Scrub lost the command name: %s", got)
			}
		})
	}
}

func TestArgv(t *testing.T) {
	tests := []struct {
		name       string
		argv, want []string
	}{
		{"flag and value", []string{"srv", "--api-key", "v-123456", "--port", "8080"}, []string{"srv", "--api-key", "***", "--port", "8080"}},
		{"flag with =", []string{"srv", "--token=v-123456"}, []string{"srv", "--token=***"}},
		{"a known secret", []string{"srv", "known-secret"}, []string{"srv", "***"}},
		{"a flag after a secret flag", []string{"srv", "-t", "--verbose"}, []string{"srv", "-t", "--verbose"}},
		{"ordinary", []string{"npx", "-y", "@modelcontextprotocol/server-memory"}, []string{"npx", "-y", "@modelcontextprotocol/server-memory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, Argv(tt.argv, []string{"known-secret"}, "***")); d != "" {
				t.Errorf("Argv (-want +got):\n%s", d)
			}
		})
	}
}

// TestFields: the JSON credentials of the shared table are scrubbed at any
// depth, the rest kept.
func TestFields(t *testing.T) {
	for _, l := range secrettest.With("json") {
		t.Run(l.Name, func(t *testing.T) {
			var v any
			if err := json.Unmarshal([]byte(l.JSON), &v); err != nil {
				t.Fatal(err)
			}
			v, found := Fields(v, "***")
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			got := Scrub(string(b), found, "***")
			secrettest.Check(t, "Fields", got, []secrettest.Leak{l})
		})
	}
	in := `{"usage":{"max_tokens":5,"token_count":7,"auth":false,"key":null},"author":"Ann","keys":["k-1234","k-5678"],"args":{"api_key":"ak-123456"},"properties":{"token":{"type":"string"}}}`
	var v any
	if err := json.Unmarshal([]byte(in), &v); err != nil {
		t.Fatal(err)
	}
	v, found := Fields(v, "***")
	b, _ := json.Marshal(v)
	want := `{"args":{"api_key":"***"},"author":"Ann","keys":["***","***"],"properties":{"token":{"type":"string"}},"usage":{"auth":false,"key":null,"max_tokens":5,"token_count":7}}`
	if string(b) != want {
		t.Errorf("Fields = %s, want %s", b, want)
	}
	slices.Sort(found)
	if d := cmp.Diff([]string{"ak-123456", "k-1234", "k-5678"}, found); d != "" {
		t.Errorf("found (-want +got):\n%s", d)
	}
}

func TestError(t *testing.T) {
	inner := &fs.PathError{Op: "open", Path: "http://u:pw-123@h/x?api_key=k-99999", Err: fs.ErrNotExist}
	err := Error(inner, nil, "***")
	if got, want := err.Error(), "open http://u:***@h/x?api_key=***: file does not exist"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Error("errors.Is does not see the wrapped error")
	}
	if Error(nil, nil, "***") != nil {
		t.Error("Error(nil) is not nil")
	}
}

func TestBearer(t *testing.T) {
	tests := []struct {
		header string
		want   string
		ok     bool
	}{
		{"Bearer k3y", "k3y", true},
		{"bearer k3y", "k3y", true},
		{"BEARER   k3y ", "k3y", true},
		{"Basic a2V5", "", false},
		{"Bearerk3y", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		if got, ok := Bearer(tt.header); got != tt.want || ok != tt.ok {
			t.Errorf("Bearer(%q) = %q, %v; want %q, %v", tt.header, got, ok, tt.want, tt.ok)
		}
	}
}
