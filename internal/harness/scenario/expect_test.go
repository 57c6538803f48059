package scenario

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestParseCounts checks that every count of expect, and of its targets
// blocks, takes a number or bounds.
func TestParseCounts(t *testing.T) {
	src := `name: bounds
request: {endpoint: chat}
expect:
  writes: {max: 1}
  keys: {at_most: 1}
  cancellations: {at_least: 0}
  upstream: {initial: {min: 1, max: 3}, follow_up: 2}
  mcp: {calls: {commit_write: {min: 1}}}
  data_chunks: {min: 1}
  error_events: {at_most: 1}
  targets:
    "builtin:*":
      status: 500
      upstream: {initial: 1}
      mcp: {calls: {max: 2}}
`
	ss, errs := Parse("b.yaml", []byte(src))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	e := ss[0].Expect
	got := map[string]string{
		"writes":        e.Writes.String(),
		"keys":          e.Keys.String(),
		"cancellations": e.Cancellations.String(),
		"initial":       e.Upstream[wire.CountKey{Kind: wire.KindInitial}].String(),
		"follow_up":     e.Upstream[wire.CountKey{Kind: wire.KindFollowUp}].String(),
		"mcp":           e.MCP.Calls.String(),
		"data_chunks":   e.DataChunks.String(),
		"error_events":  e.ErrorEvents.String(),
		"builtin":       e.Targets["builtin:*"].Upstream[wire.CountKey{Kind: wire.KindInitial}].String() + " " + e.Targets["builtin:*"].MCP.Calls.String(),
		"on builtin":    e.For("builtin:guarded").Upstream[wire.CountKey{Kind: wire.KindInitial}].String(),
	}
	want := map[string]string{
		"writes": "at most 1", "keys": "at most 1", "cancellations": "any number", "initial": "1–3", "follow_up": "2",
		"mcp": "commit_write at least 1", "data_chunks": "at least 1", "error_events": "at most 1",
		"builtin": "1 at most 2", "on builtin": "1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

// TestClientScenarioWithoutRequest checks that a client scenario needs no
// request (one run of the client) and no endpoint, and that others do.
func TestClientScenarioWithoutRequest(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		want    []Request
		wantErr string
	}{
		{"client, no request", "name: c\nexpect: {writes: 1, client: {}}\n", []Request{{Endpoint: Chat}}, ""},
		{"client, request without endpoint", "name: c\nrequest: {prompt: hi}\nexpect: {client: {exit: zero}}\n", []Request{{Endpoint: Chat, Prompt: "hi"}}, ""},
		{"client, two requests", "name: c\nrequests: [{}, {}]\nexpect: {client: {}}\n", []Request{{Endpoint: Chat}, {Endpoint: Chat}}, ""},
		{"not a client, no request", "name: c\nexpect: {writes: 1}\n", nil, `c.yaml:1:5: scenario "c" needs a request`},
		{"not a client, no endpoint", "name: c\nrequest: {prompt: hi}\nexpect: {writes: 1}\n", nil, "c.yaml:2:10: request needs an endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss, errs := Parse("c.yaml", []byte(tt.src))
			if tt.wantErr != "" {
				if len(errs) == 0 || !strings.HasPrefix(errs.Error(), tt.wantErr) {
					t.Fatalf("errors %v, want one starting %q", errs, tt.wantErr)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if ss[0].Expect.Client == nil {
				t.Fatal("expect.client is nil: the scenario would run on every target")
			}
			if diff := cmp.Diff(tt.want, ss[0].AllRequests()); diff != "" {
				t.Errorf("AllRequests (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClientWarnings checks the warnings about request fields a client
// target ignores: one per field, at its key, only in client scenarios.
func TestClientWarnings(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // file:line:col: warning: field
	}{
		{"not a client scenario", "name: p\nrequest: {endpoint: chat, stream: true}\nexpect: {writes: 1}\n", nil},
		{"client scenario without request", "name: c\nexpect: {client: {}}\n", nil},
		{"each ignored field", "name: c\nrequest:\n  endpoint: messages\n  stream: false\n  prompt: hi\n  model: m\n  body: {x: 1}\n  headers: {h: v}\nexpect: {client: {exit: zero}}\n", []string{
			"c.yaml:3:3: warning: request.endpoint is ignored on client targets",
			"c.yaml:4:3: warning: request.stream is ignored on client targets",
			"c.yaml:5:3: warning: request.prompt is ignored on client targets",
			"c.yaml:6:3: warning: request.model is ignored on client targets",
			"c.yaml:7:3: warning: request.body is ignored on client targets",
			"c.yaml:8:3: warning: request.headers is ignored on client targets",
		}},
		{"requests", "name: c\nrequests:\n  - {}\n  - {stream: true}\nexpect: {client: {}}\n", []string{
			"c.yaml:4:6: warning: requests[1].stream is ignored on client targets",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss, errs := Parse("c.yaml", []byte(tt.src))
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			var got []string
			for _, w := range ss[0].Warnings {
				if !w.Warning {
					t.Errorf("%v is not marked a warning", w)
				}
				msg, _, _ := strings.Cut(w.Error(), " on client targets")
				got = append(got, msg+" on client targets")
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestShippedClientScenariosFitAnyClient checks that no shipped client
// scenario asserts a detail of one client (its output, a request field it
// would ignore, an exact count of model calls).
func TestShippedClientScenariosFitAnyClient(t *testing.T) {
	ss, err := Load("../../../scenarios/clients")
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) == 0 {
		t.Fatal("no client scenarios")
	}
	for _, s := range ss {
		if s.Expect.Client == nil {
			t.Errorf("%s: no expect.client, so it would run on every target", s.Name)
			continue
		}
		if c := s.Expect.Client; c.StdoutContains != "" || c.StderrContains != "" {
			t.Errorf("%s: asserts one client's output (%+v)", s.Name, *c)
		}
		for _, w := range s.Warnings {
			t.Errorf("%s: %v", s.Name, w)
		}
		for k, c := range s.Expect.Upstream {
			if _, exact := c.Exact(); exact && k.Kind == wire.KindInitial {
				t.Errorf("%s: upstream %s is exactly %s; a real client sends initial requests of its own", s.Name, k, c)
			}
		}
		if len(s.Expect.Targets) > 0 {
			t.Errorf("%s: per-target counts in a client scenario", s.Name)
		}
	}
}
