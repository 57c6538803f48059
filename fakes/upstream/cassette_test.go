package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/jarcoal/httpmock"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/replaycheck/replaycheck/fakes/upstream/cassette"
	"github.com/replaycheck/replaycheck/internal/syncbuf"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// Secrets a recorded session's requests carry; none may reach a cassette.
const (
	sessionKey    = "sk-session-secret-0123456789abcdef"
	sessionCookie = "cookie-secret-4242"
	sessionQuery  = "query-secret-7777"
)

// wrongKeyModel is a model the mocked provider refuses with a 401 that
// echoes the caller's key, as OpenAI's does (masked) for a bad key.
const wrongKeyModel = "gpt-wrong-key"

// sessionProvider mocks a provider for all three dialects: it answers as
// the scripted fake would, and a chat request for wrongKeyModel with a 401
// whose body and headers carry the key.
func sessionProvider(t *testing.T) *httpmock.MockTransport {
	mt := httpmock.NewMockTransport()
	stubProvider(t, mt, "/v1/responses", "Authorization", "Bearer "+sessionKey)
	stubProvider(t, mt, "/v1/messages", "X-Api-Key", sessionKey)
	mt.RegisterResponder("POST", provider+"/v1/chat/completions", func(req *http.Request) (*http.Response, error) {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		if bytes.Contains(b, []byte(wrongKeyModel)) {
			resp := httpmock.NewStringResponse(http.StatusUnauthorized,
				`{"error":{"message":"Incorrect API key provided: `+sessionKey+` (sk-sess****cdef).","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
			resp.Header.Set("Content-Type", "application/json")
			resp.Header.Set("Set-Cookie", "sid="+sessionCookie)
			resp.Header.Set("X-Echo", sessionKey)
			return resp, nil
		}
		out, ct := providerAnswer(t, "/v1/chat/completions", string(b))
		resp := httpmock.NewStringResponse(http.StatusOK, out)
		resp.Header.Set("Content-Type", ct)
		resp.Header.Set("X-Request-Id", "req_provider")
		resp.Header.Set("Retry-After", "1")
		return resp, nil
	})
	return mt
}

// runSession drives one session through the official SDKs against url:
// for each dialect, plain and streamed, an initial request answered with a
// tool call and the follow-up carrying its result; and one chat request
// with a key the provider refuses. It returns what the clients saw, one
// line per request.
func runSession(t *testing.T, url, tok string) []string {
	t.Helper()
	ctx := context.Background()
	oc := openai.NewClient(append(openaiOpts(url, sessionKey),
		option.WithQuery("key", sessionQuery), option.WithHeader("Cookie", "session="+sessionCookie))...)
	ac := anthropic.NewClient(append(anthropicOpts(url, sessionKey), anthropicHeader("x-api-key", sessionKey), anthropicHeader("Cookie", "session="+sessionCookie))...)
	var seen []string
	for _, stream := range []bool{false, true} {
		// Chat Completions.
		p := chatParams(tok, "commit_write")
		// chat sends p, plain or streamed, and returns the answer's message.
		chat := func(what string) openai.ChatCompletionMessage {
			if !stream {
				r, err := oc.Chat.Completions.New(ctx, p)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				return r.Choices[0].Message
			}
			s := oc.Chat.Completions.NewStreaming(ctx, p)
			var acc openai.ChatCompletionAccumulator
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			if err := s.Err(); err != nil {
				t.Fatalf("%s stream: %v", what, err)
			}
			return acc.Choices[0].Message
		}
		msg := chat("chat")
		if len(msg.ToolCalls) != 1 {
			t.Fatalf("chat: want one tool call, got %+v", msg)
		}
		call := msg.ToolCalls[0]
		seen = append(seen, fmt.Sprintf("chat stream=%t: call %s %s %s", stream, call.ID, call.Function.Name, call.Function.Arguments))
		p.Messages = append(p.Messages, msg.ToParam(), openai.ToolMessage("written", call.ID))
		msg = chat("chat follow-up")
		seen = append(seen, fmt.Sprintf("chat stream=%t: say %q", stream, msg.Content))

		// Responses.
		rp := responsesParams(tok, functionTool("commit_write"))
		var resp *responses.Response
		if stream {
			s := oc.Responses.NewStreaming(ctx, rp)
			for s.Next() {
				if ev := s.Current(); ev.Type == "response.completed" {
					r := ev.Response
					resp = &r
				}
			}
			if err := s.Err(); err != nil || resp == nil {
				t.Fatalf("responses stream: %v (completed %t)", err, resp != nil)
			}
		} else {
			var err error
			if resp, err = oc.Responses.New(ctx, rp); err != nil {
				t.Fatalf("responses: %v", err)
			}
		}
		fc := resp.Output[0].AsFunctionCall()
		seen = append(seen, fmt.Sprintf("responses stream=%t: call %s %s %s", stream, fc.CallID, fc.Name, fc.Arguments))
		fp := followUpParams(resp.ID, fc.CallID, "written", []responses.ToolUnionParam{functionTool("commit_write")})
		if stream {
			s := oc.Responses.NewStreaming(ctx, fp)
			resp = nil
			for s.Next() {
				if ev := s.Current(); ev.Type == "response.completed" {
					r := ev.Response
					resp = &r
				}
			}
			if err := s.Err(); err != nil || resp == nil {
				t.Fatalf("responses follow-up stream: %v", err)
			}
		} else {
			var err error
			if resp, err = oc.Responses.New(ctx, fp); err != nil {
				t.Fatalf("responses follow-up: %v", err)
			}
		}
		seen = append(seen, fmt.Sprintf("responses stream=%t: say %q", stream, resp.OutputText()))

		// Messages.
		mp := messagesParams(tok, "commit_write")
		m, _ := sendMessage(t, ctx, &ac, mp, stream)
		tu := m.Content[0].AsToolUse()
		seen = append(seen, fmt.Sprintf("messages stream=%t: call %s %s %s", stream, tu.ID, tu.Name, tu.Input))
		mp.Messages = append(mp.Messages, m.ToParam(),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock(tu.ID, "written", false)))
		m, _ = sendMessage(t, ctx, &ac, mp, stream)
		seen = append(seen, fmt.Sprintf("messages stream=%t: say %q", stream, m.Content[0].AsText().Text))
	}
	bad := chatParams(tok, "commit_write")
	bad.Model = wrongKeyModel
	_, err := oc.Chat.Completions.New(ctx, bad)
	var oe *openai.Error
	if !errors.As(err, &oe) {
		t.Fatalf("chat with a refused key: err = %v, want the provider's 401", err)
	}
	seen = append(seen, fmt.Sprintf("chat refused: %d %s", oe.StatusCode, oe.Message))
	return seen
}

// recordSession records runSession through a relay to the mocked provider
// into dir and returns the cassette file, what the clients saw and the
// relay's records.
func recordSession(t *testing.T, dir, tok string) (string, []string, []wire.UpstreamRequest) {
	t.Helper()
	mt := sessionProvider(t)
	rec, err := cassette.Create(filepath.Join(dir, "session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	s, srv, _ := newFake(t, Config{Relay: provider, Client: &http.Client{Transport: mt}, Record: rec})
	seen := runSession(t, srv.URL, tok)
	srv.Close()
	if err := rec.Close(); err != nil {
		t.Fatalf("closing the cassette: %v", err)
	}
	checkStubs(t, mt, map[string]int{
		"POST " + provider + "/v1/chat/completions": 5,
		"POST " + provider + "/v1/responses":        4,
		"POST " + provider + "/v1/messages":         4,
	})
	return rec.Path(), seen, s.Requests(tok)
}

// A session recorded through the relay from a provider replays offline:
// the SDK clients see the same answers, plain and streamed, in all three
// dialects, with the provider gone; no secret the requests carried, and no
// key the provider echoed, is in the cassette's bytes.
func TestRecordReplay(t *testing.T) {
	tok := token(t)
	file, recorded, recs := recordSession(t, t.TempDir(), tok)
	want := []string{
		"chat stream=false: call call_" + tok + "_1_0 commit_write {\"entry\":\"alpha-" + tok + "\"}",
		"chat stream=false: say \"done\"",
		"responses stream=false: call call_" + tok + "_1_0 commit_write {\"entry\":\"alpha-" + tok + "\"}",
		"responses stream=false: say \"done\"",
		"messages stream=false: call toolu_" + tok + "_1_0 commit_write {\"entry\":\"alpha-" + tok + "\"}",
		"messages stream=false: say \"done\"",
		"chat stream=true: call call_" + tok + "_1_0 commit_write {\"entry\":\"alpha-" + tok + "\"}",
		"chat stream=true: say \"done\"",
		"responses stream=true: call call_" + tok + "_1_0 commit_write {\"entry\":\"alpha-" + tok + "\"}",
		"responses stream=true: say \"done\"",
		"messages stream=true: call toolu_" + tok + "_1_0 commit_write {\"entry\":\"alpha-" + tok + "\"}",
		"messages stream=true: say \"done\"",
		"chat refused: 401 Incorrect API key provided: [REDACTED] ([REDACTED]).",
	}
	// The relayed session saw the provider's own 401, key and all.
	want[len(want)-1] = "chat refused: 401 Incorrect API key provided: " + sessionKey + " (sk-sess****cdef)."
	diff(t, "relayed session", want, recorded)
	for i, r := range recs {
		if r.Recorded != fmt.Sprintf("%s:%d", file, i+1) {
			t.Errorf("record %d: Recorded = %q, want %s:%d", i, r.Recorded, file, i+1)
		}
	}

	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "cassette lines", 13, bytes.Count(raw, []byte("\n")))
	for _, secret := range []string{sessionKey, sessionCookie, sessionQuery, "sk-sess****cdef", "Set-Cookie", "X-Echo"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the cassette holds %q", secret)
		}
	}

	player, err := cassette.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	s, srv, log := newFake(t, Config{Cassette: player}) // no relay, no provider: offline
	replayed := runSession(t, srv.URL, tok)
	want[len(want)-1] = "chat refused: 401 Incorrect API key provided: [REDACTED] ([REDACTED])."
	diff(t, "replayed session", want, replayed)
	diff(t, "replay log lines", 13, strings.Count(log.String(), " forwarded\n"))
	for i, r := range s.Requests(tok) {
		if r.Replayed != fmt.Sprintf("%s:%d", file, i+1) {
			t.Errorf("request %d: Replayed = %q, want %s:%d", i, r.Replayed, file, i+1)
		}
	}
	stream := s.Requests(tok)[7] // chat stream=true follow-up
	if stream.Events == 0 || stream.ContentEvents == 0 || !stream.Stream {
		t.Errorf("replayed stream record %+v: want its events counted", stream)
	}
}

// recordedStreams records one streamed initial request of each dialect
// (the scripted answer, relayed) and returns the cassette's player and the
// request bodies.
func recordedStreams(t *testing.T, tok string) (*cassette.Player, map[string]string) {
	t.Helper()
	bodies := map[string]string{
		"/v1/chat/completions": `{"model":"m","stream":true,"messages":[{"role":"user","content":"` + prompt(tok) + `"}],"tools":[{"type":"function","function":{"name":"commit_write","parameters":{}}}]}`,
		"/v1/responses":        `{"model":"m","stream":true,"input":"` + prompt(tok) + `","tools":[{"type":"function","name":"commit_write","parameters":{}}]}`,
		"/v1/messages":         `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"` + prompt(tok) + `"}],"tools":[{"name":"commit_write","input_schema":{"type":"object"}}]}`,
	}
	mt := httpmock.NewMockTransport()
	for path := range bodies {
		stubProvider(t, mt, path, "Content-Type", "application/json")
	}
	rec, err := cassette.Create(filepath.Join(t.TempDir(), "streams.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	_, srv, _ := newFake(t, Config{Relay: provider, Client: &http.Client{Transport: mt}, Record: rec})
	for path, body := range bodies {
		if status, _, _ := post(t, srv.URL+path, body); status != http.StatusOK {
			t.Fatalf("recording %s: status %d", path, status)
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	player, err := cassette.Open(rec.Path())
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "entries", 3, player.Len())
	return player, bodies
}

// cutStream posts body and returns the bytes received before the stream
// ended and whether it ended in a break.
func cutStream(t *testing.T, url, body string) (string, bool) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err != nil
}

// A drop cuts a replayed stream exactly where it cuts the scripted one: the
// client receives the same bytes, then the same break, in every dialect.
func TestReplayedStreamDrops(t *testing.T) {
	tok := token(t)
	player, bodies := recordedStreams(t, tok)
	tests := []struct {
		name, fault string
		wantCut     bool
	}{
		{"after tool_call", "{drop: {after: tool_call}}", true},
		{"after 2 events", "{drop: {after: events, events: 2}}", true},
		{"after headers", "{drop: {after: headers}}", true},
		{"past the end", "{drop: {after: events, events: 99}}", false},
	}
	for _, tt := range tests {
		for path, body := range bodies {
			t.Run(tt.name+path, func(t *testing.T) {
				scripted, ssrv, _ := newFake(t, Config{})
				replay, rsrv, log := newFake(t, Config{Cassette: player})
				for _, s := range []*Server{scripted, replay} {
					if err := s.Arm("", nil, []Fault{mustFault(t, tt.fault)}); err != nil {
						t.Fatal(err)
					}
				}
				want, wantBroke := cutStream(t, ssrv.URL+path, body)
				got, broke := cutStream(t, rsrv.URL+path, body)
				diff(t, "bytes before the cut", want, got)
				diff(t, "broken", tt.wantCut, wantBroke)
				diff(t, "replay broken", tt.wantCut, broke)
				outcome := "forwarded"
				if tt.wantCut {
					outcome = "dropped_stream"
				}
				diff(t, "log", path+" initial "+outcome+"\n", log.String())
				diff(t, "fired", scripted.FaultReports("")[0].Fired, replay.FaultReports("")[0].Fired)
			})
		}
	}
}

// recordWith records what send sends through a relay to a provider that
// answers chat and messages requests as the scripted fake, and returns the
// cassette's player.
func recordWith(t *testing.T, send func(url string)) *cassette.Player {
	t.Helper()
	mt := httpmock.NewMockTransport()
	stubProvider(t, mt, "/v1/chat/completions", "Authorization", "Bearer sk")
	stubProvider(t, mt, "/v1/messages", "X-Api-Key", "sk")
	rec, err := cassette.Create(filepath.Join(t.TempDir(), "sdk.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	_, srv, _ := newFake(t, Config{Relay: provider, Client: &http.Client{Transport: mt}, Record: rec})
	send(srv.URL)
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	player, err := cassette.Open(rec.Path())
	if err != nil {
		t.Fatal(err)
	}
	return player
}

// Through the SDKs: a replayed tool-call stream cut after the tool call
// hands the client the whole call and then an error, never a clean end.
func TestReplayedStreamDropSDK(t *testing.T) {
	tok := token(t)
	ctx := context.Background()
	chatStream := func(url string) (openai.ChatCompletionAccumulator, error) {
		oc := openai.NewClient(openaiOpts(url, "sk")...)
		stream := oc.Chat.Completions.NewStreaming(ctx, chatParams(tok, "commit_write"))
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		return acc, stream.Err()
	}
	messagesStream := func(url string) (anthropic.Message, error) {
		ac := anthropic.NewClient(append(anthropicOpts(url, "sk"), anthropicHeader("x-api-key", "sk"))...)
		events := ac.Messages.NewStreaming(ctx, messagesParams(tok, "commit_write"))
		var m anthropic.Message
		for events.Next() {
			if err := m.Accumulate(events.Current()); err != nil {
				return m, err
			}
		}
		return m, events.Err()
	}
	player := recordWith(t, func(url string) {
		if _, err := chatStream(url); err != nil {
			t.Fatalf("recording chat: %v", err)
		}
		if _, err := messagesStream(url); err != nil {
			t.Fatalf("recording messages: %v", err)
		}
	})
	s, srv, log := newFake(t, Config{Cassette: player})
	if err := s.Arm("", nil, []Fault{mustFault(t, "{drop: {after: tool_call}}")}); err != nil {
		t.Fatal(err)
	}
	acc, err := chatStream(srv.URL)
	if err == nil {
		t.Errorf("chat: the replayed stream ended cleanly; want the cut")
	}
	diff(t, "chat arguments before the cut", `{"entry":"alpha-`+tok+`"}`, acc.Choices[0].Message.ToolCalls[0].Function.Arguments)
	m, err := messagesStream(srv.URL)
	if err == nil {
		t.Errorf("messages: the replayed stream ended cleanly; want the cut")
	}
	diff(t, "messages input before the cut", `{"entry":"alpha-`+tok+`"}`, string(m.Content[0].AsToolUse().Input))
	diff(t, "log", "/v1/chat/completions initial dropped_stream\n/v1/messages initial dropped_stream\n", log.String())
	diff(t, "fired", 2, s.FaultReports("")[0].Fired)
}

// A request no entry matches is a 404 in the dialect's shape naming the
// closest entry and what differs, recorded cassette_miss.
func TestReplayMiss(t *testing.T) {
	tok := token(t)
	player, bodies := recordedStreams(t, tok)
	_, srv, log := newFake(t, Config{Cassette: player})
	tests := []struct {
		name, path, body string
		want             []string
	}{
		{"other prompt", "/v1/chat/completions", strings.Replace(bodies["/v1/chat/completions"], "exactly once", "twice", 1),
			[]string{"streams.jsonl:", "messages: item 1 of 1 (user) differs"}},
		{"other model", "/v1/messages", strings.Replace(bodies["/v1/messages"], `"model":"m"`, `"model":"claude-x"`, 1),
			[]string{"streams.jsonl:", `model: \"claude-x\", recorded \"m\"`}},
		{"not streamed", "/v1/responses", strings.Replace(bodies["/v1/responses"], `"stream":true`, `"stream":false`, 1),
			[]string{"stream: false, recorded true"}},
		{"other tools", "/v1/chat/completions", strings.Replace(bodies["/v1/chat/completions"], `"name":"commit_write"`, `"name":"read_ledger"`, 1),
			[]string{"tools: [read_ledger], recorded [commit_write]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, _ := post(t, srv.URL+tt.path, tt.body)
			diff(t, "status", http.StatusNotFound, status)
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("body %s does not name %q", body, w)
				}
			}
		})
	}
	diff(t, "misses logged", 4, strings.Count(log.String(), " cassette_miss\n"))

	// Through the SDK, in Anthropic's error shape.
	ac := anthropic.NewClient(anthropicOpts(srv.URL, "sk")...)
	_, err := ac.Messages.New(context.Background(), messagesParams(tok, "commit_write"))
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusNotFound || !strings.Contains(ae.Error(), "closest is") {
		t.Fatalf("err = %v, want a 404 naming the closest entry", err)
	}
}

// With miss: relay, a request no entry matches is relayed and recorded,
// and the same request again is answered from the new entry without the
// provider.
func TestReplayMissRelay(t *testing.T) {
	mt := httpmock.NewMockTransport()
	stubProvider(t, mt, "/v1/chat/completions", "Authorization", "Bearer sk")
	dir := t.TempDir()
	rec, err := cassette.Create(filepath.Join(dir, "more.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	player := cassette.NewPlayer(nil, nil)
	s, srv, log := newFake(t, Config{Cassette: player, Miss: MissRelay, Relay: provider, Client: &http.Client{Transport: mt}, Record: rec})
	tok := token(t)
	oc := openai.NewClient(openaiOpts(srv.URL, "sk")...)
	var ids []string
	for range 2 {
		r, err := oc.Chat.Completions.New(context.Background(), chatParams(tok, "commit_write"))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.Choices[0].Message.ToolCalls[0].ID)
	}
	diff(t, "same answer", ids[0], ids[1])
	checkStubs(t, mt, map[string]int{"POST " + provider + "/v1/chat/completions": 1})
	diff(t, "log", "/v1/chat/completions initial forwarded\n/v1/chat/completions initial forwarded\n", log.String())
	recs := s.Requests(tok)
	diff(t, "recorded, then replayed", []string{rec.Path() + ":1", rec.Path() + ":1"}, []string{recs[0].Recorded, recs[1].Replayed})
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
}

// With replay timing, a replayed stream waits for its headers and between
// its events as recorded.
func TestReplayTiming(t *testing.T) {
	e := cassette.Entry{
		Request: cassette.Request{Dialect: "chat", Kind: wire.KindInitial, Model: "m", Stream: true},
		Answer: cassette.Answer{Status: 200, HeadersMS: 40, Events: []cassette.Event{
			{Data: `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`, AtMS: 5},
			{Data: `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, AtMS: 25},
			{Data: "[DONE]", AtMS: 25},
		}},
	}
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	for _, timing := range []bool{false, true} {
		t.Run(fmt.Sprint("timing=", timing), func(t *testing.T) {
			player := cassette.NewPlayer(nil, nil)
			var probe Server
			x := &exchange{s: &probe, de: dialectTable()[0], body: []byte(body), kind: wire.KindInitial}
			x.req, _ = x.de.d.parse(x.body)
			e.Request = x.cassetteRequest()
			player.Add(e, cassette.Source{File: "t.jsonl", Line: 1})
			s, srv, _ := newFake(t, Config{Cassette: player, ReplayTiming: timing})
			waits := &syncbuf.Buffer{}
			s.replayWait = func(_ context.Context, d time.Duration) bool { fmt.Fprintln(waits, d); return true }
			status, out, _ := post(t, srv.URL+"/v1/chat/completions", body)
			diff(t, "status", 200, status)
			diff(t, "events", 3, strings.Count(out, "data: "))
			want := ""
			if timing {
				want = "40ms\n5ms\n20ms\n" // the zero gap is not waited
			}
			diff(t, "waits", want, waits.String())
		})
	}
}
