package upstream

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
)

// chatRound sends an initial chat request and its follow-up, as a gateway
// running the tool would; it returns the follow-up's error.
func chatRound(t *testing.T, url, tok string, stream bool) error {
	t.Helper()
	client := openaiClient(url)
	params := chatParams(tok, "commit_write")
	resp, err := client.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatalf("initial: %v", err)
	}
	m := resp.Choices[0].Message
	params.Messages = append(params.Messages, m.ToParam(), openai.ToolMessage("recorded", m.ToolCalls[0].ID))
	if stream {
		s := client.Chat.Completions.NewStreaming(context.Background(), params)
		for s.Next() {
		}
		return s.Err()
	}
	_, err = client.Chat.Completions.New(context.Background(), params)
	return err
}

// The flag files act exactly as in the seed's forwarder.py.
func TestFlagsDir(t *testing.T) {
	tests := []struct {
		name      string
		flags     []string
		rounds    int
		stream    bool
		wantLog   string
		wantLeft  []string // flag files left afterwards
		wantError []bool   // per round: follow-up failed
	}{
		{"fault_on", []string{FlagFaultOn}, 2, false,
			"/v1/chat/completions initial forwarded\n/v1/chat/completions follow_up injected_500\n" +
				"/v1/chat/completions initial forwarded\n/v1/chat/completions follow_up injected_500\n",
			[]string{FlagFaultOn}, []bool{true, true}},
		{"fault_once", []string{FlagFaultOnce}, 2, false,
			"/v1/chat/completions initial forwarded\n/v1/chat/completions follow_up injected_500\n" +
				"/v1/chat/completions initial forwarded\n/v1/chat/completions follow_up forwarded\n",
			nil, []bool{true, false}},
		{"fault_on consumes fault_once", []string{FlagFaultOn, FlagFaultOnce}, 1, false,
			"/v1/chat/completions initial forwarded\n/v1/chat/completions follow_up injected_500\n",
			[]string{FlagFaultOn}, []bool{true}},
		{"drop_stream", []string{FlagDropStream}, 1, true,
			"/v1/chat/completions initial forwarded\n/v1/chat/completions follow_up dropped_stream\n",
			[]string{FlagDropStream}, []bool{true}},
		{"drop_stream ignores plain", []string{FlagDropStream}, 1, false,
			"/v1/chat/completions initial forwarded\n/v1/chat/completions follow_up forwarded\n",
			[]string{FlagDropStream}, []bool{false}},
		{"no flags", nil, 1, true,
			"/v1/chat/completions initial forwarded\n/v1/chat/completions follow_up forwarded\n",
			nil, []bool{false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tt.flags {
				if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, srv, log := newFake(t, Config{FlagsDir: dir})
			tok := token(t)
			var gotErr []bool
			for range tt.rounds {
				err := chatRound(t, srv.URL, tok, tt.stream)
				gotErr = append(gotErr, err != nil)
				var oe *openai.Error
				if errors.As(err, &oe) {
					diff(t, "message", "injected follow-up failure", oe.Message)
					diff(t, "status", 500, oe.StatusCode)
				}
			}
			diff(t, "follow-up failed", tt.wantError, gotErr)
			diff(t, "log", tt.wantLog, log.String())
			var left []string
			for _, f := range []string{FlagFaultOn, FlagFaultOnce, FlagDropStream} {
				if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
					left = append(left, f)
				}
			}
			diff(t, "flags left", tt.wantLeft, left)
		})
	}
}

// The 500 body is the seed's exactly.
func TestFlagsDirBody(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FlagFaultOn), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, srv, _ := newFake(t, Config{FlagsDir: dir})
	status, body, _ := post(t, srv.URL+"/v1/chat/completions", `{"messages":[{"role":"tool","content":"ok","tool_call_id":"x"}]}`)
	diff(t, "status", 500, status)
	diff(t, "body", `{"error":{"message":"injected follow-up failure","type":"server_error","param":null,"code":null}}`, body)
}

// Of concurrent follow-ups, exactly one takes fault_once.
func TestFlagFaultOnceConcurrent(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FlagFaultOnce), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, srv, _ := newFake(t, Config{FlagsDir: dir})
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			post(t, srv.URL+"/v1/responses", `{"input":[{"type":"function_call_output","call_id":"c","output":"ok"}]}`)
		})
	}
	wg.Wait()
	diff(t, "outcomes", countsOf(map[string]int{"follow_up injected_500": 1, "follow_up forwarded": 31}), s.Total().Outcomes)
}
