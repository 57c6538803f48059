package upstream

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// A truncated body reaches each official SDK as an error, never a parsed
// answer, and is recorded truncated_body with status 200.
func TestTruncateFault(t *testing.T) {
	tests := []struct {
		name string
		path string
		call func(t *testing.T, ctx context.Context, url, tok string) error
	}{
		{"chat", "/v1/chat/completions", func(_ *testing.T, ctx context.Context, url, tok string) error {
			_, err := openaiClient(url).Chat.Completions.New(ctx, chatParams(tok, "commit_write"))
			return err
		}},
		{"responses", "/v1/responses", func(_ *testing.T, ctx context.Context, url, tok string) error {
			_, err := openaiClient(url).Responses.New(ctx, responsesParams(tok, functionTool("commit_write")))
			return err
		}},
		{"messages", "/v1/messages", func(_ *testing.T, ctx context.Context, url, tok string) error {
			_, err := anthropicClient(url).Messages.New(ctx, messagesParams(tok, "commit_write"))
			return err
		}},
		{"gemini", geminiPath(false), func(t *testing.T, ctx context.Context, url, tok string) error {
			_, _, err := generate(ctx, geminiClient(t, url), geminiContents(tok), geminiConfig("commit_write"), false)
			return err
		}},
	}
	for _, tt := range tests {
		for _, f := range []string{"{truncate: {}}", "{truncate: {after_bytes: 10}}"} {
			t.Run(tt.name+"/"+f, func(t *testing.T) {
				s, srv, log := newFake(t, Config{})
				tok := token(t)
				if err := s.Arm(tok, nil, []Fault{mustFault(t, f)}); err != nil {
					t.Fatal(err)
				}
				err := tt.call(t, context.Background(), srv.URL, tok)
				if err == nil {
					t.Fatal("the SDK parsed a truncated body as an answer; want an error")
				}
				var oe *openai.Error
				var ae *anthropic.Error
				if errors.As(err, &oe) || errors.As(err, &ae) {
					t.Errorf("err = %v, want a broken body, not an API error", err)
				}
				diff(t, "log", tt.path+" initial "+string(wire.OutcomeTruncatedBody)+"\n", log.String())
				diff(t, "status", http.StatusOK, s.Requests(tok)[0].Status)
				diff(t, "fired", 1, s.FaultReports(tok)[0].Fired)
			})
		}
	}
}

// The client gets the whole body's Content-Length, the bytes before the cut
// and then the end of the connection.
func TestTruncateWire(t *testing.T) {
	s, srv, _ := newFake(t, Config{})
	tok := token(t)
	if err := s.Arm(tok, nil, []Fault{mustFault(t, "{truncate: {after_bytes: 7}}")}); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"model":"m","messages":[{"role":"user","content":"` + prompt(tok) + `"}]}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	diff(t, "status", http.StatusOK, resp.StatusCode)
	diff(t, "read error", io.ErrUnexpectedEOF, err)
	diff(t, "bytes read", 7, len(got))
	if n, _ := strconv.Atoi(resp.Header.Get("Content-Length")); n <= 7 {
		t.Errorf("Content-Length %d, want the whole body's, over the 7 bytes sent", n)
	}
}

// A cut past the body's end sends it whole (the fault does not fire), and a
// streamed request is not matched.
func TestTruncateDoesNotFire(t *testing.T) {
	t.Run("past the end", func(t *testing.T) {
		s, srv, log := newFake(t, Config{})
		tok := token(t)
		if err := s.Arm(tok, nil, []Fault{mustFault(t, "{truncate: {after_bytes: 1000000}}")}); err != nil {
			t.Fatal(err)
		}
		if _, err := openaiClient(srv.URL).Chat.Completions.New(context.Background(), chatParams(tok, "commit_write")); err != nil {
			t.Fatal(err)
		}
		diff(t, "log", "/v1/chat/completions initial forwarded\n", log.String())
		diff(t, "report", []wire.FaultReport{{Side: wire.FaultUpstream, Index: 1, ID: 1, Fault: fault.FaultJSON(mustFault(t, "{truncate: {after_bytes: 1000000}}")), Matched: 1,
			Runs: []wire.FaultRunCounts{{Run: tok, Matched: 1}}}}, s.FaultReports(tok))
	})
	t.Run("stream", func(t *testing.T) {
		s, srv, log := newFake(t, Config{})
		tok := token(t)
		if err := s.Arm(tok, nil, []Fault{mustFault(t, "{truncate: {}}")}); err != nil {
			t.Fatal(err)
		}
		if got := streamChat(context.Background(), srv.URL, tok); got.err != nil || !got.complete {
			t.Fatalf("stream: err %v, complete %v; want a whole answer", got.err, got.complete)
		}
		diff(t, "log", "/v1/chat/completions initial forwarded\n", log.String())
		diff(t, "matched", 0, s.FaultReports(tok)[0].Matched)
	})
}

func TestTruncateValidation(t *testing.T) {
	tests := []struct {
		fault   string
		want    string
		wantErr string
	}{
		{"{truncate: {}}", "any truncate always", ""},
		{"{on: follow_up, delay: 1s, truncate: {after_bytes: 5}, times: once}", "follow_up delay 1s truncate after 5 bytes once", ""},
		{"{stream: false, truncate: {}}", "any stream=false truncate always", ""},
		{"{stream: true, truncate: {}}", "", "truncate: stream: truncate applies only to non-streamed requests; remove stream: true"},
		{"{truncate: {after_bytes: -1}}", "", "truncate: after_bytes: -1 must not be negative"},
		{"{truncate: {}, respond: {status: 500}}", "", "action: respond and truncate are exclusive; a fault has one action"},
		{"{truncate: {}, dribble: 1ms}", "", "dribble: paces a stream; it does not combine with truncate"},
		{"{truncate: {bytes: 3}}", "", "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			f, err := ParseFault(tt.fault)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			diff(t, "String", tt.want, f.String())
		})
	}
}
