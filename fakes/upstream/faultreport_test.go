package upstream

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// reportCounts is a FaultReport without its fault, for diffs.
type reportCounts struct{ Matched, Fired int }

func reportsOf(rs []wire.FaultReport) []reportCounts {
	var out []reportCounts
	for _, r := range rs {
		out = append(out, reportCounts{r.Matched, r.Fired})
	}
	return out
}

// Each armed fault says how many requests it matched and how many it acted
// on; a fault picked whose action then acted on nothing has not fired.
func TestFaultReports(t *testing.T) {
	ctx := context.Background()
	plain := func(t *testing.T, url, tok string) {
		if _, err := openaiClient(url).Chat.Completions.New(ctx, chatParams(tok, "commit_write")); err != nil {
			t.Fatal(err)
		}
	}
	apiError := func(t *testing.T, url, tok string) {
		if _, err := openaiClient(url).Chat.Completions.New(ctx, chatParams(tok, "commit_write")); err == nil {
			t.Fatal("no error")
		}
	}
	streamed := func(t *testing.T, url, tok string) { streamChat(ctx, url, tok) }
	ambiguous := func(t *testing.T, url, tok string) {
		if err := ambiguousChat(ctx, url, tok, true); err == nil {
			t.Fatal("no error")
		}
	}
	tests := []struct {
		name     string
		faults   []string
		requests []func(t *testing.T, url, tok string)
		want     []reportCounts
	}{
		{"respond once", []string{"{respond: {status: 500}, times: once}"},
			[]func(*testing.T, string, string){apiError, plain, plain}, []reportCounts{{3, 1}}},
		{"never matched", []string{"{on: follow_up, respond: {status: 500}}"},
			[]func(*testing.T, string, string){plain}, []reportCounts{{0, 0}}},
		{"drop on a plain request never matches", []string{"{drop: {after: tool_call}}"},
			[]func(*testing.T, string, string){plain, plain}, []reportCounts{{0, 0}}},
		{"drop cuts", []string{"{drop: {after: tool_call}}"},
			[]func(*testing.T, string, string){streamed}, []reportCounts{{1, 1}}},
		{"drop after headers", []string{"{drop: {after: headers}, times: {nth: 2}}"},
			[]func(*testing.T, string, string){streamed, streamed, streamed}, []reportCounts{{3, 1}}},
		{"drop past the last event", []string{"{drop: {after: events, events: 100}}"},
			[]func(*testing.T, string, string){streamed}, []reportCounts{{1, 0}}},
		{"drop on a refused request", []string{"{drop: {after: tool_call}}"},
			[]func(*testing.T, string, string){ambiguous}, []reportCounts{{1, 0}}},
		{"delay alone", []string{"{delay: 1ms}"},
			[]func(*testing.T, string, string){plain}, []reportCounts{{1, 1}}},
		{"delay then respond", []string{"{delay: 1ms, respond: {status: 503}}"},
			[]func(*testing.T, string, string){apiError}, []reportCounts{{1, 1}}},
		{"later fault counts what the first lets through", []string{"{respond: {status: 500}, times: 1}", "{respond: {status: 502}, times: 1}"},
			[]func(*testing.T, string, string){apiError, apiError, plain}, []reportCounts{{3, 1}, {2, 1}}},
		{"reset", []string{"{reset: true}"},
			[]func(*testing.T, string, string){apiError}, []reportCounts{{1, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, srv, _ := newFake(t, Config{})
			tok := token(t)
			var faults []Fault
			for _, f := range tt.faults {
				faults = append(faults, mustFault(t, f))
			}
			if err := s.Arm(tok, nil, faults); err != nil {
				t.Fatal(err)
			}
			for _, req := range tt.requests {
				req(t, srv.URL, tok)
			}
			got := s.FaultReports(tok)
			diff(t, "reports", tt.want, reportsOf(got))
			for i, r := range got {
				diff(t, "fault", string(fault.FaultJSON(faults[i])), string(r.Fault))
			}
		})
	}
}

// A delay that the client gives up on before the respond it precedes has
// not fired: the respond never reached the client.
func TestFaultReportDelayCutShort(t *testing.T) {
	outcomes := make(chan string, 1)
	s, srv, _ := newFake(t, Config{Logger: slog.New(waitHandler{outcomes})})
	tok := token(t)
	if err := s.Arm(tok, nil, []Fault{mustFault(t, "{delay: 10m, respond: {status: 500}}")}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.delayHook = cancel // the client leaves as the delay starts
	if _, err := openaiClient(srv.URL).Chat.Completions.New(ctx, chatParams(tok, "commit_write")); err == nil {
		t.Fatal("no error")
	}
	diff(t, "outcome", string(wire.OutcomeClientGone), <-outcomes) // logged after the count
	diff(t, "reports", []reportCounts{{1, 0}}, reportsOf(s.FaultReports(tok)))
}

// Fault reports are exact under concurrent requests, per run and for the
// global faults (token ""); an unknown token has none.
func TestFaultReportsConcurrent(t *testing.T) {
	s, srv, _ := newFake(t, Config{})
	armed, other := token(t, "armed"), token(t, "other")
	if err := s.Arm(armed, nil, []Fault{
		mustFault(t, "{on: initial, respond: {status: 500}, times: 5}"),
		mustFault(t, "{on: initial, respond: {status: 502}, times: {nth: 7}}"),
		mustFault(t, "{on: follow_up, respond: {status: 503}}"),
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Arm("", nil, []Fault{mustFault(t, "{stream: false, respond: {status: 429}, times: 3}")}); err != nil {
		t.Fatal(err)
	}
	const n = 50
	var wg sync.WaitGroup
	for _, tok := range []string{armed, other} {
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				status, _, _ := post(t, srv.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"`+prompt(tok)+`"}]}`)
				if status != http.StatusOK && status != 500 && status != 502 && status != 429 {
					t.Errorf("status %d", status)
				}
			}()
		}
	}
	wg.Wait()
	// armed: 5 fire on the first fault; of the 45 it lets through, the 7th
	// fires on the second; 44 reach the global list, whose first 3 fire.
	diff(t, "armed", []reportCounts{{n, 5}, {n - 5, 1}, {0, 0}}, reportsOf(s.FaultReports(armed)))
	diff(t, "global", []reportCounts{{n - 6 + n, 3}}, reportsOf(s.FaultReports("")))
	diff(t, "other", []reportCounts(nil), reportsOf(s.FaultReports(other)))
	diff(t, "unknown", []wire.FaultReport(nil), s.FaultReports(token(t, "unknown")))
	diff(t, "armed first two", [2]int{5, 1}, [2]int{countOutcome(s, armed, "initial injected_500"), countOutcome(s, armed, "initial injected_502")})
	diff(t, "429s", 3, countOutcome(s, armed, "initial injected_429")+countOutcome(s, other, "initial injected_429"))
}

func countOutcome(s *Server, tok, key string) int { return s.Counts(tok).Outcomes[countKey(key)] }
