package targetfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/targettest"
)

var testEnv = targettest.Getenv

// TestLoadTargetFileErrors checks that bad target files are errors at their
// line and column.
func TestLoadTargetFileErrors(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		wantErr string
	}{
		{"unknown kind", "kind: gateway\nurl: x\n", "target.yaml:1:7: unknown target kind \"gateway\"; want client ("},
		{"no kind", "url: http://x\n", "target.yaml: a target file needs a kind: client ("},
		{"unknown field", "kind: proxy\nurl: http://127.0.0.1:4000\nfakes: {upstream_addr: 127.0.0.1:1, mcp_addr: 127.0.0.1:2}\nheaderz: {}\n", "target.yaml:4:1: unknown field \"headerz\""},
		{"client field on a proxy", "kind: proxy\nurl: http://127.0.0.1:{{port}}\ncommand: [x]\n", "target.yaml:3:1: unknown field \"command\""},
		{"wrong type", "kind: client\ncommand: x\n", "target.yaml:2:10:"},
		{"bad duration", "kind: client\ncommand: [x]\ntimeout: soon\n", "target.yaml:3:10:"},
		{"no url", "kind: proxy\nstart: {command: [x]}\n", "target.yaml: a proxy target needs a url"},
		{"not started, no fakes", "kind: proxy\nurl: http://127.0.0.1:4000\n", "must name the fakes' fixed addresses"},
		{"unset env", "kind: proxy\nurl: http://127.0.0.1:{{port}}\nheaders: {Authorization: \"Bearer ${NOPE_KEY}\"}\nstart: {command: [x]}\n", "target.yaml:3:26: environment variable NOPE_KEY is not set"},
		{"unknown template variable", "kind: proxy\nurl: http://127.0.0.1:{{port}}\nstart: {command: [x, \"{{upstream}}\"]}\n", "target.yaml:3:22: unknown template variable {{upstream}} here; want one of config, fallbacks,"},
		{"prompt in a proxy", "kind: proxy\nurl: http://127.0.0.1:{{port}}\nstart: {command: [x, \"{{prompt}}\"]}\n", "unknown template variable {{prompt}}"},
		{"bad body endpoint", "kind: proxy\nurl: http://127.0.0.1:{{port}}\nbodies: {chatt: {}}\nstart: {command: [x]}\n", "target.yaml:3:9: bodies: unknown endpoint \"chatt\""},
		{"bad fake address", "kind: proxy\nurl: http://127.0.0.1:4000\nfakes: {upstream_addr: nowhere, mcp_addr: 127.0.0.1:2}\n", "target.yaml:3:24: upstream_addr \"nowhere\": want host:port"},
		{"missing config template", "kind: proxy\nurl: http://127.0.0.1:{{port}}\nstart: {command: [x], config: missing.tmpl}\n", "config template"},
		{"client without command", "kind: client\n", "a client target needs a command"},
		{"unknown dialect", "kind: client\ncommand: [x]\ndialects: [chat, gemeni]\n", "target.yaml:3:18: dialects: \"gemeni\" is not one of chat, responses, messages, gemini, or is given twice"},
		{"dialect twice", "kind: client\ncommand: [x]\ndialects: [chat, chat]\n", "target.yaml:3:18: dialects: \"chat\" is not one of"},
		{"bad pass_env name", "kind: client\ncommand: [x]\npass_env: [GOOD, \"A=B\"]\n", "target.yaml:3:18: pass_env: \"A=B\" is not a variable name"},
		{"bad start.pass_env name", "kind: proxy\nurl: http://127.0.0.1:{{port}}\nstart: {command: [x], pass_env: [\"\"]}\n", "target.yaml:3:34: pass_env: \"\" is not a variable name"},
		{"config_dir without config", "kind: proxy\nurl: http://127.0.0.1:{{port}}\nstart: {command: [x], config_dir: .}\n", "target.yaml:3:35: config_dir without config: there is no config to render"},
		{"missing config_dir", "kind: proxy\nurl: http://127.0.0.1:{{port}}\nstart: {command: [x], config: target.yaml, config_dir: nowhere}\n", "target.yaml:3:56: config_dir /"},
		{"syntax", "kind: client\ncommand: [x\n", "target.yaml:"},
		{"alias bomb in bodies", "kind: proxy\nurl: http://127.0.0.1:{{port}}\nstart: {command: [x]}\nbodies:\n  chat:\n" + laughs("    ", 9),
			"target.yaml:12:14: document expands to more than 1048576 nodes through its aliases"},
		{"alias inside its own anchor", "kind: proxy\nurl: http://127.0.0.1:{{port}}\nstart: {command: [x]}\nbodies: {chat: &b {x: [*b]}}\n",
			"target.yaml:4:24: alias *b is inside its own anchor &b"},
		// mcp (forward.go) that contradicts itself.
		{"mcp: neither", clientHead + "mcp: {writes: [a]}\n", "target.yaml:3:6: mcp: set relay"},
		{"mcp: both", clientHead + "mcp: {relay: \"http://127.0.0.1:1/mcp\", command: [node]}\n", "target.yaml:3:49: mcp.relay and mcp.command: set one"},
		{"mcp: relay not a URL", proxyHead + "mcp: {relay: localhost}\n", "target.yaml:4:14: mcp.relay \"localhost\": want an http or https URL"},
		{"mcp: env with relay", clientHead + "mcp:\n  relay: http://127.0.0.1:1/mcp\n  env: {A: b}\n", "target.yaml:5:8: mcp.env belongs to mcp.command"},
		{"mcp: empty program", clientHead + "mcp: {command: [\"\"]}\n", "target.yaml:3:16: mcp.command: want the server's argv"},
		{"mcp: unknown variable", clientHead + "mcp: {command: [node, \"{{mcp_url}}\"]}\n", "target.yaml:3:23: unknown template variable {{mcp_url}} here; want one of entry, token"},
		{"unknown variable in env", clientHead + "mcp:\n  command: [node]\n  env: {F: \"{{run_dir}}/f\"}\n", "target.yaml:5:12: unknown template variable {{run_dir}}"},
		{"mcp: call without a tool", clientHead + "mcp:\n  command: [node]\n  calls: {commit_write: {arguments: {a: b}}}\n", "target.yaml:5:25: mcp.calls.commit_write: want the server's tool"},
		{"unknown variable in arguments", clientHead + "mcp:\n  command: [node]\n  calls: {commit_write: {call: c, arguments: {a: \"{{prompt}}\"}}}\n", "target.yaml:5:50: unknown template variable {{prompt}}"},
		{"mcp: unknown protocol", clientHead + "mcp: {protocol: \"2025-01-01\"}\n", "target.yaml:3:17: mcp.protocol \"2025-01-01\": want one of 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05"},
		{"mcp: writes with protocol alone", clientHead + "mcp: {protocol: 2026-07-28, writes: [a]}\n", "target.yaml:3:37: mcp.writes belongs to a forwarded server; set mcp.relay or mcp.command too"},
		{"mcp: unknown field", clientHead + "mcp: {command: [node], transport: stdio}\n", "target.yaml:3:24: unknown field \"transport\""},
		// A string where a list is wanted shows the list form.
		{"command as a string", "kind: client\ncommand: python3 agent.py\n", "target.yaml:2:10: command must be a list: command: [python3, agent.py]"},
		{"mcp.command as a string", clientHead + "mcp: {command: node server.js}\n", "target.yaml:3:16: command must be a list: command: [node, server.js]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "target.yaml")
			if err := os.WriteFile(path, []byte(tt.src), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path, Options{Getenv: testEnv})
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error:\n%v\nwant it to contain %q", err, tt.wantErr)
			}
			var se *scenario.Error
			if !errors.As(err, &se) {
				t.Errorf("error %T is not a *scenario.Error", err)
			}
		})
	}
}

// laughs is a billion-laughs mapping, each line indented by indent: levels
// anchors, each a list of nine aliases of the one before.
func laughs(indent string, levels int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%sl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n", indent)
	for i := 1; i < levels; i++ {
		fmt.Fprintf(&b, "%sl%d: &l%d [%s]\n", indent, i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 9), ", "))
	}
	return b.String()
}

// TestTargetFileAliases: the value of an anchor is expanded once, so its
// aliases get the same value ($${ stays a literal ${ at each).
func TestTargetFileAliases(t *testing.T) {
	src := "kind: proxy\nurl: http://127.0.0.1:{{port}}\nstart: {command: [x]}\n" +
		"bodies:\n  chat: &body {note: \"$${LITERAL}\", tools: [{server_url: \"{{mcp_url}}\"}]}\n  responses: *body\n  messages: {<<: *body, extra: 1}\n"
	path := filepath.Join(t.TempDir(), "target.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := specOf(path, []byte(src), Options{Getenv: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"note": "${LITERAL}", "tools": []any{map[string]any{"server_url": "{{mcp_url}}"}}}
	merged := maps.Clone(body)
	merged["extra"] = uint64(1)
	want := map[scenario.Endpoint]map[string]any{"chat": body, "responses": body, "messages": merged}
	if diff := cmp.Diff(want, spec.(target.ProxySpec).Bodies); diff != "" {
		t.Errorf("bodies (-want +got):\n%s", diff)
	}
}

// TestResolveTarget tells builtin names from files.
func TestResolveTarget(t *testing.T) {
	if tg, err := Resolve("builtin:naive", Options{}); err != nil || tg.Name() != "builtin:naive" {
		t.Errorf("builtin:naive: %v, %v", tg, err)
	}
	if _, err := Resolve("nope.yaml", Options{}); err == nil || !strings.Contains(err.Error(), "nope.yaml: no such file") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := Resolve("lambda:x", Options{}); err == nil || !strings.Contains(err.Error(), "nor is it a target file") {
		t.Errorf("unknown: %v", err)
	}
}

// TestTargetSchema lists both kinds and their fields.
func TestTargetSchema(t *testing.T) {
	b, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		OneOf []struct {
			Ref string `json:"$ref"`
		} `json:"oneOf"`
		Defs map[string]struct {
			Properties           map[string]any `json:"properties"`
			AdditionalProperties *bool          `json:"additionalProperties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.OneOf) != 2 {
		t.Errorf("oneOf: %+v", s.OneOf)
	}
	for def, fields := range map[string][]string{
		"ProxyFile":  {"kind", "url", "headers", "bodies", "start", "fakes", "retry_after_hint"},
		"ClientFile": {"kind", "command", "env", "dir", "timeout", "retry_after_hint"},
		"ProxyStart": {"command", "config", "env", "ready", "stop_grace"},
	} {
		d, ok := s.Defs[def]
		if !ok {
			t.Errorf("no definition %s", def)
			continue
		}
		for _, f := range fields {
			if _, ok := d.Properties[f]; !ok {
				t.Errorf("%s lacks %s", def, f)
			}
		}
		if d.AdditionalProperties == nil || *d.AdditionalProperties {
			t.Errorf("%s allows unknown fields", def)
		}
	}
}

// parseTargetEnv parses the target file src with env as the environment
// and returns its target's spec.
func parseTargetEnv(t *testing.T, src string, env map[string]string) (any, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "target.yaml")
	return specOf(path, []byte(src), Options{Getenv: func(k string) string { return env[k] }, Replaycheck: "/bin/false"})
}

// specOf parses the target file src, read from path, as Parse does, and
// returns its target's spec: a target.ProxySpec or a target.ClientSpec.
func specOf(path string, src []byte, opts Options) (any, error) {
	f, schemaErrs, err := open(path, src, opts)
	if err != nil {
		return nil, err
	}
	var spec any
	switch f.head["kind"] {
	case "proxy":
		spec, err = proxySpec(f)
	case "client":
		spec, err = clientSpec(f)
	default:
		return nil, fmt.Errorf("kind %v", f.head["kind"])
	}
	if err != nil {
		return nil, err
	}
	if len(schemaErrs) > 0 {
		return nil, schemaErrs
	}
	return spec, nil
}

// TestTargetFileEnvInEveryScalar: ${NAME} and ${NAME:-default} work in every
// scalar value of a target file — whole numbers, durations, list items, map
// values, nested body fields — and a plain scalar that expands to a number or
// true/false is one, while a quoted one and text that only looks like a
// number (010, 1.10) stay strings.
func TestTargetFileEnvInEveryScalar(t *testing.T) {
	const clientSrc = `kind: client
name: ${CLIENT_NAME:-agent}
command: [sh, -c, "${CLIENT_CMD}", "${PIN}"]
timeout: ${CLIENT_TIMEOUT:-90s}
num_retries: ${MAX_RETRIES:-2}
retry_after_hint: ${HINT:-250ms}
env:
  VERSION: ${VERSION}
  PIN: ${PIN}
  COUNT: ${MAX_RETRIES:-2}
dir: ${WORK_DIR:-/tmp}
`
	const proxySrc = `kind: proxy
url: http://${PROXY_HOST:-127.0.0.1}:{{port}}
num_retries: ${MAX_RETRIES:-2}
bodies:
  chat:
    max_tokens: ${MAX_TOKENS:-100}
    stream: ${STREAM:-false}
    temperature: ${TEMPERATURE:-0.5}
    parallel: "${STREAM:-false}"
    metadata: {user: "${USER_ID}", tags: [a, "${TAG:-b}"]}
    tools:
      - type: mcp
        server_label: ${LABEL:-ledger}
        server_url: "{{mcp_url}}"
start:
  command: ["${PROXY_BIN:-litellm}", --port, "{{port}}"]
  ready:
    url: "${READY_BASE:-http://127.0.0.1}:{{port}}/health"
    timeout: ${READY_TIMEOUT:-5s}
  stop_grace: ${GRACE:-1s}
  dir: ${PROXY_DIR:-/srv}
`
	env := map[string]string{"CLIENT_CMD": "echo hi", "VERSION": "1.10", "PIN": "0123", "USER_ID": "u-7", "LABEL": "books"}
	tests := []struct {
		name string
		src  string
		env  map[string]string
		want any
	}{
		{
			name: "client defaults",
			src:  clientSrc,
			env:  env,
			want: target.ClientSpec{Name: "agent", Command: []string{"sh", "-c", "echo hi", "0123"},
				Timeout: 90 * time.Second, NumRetries: ptr(2), RetryAfterHint: 250 * time.Millisecond,
				Env: map[string]string{"VERSION": "1.10", "PIN": "0123", "COUNT": "2"}, Dir: "/tmp", Replaycheck: "/bin/false"},
		},
		{
			name: "client from the environment",
			src:  clientSrc,
			env:  merge(env, map[string]string{"CLIENT_NAME": "codex", "CLIENT_TIMEOUT": "3m", "MAX_RETRIES": "7", "HINT": "1s", "WORK_DIR": "/work"}),
			want: target.ClientSpec{Name: "codex", Command: []string{"sh", "-c", "echo hi", "0123"},
				Timeout: 3 * time.Minute, NumRetries: ptr(7), RetryAfterHint: time.Second,
				Env: map[string]string{"VERSION": "1.10", "PIN": "0123", "COUNT": "7"}, Dir: "/work", Replaycheck: "/bin/false"},
		},
		{
			name: "proxy defaults",
			src:  proxySrc,
			env:  env,
			want: target.ProxySpec{Name: "target", URL: "http://127.0.0.1:{{port}}", NumRetries: ptr(2), Replaycheck: "/bin/false",
				Bodies: map[scenario.Endpoint]map[string]any{"chat": {
					"max_tokens": uint64(100), "stream": false, "temperature": 0.5, "parallel": "false",
					"metadata": map[string]any{"user": "u-7", "tags": []any{"a", "b"}},
					"tools":    []any{map[string]any{"type": "mcp", "server_label": "books", "server_url": "{{mcp_url}}"}},
				}},
				Start: &target.ProxyStart{Command: []string{"litellm", "--port", "{{port}}"}, Dir: "/srv",
					ReadyURL: "http://127.0.0.1:{{port}}/health", ReadyTimeout: 5 * time.Second,
					StopGrace: time.Second}},
		},
		{
			name: "proxy from the environment",
			src:  proxySrc,
			env:  merge(env, map[string]string{"MAX_RETRIES": "0", "MAX_TOKENS": "4096", "STREAM": "true", "TEMPERATURE": "1.25", "PROXY_BIN": "/opt/gw", "GRACE": "10s"}),
			want: target.ProxySpec{Name: "target", URL: "http://127.0.0.1:{{port}}", NumRetries: ptr(0), Replaycheck: "/bin/false",
				Bodies: map[scenario.Endpoint]map[string]any{"chat": {
					"max_tokens": uint64(4096), "stream": true, "temperature": 1.25, "parallel": "true",
					"metadata": map[string]any{"user": "u-7", "tags": []any{"a", "b"}},
					"tools":    []any{map[string]any{"type": "mcp", "server_label": "books", "server_url": "{{mcp_url}}"}},
				}},
				Start: &target.ProxyStart{Command: []string{"/opt/gw", "--port", "{{port}}"}, Dir: "/srv",
					ReadyURL: "http://127.0.0.1:{{port}}/health", ReadyTimeout: 5 * time.Second,
					StopGrace: 10 * time.Second}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseTargetEnv(t, tt.src, tt.env)
			if err != nil {
				t.Fatalf("loading: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(target.ClientSpec{}, "Secrets"), cmpopts.IgnoreFields(target.ProxySpec{}, "Secrets")); diff != "" {
				t.Errorf("decoded file (-want +got):\n%s", diff)
			}
		})
	}
}
func ptr[T any](v T) *T { return &v }
func merge(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

// TestTargetFileEnvErrors: an unset ${NAME} without a default is an error
// at the line and column of its scalar, wherever that is; a value of the
// wrong type is one too, and shows no secret.
func TestTargetFileEnvErrors(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		wantErr string
	}{
		{"int field", "kind: client\ncommand: [x]\nnum_retries: ${MAX_RETRIES}\n", "target.yaml:3:14: environment variable MAX_RETRIES is not set (use ${MAX_RETRIES:-default} for a default)"},
		{"duration field", "kind: client\ncommand: [x]\ntimeout: ${CLIENT_TIMEOUT}\n", "target.yaml:3:10: environment variable CLIENT_TIMEOUT is not set"},
		{"list item", "kind: client\ncommand:\n  - x\n  - --model=${MODEL}\n", "target.yaml:4:5: environment variable MODEL is not set"},
		{"nested body field", "kind: proxy\nurl: http://127.0.0.1:{{port}}\nbodies:\n  chat:\n    tools: [{type: mcp, server_label: \"${LABEL}\"}]\nstart: {command: [x]}\n", "target.yaml:5:39: environment variable LABEL is not set"},
		{"block scalar", "kind: client\ncommand:\n  - sh\n  - -c\n  - |\n    echo ${GREETING}\n", "target.yaml:5:5: environment variable GREETING is not set"},
		{"via", "kind: client\ncommand: [x]\nvia: ${GATEWAY_FILE}\n", "target.yaml:3:6: environment variable GATEWAY_FILE is not set"},
		{"wrong type", "kind: client\ncommand: [x]\nnum_retries: ${RUN_MODE}\n", "target.yaml:3:14: num_retries: want a whole number, got \"naive\""},
		{"wrong type, secret", "kind: client\ncommand: [x]\nnum_retries: ${MY_API_KEY}\n", "target.yaml:3:14: num_retries: want a whole number, got \"***\""},
		{"bad duration, secret", "kind: client\ncommand: [x]\ntimeout: ${MY_API_KEY}\n", "target.yaml:3:10: "},
		{"bad address, secret", "kind: proxy\nurl: http://127.0.0.1:4000\nfakes: {upstream_addr: \"${MY_API_KEY}\", mcp_addr: 127.0.0.1:2}\n", "target.yaml:3:24: upstream_addr \"***\": want host:port"},
	}
	env := map[string]string{"RUN_MODE": "naive", "MY_API_KEY": "sk-typed-secret-1234"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseTargetEnv(t, tt.src, env)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error:\n%v\nwant it to contain %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), env["MY_API_KEY"]) {
				t.Errorf("the secret appears in the error:\n%v", err)
			}
			var se *scenario.Error
			if !errors.As(err, &se) {
				t.Errorf("error %T is not a *scenario.Error", err)
			}
		})
	}
}

// TestTargetFileEnvSecrets: a secret-named ${NAME} is a secret wherever the
// file uses it (here in a body field and a ready URL, where no ${ENV} was
// expanded before), and an env value from ${ENV} is one whatever its name;
// a plain env value and other references are not.
func TestTargetFileEnvSecrets(t *testing.T) {
	src := `kind: proxy
url: http://127.0.0.1:{{port}}
bodies:
  chat:
    metadata: {auth: "${SERVICE_TOKEN}", mode: "${RUN_MODE}"}
start:
  command: [x]
  env:
    FROM_ENV: "${RUN_MODE}-${REGION}"
    TAGGED: !!str ${ZONE}
    BLOCK: |
      zone=${ZONE:-none}
    PLAIN: literal-value
  ready: {url: "http://127.0.0.1:{{port}}/health?key=${HEALTH_KEY}"}
`
	env := map[string]string{"SERVICE_TOKEN": "tok-body-secret-42", "HEALTH_KEY": "hk-ready-secret-77", "RUN_MODE": "naive", "REGION": "eu", "ZONE": "zone-b"}
	spec, err := parseTargetEnv(t, src, env)
	if err != nil {
		t.Fatal(err)
	}
	secrets := spec.(target.ProxySpec).Secrets
	for _, want := range []string{"tok-body-secret-42", "hk-ready-secret-77", "naive-eu", "zone-b", "zone=zone-b\n"} {
		if !slices.Contains(secrets, want) {
			t.Errorf("secrets %q: want %q among them", secrets, want)
		}
	}
	for _, notWant := range []string{"naive", "literal-value"} {
		if slices.Contains(secrets, notWant) {
			t.Errorf("secrets %q: %q is not a secret", secrets, notWant)
		}
	}
}

// TestTargetFileEnvEscape: $${ is a literal ${ (for the shell of a command),
// never looked up; ${NAME} next to it still is.
func TestTargetFileEnvEscape(t *testing.T) {
	src := "kind: client\ncommand: [sh, -c, 'echo $${HOME:-none} ${RUN_MODE} $$ $HOME']\nenv: {LITERAL: \"$${NOT_SET}\"}\n"
	spec, err := parseTargetEnv(t, src, map[string]string{"RUN_MODE": "naive"})
	if err != nil {
		t.Fatal(err)
	}
	c := spec.(target.ClientSpec)
	if got, want := c.Command[2], "echo ${HOME:-none} naive $$ $HOME"; got != want {
		t.Errorf("command argument %q, want %q", got, want)
	}
	if got, want := c.Env["LITERAL"], "${NOT_SET}"; got != want {
		t.Errorf("env value %q, want %q", got, want)
	}
	if slices.Contains(c.Secrets, "${NOT_SET}") {
		t.Errorf("an escaped value is among the secrets %q", c.Secrets)
	}
}

// TestTargetSchemaAllowsEnvRefs: the schema lets a number or a duration be
// a ${NAME} reference, as the loader does, and still says what it wants.
func TestTargetSchemaAllowsEnvRefs(t *testing.T) {
	b, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	type prop struct {
		Type        string `json:"type"`
		Pattern     string `json:"pattern"`
		Description string `json:"description"`
		AnyOf       []struct {
			Type    string `json:"type"`
			Pattern string `json:"pattern"`
		} `json:"anyOf"`
	}
	var s struct {
		Defs map[string]struct {
			Properties map[string]prop `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	for def, fields := range map[string]map[string]string{
		"ClientFile": {"num_retries": "${MAX_RETRIES:-2}", "timeout": "${CLIENT_TIMEOUT:-90s}", "retry_after_hint": "${HINT}"},
		"ProxyFile":  {"num_retries": "${MAX_RETRIES}"},
		"ProxyStart": {"stop_grace": "${GRACE:-5s}"},
		"Ready":      {"timeout": "${READY_TIMEOUT:-3m}"},
	} {
		for field, ref := range fields {
			p := s.Defs[def].Properties[field]
			var typed, env bool
			for _, alt := range p.AnyOf {
				switch {
				case alt.Type == "integer" || alt.Pattern != "" && !regexp.MustCompile(alt.Pattern).MatchString(ref):
					typed = true
				case alt.Type == "string" && alt.Pattern != "" && regexp.MustCompile(alt.Pattern).MatchString(ref):
					env = true
				}
			}
			if !typed || !env || p.Description == "" {
				t.Errorf("%s.%s = %+v: want a description and anyOf its type and a string matching %s", def, field, p, ref)
			}
		}
	}
	if p := s.Defs["ClientFile"].Properties["dir"]; p.Type != "string" || len(p.AnyOf) > 0 {
		t.Errorf("ClientFile.dir = %+v: want a plain string", p)
	}
}
