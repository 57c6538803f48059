package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/jarcoal/httpmock"
	"google.golang.org/genai"

	"github.com/replaycheck/replaycheck/fakes/upstream/cassette"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// geminiModel is the model the tests ask for.
const geminiModel = "gemini-test"

// geminiPath is the path of a generateContent request for geminiModel.
func geminiPath(stream bool) string {
	if stream {
		return "/v1beta/models/" + geminiModel + ":streamGenerateContent"
	}
	return "/v1beta/models/" + geminiModel + ":generateContent"
}

// geminiClient is Google's official Go SDK pointed at url, with its own
// retries off (the default).
func geminiClient(t testing.TB, url string) *genai.Client {
	return geminiKeyClient(t, url, "test-key")
}

// geminiKeyClient is geminiClient with API key key (sent as x-goog-api-key).
func geminiKeyClient(t testing.TB, url, key string) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:      key,
		Backend:     genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: url},
	})
	if err != nil {
		t.Fatalf("genai.NewClient: %v", err)
	}
	return c
}

// geminiConfig offers tools by these names.
func geminiConfig(toolNames ...string) *genai.GenerateContentConfig {
	if len(toolNames) == 0 {
		return nil
	}
	var decls []*genai.FunctionDeclaration
	for _, n := range toolNames {
		decls = append(decls, &genai.FunctionDeclaration{
			Name:                 n,
			ParametersJsonSchema: map[string]any{"type": "object", "properties": map[string]any{"entry": map[string]any{"type": "string"}}},
		})
	}
	return &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: decls}}}
}

// geminiContents is the seed's prompt as a user content.
func geminiContents(tok string) []*genai.Content {
	return []*genai.Content{genai.NewContentFromText(prompt(tok), genai.RoleUser)}
}

// generate sends contents with the SDK, streamed or not, and returns the
// answer: plain, the response; streamed, the chunks merged into one (their
// parts in order, the last chunk's finish reason, usage and ids), and the
// number of chunks.
func generate(ctx context.Context, c *genai.Client, contents []*genai.Content, cfg *genai.GenerateContentConfig, stream bool) (*genai.GenerateContentResponse, int, error) {
	if !stream {
		r, err := c.Models.GenerateContent(ctx, geminiModel, contents, cfg)
		return r, 0, err
	}
	var merged *genai.GenerateContentResponse
	n := 0
	for r, err := range c.Models.GenerateContentStream(ctx, geminiModel, contents, cfg) {
		if err != nil {
			return merged, n, err
		}
		n++
		if merged == nil {
			merged = r
			continue
		}
		cand, last := merged.Candidates[0], r.Candidates[0]
		if last.Content != nil {
			cand.Content.Parts = append(cand.Content.Parts, last.Content.Parts...)
		}
		cand.FinishReason = last.FinishReason
		merged.UsageMetadata, merged.ModelVersion, merged.ResponseID = r.UsageMetadata, r.ModelVersion, r.ResponseID
	}
	return merged, n, nil
}

func TestGeminiSDK(t *testing.T) {
	tests := []struct {
		name     string
		stream   bool
		tools    []string
		echoID   bool // the client sends the call's id back with its result
		wantCall string
	}{
		{"plain", false, []string{"commit_write"}, true, "commit_write"},
		{"stream", true, []string{"commit_write"}, true, "commit_write"},
		{"plain without ids", false, []string{"commit_write"}, false, "commit_write"},
		{"stream without ids", true, []string{"commit_write"}, false, "commit_write"},
		{"suffix match", false, []string{"read_ledger", "ledger__commit_write"}, true, "ledger__commit_write"},
		{"no matching tool", false, []string{"read_ledger"}, true, ""},
		{"no tools stream", true, nil, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, srv, log := newFake(t, Config{})
			tok := token(t)
			c := geminiClient(t, srv.URL)
			ctx := context.Background()
			cfg := geminiConfig(tt.tools...)
			contents := geminiContents(tok)

			resp, _, err := generate(ctx, c, contents, cfg, tt.stream)
			if err != nil {
				t.Fatal(err)
			}
			diff(t, "model version", geminiModel, resp.ModelVersion)
			if !strings.Contains(resp.ResponseID, tok) {
				t.Errorf("response id %q lacks the token", resp.ResponseID)
			}
			diff(t, "finish reason", genai.FinishReasonStop, resp.Candidates[0].FinishReason)
			if resp.UsageMetadata == nil || resp.UsageMetadata.TotalTokenCount != resp.UsageMetadata.PromptTokenCount+resp.UsageMetadata.CandidatesTokenCount || resp.UsageMetadata.CandidatesTokenCount == 0 {
				t.Errorf("usage %+v", resp.UsageMetadata)
			}
			if tt.wantCall == "" {
				diff(t, "text", "done", resp.Text())
				diff(t, "counts", wire.UpstreamCounts{Initial: 1, Outcomes: countsOf(map[string]int{"initial forwarded": 1})}, s.Counts(tok))
				return
			}
			calls := resp.FunctionCalls()
			if len(calls) != 1 {
				t.Fatalf("function calls %+v", calls)
			}
			fc := calls[0]
			diff(t, "call", tt.wantCall+" alpha-"+tok, fc.Name+" "+fmt.Sprint(fc.Args["entry"]))
			if !strings.HasPrefix(fc.ID, "fc_") || !strings.Contains(fc.ID, tok) {
				t.Errorf("call id %q", fc.ID)
			}

			result := &genai.FunctionResponse{Name: fc.Name, Response: map[string]any{"output": "recorded"}}
			if tt.echoID {
				result.ID = fc.ID
			}
			contents = append(contents, resp.Candidates[0].Content, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: result}}})
			follow, _, err := generate(ctx, c, contents, cfg, tt.stream)
			if err != nil {
				t.Fatal(err)
			}
			diff(t, "follow-up text", "done", follow.Text())
			diff(t, "counts", oneCleanLoop(), s.Counts(tok))
			diff(t, "log", oneCleanLoopLog(geminiPath(tt.stream)), log.String())
			wantResults := []string(nil)
			if tt.echoID {
				wantResults = []string{fc.ID}
			}
			reqs := s.Requests(tok)
			diff(t, "answer's call ids", []string{fc.ID}, callIDs(reqs[0]))
			diff(t, "follow-up's result ids", wantResults, reqs[1].ResultIDs)
			diff(t, "record", [3]string{"gemini", geminiModel, tt.wantCall}, [3]string{reqs[0].Endpoint, reqs[0].Model, strings.Join(reqs[0].Tools(), ",")})
		})
	}
}

// A two-round script: the second follow-up gets the second round's call,
// also when the client echoes no ids (rounds are counted from the results).
func TestGeminiScriptRounds(t *testing.T) {
	for _, echo := range []bool{true, false} {
		t.Run(fmt.Sprint("echo ids ", echo), func(t *testing.T) {
			s, srv, _ := newFake(t, Config{})
			tok := token(t)
			script, err := ParseScript([]byte("[{call: commit_write}, {say: between}, {call: read_ledger}, {say: finished}]"))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Arm(tok, &script, nil); err != nil {
				t.Fatal(err)
			}
			c := geminiClient(t, srv.URL)
			cfg := geminiConfig("commit_write", "read_ledger")
			contents := geminiContents(tok)
			var said []string
			for range 3 {
				resp, _, err := generate(context.Background(), c, contents, cfg, true)
				if err != nil {
					t.Fatal(err)
				}
				calls := resp.FunctionCalls()
				if len(calls) == 0 {
					said = append(said, "say "+resp.Text())
					break
				}
				said = append(said, "call "+calls[0].Name)
				fr := &genai.FunctionResponse{Name: calls[0].Name, Response: map[string]any{"output": "ok"}}
				if echo {
					fr.ID = calls[0].ID
				}
				contents = append(contents, resp.Candidates[0].Content, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: fr}}})
			}
			diff(t, "turns", []string{"call commit_write", "call read_ledger", "say finished"}, said)
			diff(t, "counts", wire.UpstreamCounts{Initial: 1, FollowUp: 2, Outcomes: countsOf(map[string]int{"initial forwarded": 1, "follow_up forwarded": 2})}, s.Counts(tok))
		})
	}
}

// The streamed answer to one tool call is two chunks: the functionCall,
// then the terminal chunk with finishReason and the whole usage.
func TestGeminiStreamShape(t *testing.T) {
	_, srv, _ := newFake(t, Config{})
	tok := token(t)
	body := `{"contents":[{"role":"user","parts":[{"text":"` + prompt(tok) + `"}]}],"tools":[{"functionDeclarations":[{"name":"commit_write"}]}]}`
	status, got, h := post(t, srv.URL+geminiPath(true)+"?alt=sse", body)
	diff(t, "status", 200, status)
	diff(t, "content type", "text/event-stream; charset=utf-8", h.Get("Content-Type"))
	id := "resp-" + tok + "-1"
	usage := func(whole bool) string {
		if whole {
			return `"usageMetadata":{"promptTokenCount":51,"candidatesTokenCount":9,"totalTokenCount":60,"promptTokensDetails":[{"modality":"TEXT","tokenCount":51}]}`
		}
		return `"usageMetadata":{"promptTokenCount":51,"totalTokenCount":51,"promptTokensDetails":[{"modality":"TEXT","tokenCount":51}]}`
	}
	want := `data: {"candidates":[{"content":{"parts":[{"functionCall":{"id":"fc_` + tok + `_1_0","name":"commit_write","args":{"entry":"alpha-` + tok + `"}}}],"role":"model"},"index":0}],` + usage(false) + `,"modelVersion":"gemini-test","responseId":"` + id + `"}` + "\n\n" +
		`data: {"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}],` + usage(true) + `,"modelVersion":"gemini-test","responseId":"` + id + `"}` + "\n\n"
	diff(t, "stream", want, got)
}

// Without alt=sse a stream request is refused, 400 in Gemini's shape,
// recorded bad_request; the path's model wins over a body's.
func TestGeminiPaths(t *testing.T) {
	s, srv, log := newFake(t, Config{})
	tok := token(t)
	body := `{"model":"other","contents":[{"parts":[{"text":"` + prompt(tok) + `"}]}]}`
	status, got, _ := post(t, srv.URL+geminiPath(true), body)
	diff(t, "status", 400, status)
	if !strings.Contains(got, `"status":"INVALID_ARGUMENT"`) || !strings.Contains(got, "alt=sse") {
		t.Errorf("body %s", got)
	}
	status, got, _ = post(t, srv.URL+"/v1/models/"+geminiModel+":generateContent", body)
	if status != 200 || !strings.Contains(got, `"modelVersion":"gemini-test"`) {
		t.Errorf("/v1 form: %d %s", status, got)
	}
	status, got, _ = post(t, srv.URL+"/v1beta/models/"+geminiModel+":embedContent", body)
	if status != 404 || !strings.Contains(got, `"status":"NOT_FOUND"`) {
		t.Errorf("unserved method: %d %s", status, got)
	}
	diff(t, "log", geminiPath(true)+" initial bad_request\n/v1/models/gemini-test:generateContent initial forwarded\n", log.String())
	reqs := s.Requests(tok)
	diff(t, "models", [2]string{geminiModel, geminiModel}, [2]string{reqs[0].Model, reqs[1].Model})
}

// countTokens, the model list and one model answer as the SDK expects,
// and are neither counted nor logged.
func TestGeminiAncillary(t *testing.T) {
	s, srv, log := newFake(t, Config{})
	c := geminiClient(t, srv.URL)
	ctx := context.Background()
	ct, err := c.Models.CountTokens(ctx, geminiModel, geminiContents("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if ct.TotalTokens < 1 {
		t.Errorf("count %+v", ct)
	}
	page, err := c.Models.List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Items[0].Name != "models/"+FakeModel || page.NextPageToken != "" {
		t.Errorf("list %+v", page)
	}
	m, err := c.Models.Get(ctx, geminiModel, nil)
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "model", "models/"+geminiModel, m.Name)
	if status, _, h := post(t, srv.URL+"/v1beta/models", "{}"); status != 405 || h.Get("Allow") != "GET" {
		t.Errorf("POST list: %d %v", status, h)
	}
	diff(t, "log", "", log.String())
	diff(t, "total", wire.UpstreamCounts{Outcomes: countsOf(map[string]int{})}, s.Total())
}

// lingerGemini streams the seed's request with google.golang.org/genai and
// calls complete once, as soon as the client holds the complete call.
func lingerGemini(ctx context.Context, url, tok string, complete func()) lingerResult {
	c, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: url}})
	if err != nil {
		return lingerResult{err: err}
	}
	var r lingerResult
	for resp, err := range c.Models.GenerateContentStream(ctx, geminiModel, geminiContents(tok), geminiConfig("commit_write")) {
		if err != nil {
			r.err = err
			break
		}
		if calls := resp.FunctionCalls(); !r.complete && len(calls) == 1 && calls[0].Args["entry"] == "alpha-"+tok {
			r.complete = true
			complete()
		}
		if len(resp.Candidates) > 0 && resp.Candidates[0].FinishReason != "" {
			r.terminal = true
		}
	}
	return r
}

// sawGemini is lingerGemini as an sdkSaw: an API error with its code,
// status and message.
func sawGemini(ctx context.Context, url, tok string) sdkSaw {
	r := lingerGemini(ctx, url, tok, func() {})
	s := sdkSaw{complete: r.complete, terminal: r.terminal}
	var ae genai.APIError
	switch {
	case errors.As(r.err, &ae):
		s.failure = fmt.Sprintf("genai.APIError: code %d, status %s: %s", ae.Code, ae.Status, ae.Message)
	case r.err != nil:
		s.failure = "other: " + r.err.Error()
	}
	return s
}

// Every upstream fault on Gemini, as google.golang.org/genai sees it.
// Status faults arrive as a genai.APIError with the status's google.rpc
// name; a stream_error arrives the same way from inside the 200 stream
// (the SDK reads the API's raw error object between chunks as the error); a
// cut stream, a reset and a stall the client gives up on arrive as
// transport errors; a delay, a dribble and a stall that resumes leave the
// answer whole; serve_model changes the modelVersion the SDK reports.
func TestGeminiFaultsSDK(t *testing.T) {
	tests := []struct {
		fault   string
		want    sdkSaw
		outcome string
	}{
		{"{respond: {status: 429}}", sdkSaw{failure: "genai.APIError: code 429, status RESOURCE_EXHAUSTED: injected initial failure"}, "injected_429"},
		{"{respond: {status: 503, message: The model is overloaded.}}", sdkSaw{failure: "genai.APIError: code 503, status UNAVAILABLE: The model is overloaded."}, "injected_503"},
		{"{stream_error: {after: headers}}", sdkSaw{failure: "genai.APIError: code 503, status UNAVAILABLE: injected stream error"}, "stream_error"},
		{"{stream_error: {after: tool_call, type: resource_exhausted, message: Quota exceeded}}", sdkSaw{complete: true, failure: "genai.APIError: code 429, status RESOURCE_EXHAUSTED: Quota exceeded"}, "stream_error"},
		{"{stream_error: {after: events, events: 1, type: internal}}", sdkSaw{complete: true, failure: "genai.APIError: code 500, status INTERNAL: injected stream error"}, "stream_error"},
		{"{delay: 1ms}", sdkSaw{complete: true, terminal: true}, "delayed"},
		{"{dribble: 1ms}", sdkSaw{complete: true, terminal: true}, "delayed"},
		{"{stall: {after: tool_call, for: 5ms}}", sdkSaw{complete: true, terminal: true}, "delayed"},
		{"{serve_model: gemini-fallback}", sdkSaw{complete: true, terminal: true}, "forwarded"},
	}
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			s, srv, log := newFake(t, Config{})
			tok := token(t)
			if err := s.Arm(tok, nil, []Fault{mustFault(t, tt.fault)}); err != nil {
				t.Fatal(err)
			}
			diff(t, "what the SDK saw", tt.want, sawGemini(context.Background(), srv.URL, tok))
			diff(t, "log", geminiPath(true)+" initial "+tt.outcome+"\n", log.String())
			diff(t, "reports", []reportCounts{{1, 1}}, reportsOf(s.FaultReports(tok)))
		})
	}
}

// A respond fault's headers reach the client; the plain request gets the
// Gemini error body the SDK reads.
func TestGeminiRespondPlain(t *testing.T) {
	s, srv, _ := newFake(t, Config{})
	tok := token(t)
	if err := s.Arm(tok, nil, []Fault{mustFault(t, `{respond: {status: 429, headers: {Retry-After: "7"}}, times: once}`)}); err != nil {
		t.Fatal(err)
	}
	_, _, err := generate(context.Background(), geminiClient(t, srv.URL), geminiContents(tok), geminiConfig("commit_write"), false)
	var ae genai.APIError
	if !errors.As(err, &ae) || ae.Code != 429 || ae.Status != "RESOURCE_EXHAUSTED" {
		t.Fatalf("err = %v (%T); want a genai.APIError 429 RESOURCE_EXHAUSTED", err, err)
	}
	status, _, _ := post(t, srv.URL+geminiPath(false), `{"contents":[]}`)
	diff(t, "second call", 200, status)
	diff(t, "record headers", map[string]string{"Retry-After": "7"}, s.Requests(tok)[0].Headers)
}

// Drops and resets reach the SDK as transport errors, never as an API
// error or a clean end; a tool_call drop comes after the complete call.
func TestGeminiDropAndReset(t *testing.T) {
	tests := []struct {
		fault   string
		stream  bool
		want    streamResult
		outcome string
	}{
		{"{drop: {after: headers}}", true, streamResult{}, "dropped_stream"},
		{"{drop: {after: events, events: 1}}", true, streamResult{events: 1, complete: true}, "dropped_stream"},
		{"{drop: {after: tool_call, linger: 1ms}}", true, streamResult{events: 1, complete: true}, "dropped_stream"},
		{"{reset: true}", true, streamResult{}, "reset"},
		{"{reset: true}", false, streamResult{}, "reset"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.fault, " stream=", tt.stream), func(t *testing.T) {
			s, srv, log := newFake(t, Config{})
			tok := token(t)
			if err := s.Arm(tok, nil, []Fault{mustFault(t, tt.fault)}); err != nil {
				t.Fatal(err)
			}
			resp, n, err := generate(context.Background(), geminiClient(t, srv.URL), geminiContents(tok), geminiConfig("commit_write"), tt.stream)
			var ae genai.APIError
			if err == nil || errors.As(err, &ae) {
				t.Fatalf("err = %v; want a transport error", err)
			}
			got := streamResult{events: n}
			got.complete = resp != nil && len(resp.FunctionCalls()) == 1
			diff(t, "seen", tt.want, streamResult{events: got.events, complete: got.complete})
			diff(t, "log", geminiPath(tt.stream)+" initial "+tt.outcome+"\n", log.String())
			diff(t, "reports", []reportCounts{{1, 1}}, reportsOf(s.FaultReports(tok)))
		})
	}
}

// The fault's endpoint: gemini matches Gemini requests only.
func TestGeminiFaultEndpoint(t *testing.T) {
	s, srv, log := newFake(t, Config{})
	tok := token(t)
	if err := s.Arm(tok, nil, []Fault{mustFault(t, "{endpoint: gemini, respond: {status: 500}}")}); err != nil {
		t.Fatal(err)
	}
	if _, err := openaiClient(srv.URL).Chat.Completions.New(context.Background(), chatParams(tok, "commit_write")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := generate(context.Background(), geminiClient(t, srv.URL), geminiContents(tok), nil, false); err == nil {
		t.Fatal("the gemini request went through")
	}
	diff(t, "log", "/v1/chat/completions initial forwarded\n"+geminiPath(false)+" initial injected_500\n", log.String())
}

// A Gemini session relayed from a mocked provider is recorded with the
// caller's key scrubbed (header or ?key= query), then replays offline to
// the SDK; the relay passes the key on in the header the client used.
func TestGeminiRecordReplay(t *testing.T) {
	const key = "AIzaSyFakeKeyForTheRelayTest0123456789"
	tok := token(t)
	mt := httpmock.NewMockTransport()
	for _, stream := range []bool{false, true} {
		mt.RegisterResponder("POST", provider+geminiPath(stream), func(req *http.Request) (*http.Response, error) {
			if req.Header.Get("X-Goog-Api-Key") != key && req.URL.Query().Get("key") != key {
				t.Errorf("provider got no key: %v %s", req.Header, req.URL.RawQuery)
			}
			body, err := io.ReadAll(req.Body)
			if err != nil {
				return nil, err
			}
			path := req.URL.Path
			if stream {
				path += "?alt=sse"
			}
			out, ct := providerAnswer(t, path, string(body))
			out = strings.Replace(out, `"done"`, `"done, key `+key+`"`, 1) // a provider echoing the key
			resp := httpmock.NewStringResponse(http.StatusOK, out)
			resp.Header.Set("Content-Type", ct)
			return resp, nil
		})
	}
	rec, err := cassette.Create(t.TempDir() + "/gemini.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	_, srv, _ := newFake(t, Config{Relay: provider, Client: &http.Client{Transport: mt}, Record: rec})
	session := func(url string) []string {
		var seen []string
		for _, stream := range []bool{false, true} {
			c := geminiKeyClient(t, url, key)
			contents := geminiContents(tok)
			cfg := geminiConfig("commit_write")
			resp, _, err := generate(context.Background(), c, contents, cfg, stream)
			if err != nil {
				t.Fatal(err)
			}
			fc := resp.FunctionCalls()[0]
			seen = append(seen, fmt.Sprintf("stream=%t call %s %s", stream, fc.ID, fc.Name))
			contents = append(contents, resp.Candidates[0].Content, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: fc.ID, Name: fc.Name, Response: map[string]any{"output": "ok"}}}}})
			follow, _, err := generate(context.Background(), c, contents, cfg, stream)
			if err != nil {
				t.Fatal(err)
			}
			seen = append(seen, fmt.Sprintf("stream=%t say %s", stream, follow.Text()))
		}
		return seen
	}
	recorded := session(srv.URL)
	// The key in the query, as curl examples send it.
	if status, got, _ := post(t, srv.URL+geminiPath(false)+"?key="+key, `{"contents":[{"role":"user","parts":[{"text":"say"}]}]}`); status != 200 || !strings.Contains(got, key) {
		t.Fatalf("?key= request: %d %s", status, got)
	}
	srv.Close()
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(rec.Path())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), key) || strings.Count(string(raw), "\n") != 5 {
		t.Fatalf("cassette holds the key or not 5 entries:\n%s", raw)
	}
	player, err := cassette.Open(rec.Path())
	if err != nil {
		t.Fatal(err)
	}
	s, replay, _ := newFake(t, Config{Cassette: player})
	replayed := session(replay.URL)
	for i := range recorded {
		recorded[i] = strings.ReplaceAll(recorded[i], key, cassette.Redacted)
	}
	diff(t, "replayed session", recorded, replayed)
	reqs := s.Requests(tok)
	diff(t, "replayed ids and calls", [2]string{"resp-" + tok + "-1", "commit_write"}, [2]string{reqs[0].ResponseID, strings.Join(reqs[0].Tools(), ",")})
	if reqs[2].Events != 2 || reqs[2].ContentEvents != 1 {
		t.Errorf("replayed stream record %+v", reqs[2])
	}
}

// A stream_error on Gemini ends the 200 stream with the error object as the
// API sends it mid-stream: pretty-printed, outside the event-stream format.
func TestGeminiStreamErrorBytes(t *testing.T) {
	s, srv, _ := newFake(t, Config{})
	tok := token(t)
	if err := s.Arm(tok, nil, []Fault{mustFault(t, "{stream_error: {after: tool_call, type: resource_exhausted, message: Quota exceeded}}")}); err != nil {
		t.Fatal(err)
	}
	body := `{"contents":[{"role":"user","parts":[{"text":"` + prompt(tok) + `"}]}],"tools":[{"functionDeclarations":[{"name":"commit_write"}]}]}`
	status, got, _ := post(t, srv.URL+geminiPath(true)+"?alt=sse", body)
	diff(t, "status", 200, status)
	cut := strings.Index(got, "\n\n") + 2
	if !strings.HasPrefix(got, `data: {"candidates":[{"content":{"parts":[{"functionCall":`) || cut < 2 {
		t.Fatalf("stream %q", got)
	}
	diff(t, "error object", "{\n  \"error\": {\n    \"code\": 429,\n    \"message\": \"Quota exceeded\",\n    \"status\": \"RESOURCE_EXHAUSTED\"\n  }\n}\n", got[cut:])
}

// A relayed Gemini stream that ends in the API's error object reaches the
// client as it came and is not recorded: the answer failed.
func TestGeminiRelayedErrorNotRecorded(t *testing.T) {
	for _, ending := range []string{"\n", "\n\n"} {
		mt := httpmock.NewMockTransport()
		body := "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}],\"role\":\"model\"},\"index\":0}]}\n\n{\n  \"error\": {\n    \"code\": 503,\n    \"message\": \"The model is overloaded. Please try again later.\",\n    \"status\": \"UNAVAILABLE\"\n  }\n}" + ending
		mt.RegisterResponder("POST", provider+geminiPath(true), func(*http.Request) (*http.Response, error) {
			resp := httpmock.NewStringResponse(http.StatusOK, body)
			resp.Header.Set("Content-Type", "text/event-stream")
			return resp, nil
		})
		rec, err := cassette.Create(t.TempDir() + "/gemini.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		_, srv, _ := newFake(t, Config{Relay: provider, Client: &http.Client{Transport: mt}, Record: rec})
		_, got, _ := post(t, srv.URL+geminiPath(true)+"?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
		srv.Close()
		if err := rec.Close(); err != nil {
			t.Fatal(err)
		}
		diff(t, "relayed", body, got)
		raw, err := os.ReadFile(rec.Path())
		if err != nil {
			t.Fatal(err)
		}
		diff(t, "cassette", "", string(raw))
	}
}
