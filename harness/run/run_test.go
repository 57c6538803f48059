package run

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/harness/history"
	"github.com/replaycheck/replaycheck/harness/rules"
	"github.com/replaycheck/replaycheck/harness/scenario"
)

// hangTarget answers nothing until the request gives up.
type hangTarget struct{ url string }

func (h hangTarget) Name() string { return "test:hang" }

func (h hangTarget) Start(context.Context, Fakes, *scenario.Gateway) (Instance, error) {
	return &hangInstance{s: &sender{base: h.url, client: &http.Client{}, body: seedBody}}, nil
}

type hangInstance struct{ s *sender }

func (i *hangInstance) Send(ctx context.Context, r Request) history.Exchange { return i.s.send(ctx, r) }
func (i *hangInstance) Limits() history.Setup                                { return history.Setup{NumRetries: -1} }
func (i *hangInstance) Close() error                                         { return nil }

func TestHangingTargetFailsOnlyItsScenario(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // so the server notices when the client gives up
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	ss, err := scenario.Load("../../scenarios/seed/no-fault-chat.yaml", "../../scenarios/seed/no-fault-responses.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hs, err := Run(ctx, ss, Options{Targets: []Target{hangTarget{srv.URL}}, Timeout: 50 * time.Millisecond, Parallel: 2})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(hs) != 2 {
		t.Fatalf("got %d histories, want 2 (the suite goes on)", len(hs))
	}
	for _, h := range hs {
		if !strings.Contains(h.Error, "within the scenario's 50ms deadline") || !h.Requests[0].TimedOut {
			t.Errorf("%s: error %q, exchange %+v", h.Scenario, h.Error, h.Requests[0])
		}
		vs := rules.Check(h)
		if vs[0].Check != "completed" || vs[0].Status != rules.Fail || rules.Overall(vs) != rules.Fail {
			t.Errorf("%s: verdicts %+v", h.Scenario, vs)
		}
	}
}

func TestSelect(t *testing.T) {
	var all []*scenario.Scenario
	for _, n := range []string{"d", "b", "a", "c", "e"} {
		tags := []string{"t-" + n}
		if n < "c" {
			tags = append(tags, "early")
		}
		all = append(all, &scenario.Scenario{Name: n, Tags: tags})
	}
	names := func(ss []*scenario.Scenario) string {
		var out []string
		for _, s := range ss {
			out = append(out, s.Name)
		}
		return strings.Join(out, ",")
	}
	tests := []struct {
		name string
		sel  Selection
		want string
	}{
		{"all", Selection{}, "d,b,a,c,e"},
		{"filter", Selection{Filter: regexp.MustCompile("^[a-c]$")}, "b,a,c"},
		{"tag", Selection{Tags: []string{"early"}}, "b,a"},
		{"tags any", Selection{Tags: []string{"t-e", "t-d"}}, "d,e"},
		{"shard 1/2", Selection{Shard: 1, Shards: 2}, "a,c,e"},
		{"shard 2/2", Selection{Shard: 2, Shards: 2}, "d,b"},
		{"shard after filter", Selection{Filter: regexp.MustCompile("[^a]"), Shard: 1, Shards: 2}, "d,b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := names(Select(all, tt.sel)); got != tt.want {
				t.Errorf("Select (-want +got):\n-%s\n+%s", tt.want, got)
			}
		})
	}
}

func TestReadStream(t *testing.T) {
	tests := []struct {
		name string
		body string
		want history.Exchange
	}{
		{"chat done", "data: {\"id\":\"a\",\"choices\":[]}\n\ndata: {\"id\":\"a\"}\n\ndata: [DONE]\n\n",
			history.Exchange{DataChunks: 2, Done: true, CleanEnd: true, ResponseIDs: []string{"a"}}},
		{"chat error after chunks", "data: {\"id\":\"a\"}\n\ndata: {\"id\":\"b\"}\n\ndata: {\"error\": {\"message\": \"cut\"}}\n\n",
			history.Exchange{DataChunks: 2, ErrorEvents: 1, CleanEnd: true, ResponseIDs: []string{"a", "b"}}},
		{"responses completed", "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r1\"}}\n\nevent: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r1\"}}\n\n",
			history.Exchange{DataChunks: 2, Done: true, CleanEnd: true, ResponseIDs: []string{"r1"}}},
		{"messages error event", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\"}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\"}}\n\n",
			history.Exchange{DataChunks: 1, ErrorEvents: 1, CleanEnd: true, ResponseIDs: []string{"m1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got history.Exchange
			readStream(strings.NewReader(tt.body), &got)
			got.Body = ""
			if got.DataChunks != tt.want.DataChunks || got.ErrorEvents != tt.want.ErrorEvents || got.Done != tt.want.Done ||
				got.CleanEnd != tt.want.CleanEnd || strings.Join(got.ResponseIDs, ",") != strings.Join(tt.want.ResponseIDs, ",") {
				t.Errorf("(-want +got):\n-%+v\n+%+v", tt.want, got)
			}
		})
	}
}

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"builtin:guarded", "builtin:guarded", false},
		{"builtin:", "builtin:guarded", false},
		{"builtin:naive", "builtin:naive", false},
		{"builtin:stream-splice,fresh-key-per-attempt", "builtin:stream-splice,fresh-key-per-attempt", false},
		{"builtin:no-such-bug", "", true},
		{"proxy:http://x", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTarget(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && got.Name() != tt.want {
				t.Errorf("Name = %q, want %q", got.Name(), tt.want)
			}
		})
	}
}
