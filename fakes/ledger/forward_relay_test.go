package ledger

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// fullServer is a go-sdk MCP server with every feature a forwarder must
// pass through: a resource that can be subscribed to, a prompt,
// completions, and tools that log, report progress, ask the client to
// sample, and wait to be cancelled. What it saw is sent on its channels.
type fullServer struct {
	srv       *mcp.Server
	url       string
	levels    chan mcp.LoggingLevel // logging/setLevel as the server got it
	subscribe chan string           // URIs subscribed to
	started   chan struct{}         // wait_cancel began
	cancelled chan struct{}         // wait_cancel's context ended
}

// newFullServer serves a fullServer over Streamable HTTP, stateless (the
// 2026-07-28 protocol) or with sessions.
func newFullServer(t *testing.T, stateless bool) *fullServer {
	t.Helper()
	fs := &fullServer{
		levels:    make(chan mcp.LoggingLevel, 8),
		subscribe: make(chan string, 8),
		started:   make(chan struct{}, 1),
		cancelled: make(chan struct{}, 1),
	}
	fs.srv = mcp.NewServer(&mcp.Implementation{Name: "full", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			fs.subscribe <- req.Params.URI
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{req.Params.Argument.Value + "-done"}}}, nil
		},
	})
	fs.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok {
				fs.levels <- p.Level
			}
			return next(ctx, method, req)
		}
	})
	fs.srv.AddResource(&mcp.Resource{URI: "test://doc", Name: "doc", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "the doc"}}}, nil
		})
	fs.srv.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + req.Params.Arguments["who"]}}}}, nil
		})
	mcp.AddTool(fs.srv, &mcp.Tool{Name: "chatty"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Data: "chatty ran"}); err != nil {
			return nil, nil, err
		}
		if tok := req.Params.GetProgressToken(); tok != nil {
			for i := range 2 {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i + 1), Total: 2}); err != nil {
					return nil, nil, err
				}
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "chatty done"}}}, nil, nil
	})
	mcp.AddTool(fs.srv, &mcp.Tool{Name: "ask_model"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
			MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "2+2?"}}},
		})
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{res.Content}}, nil, nil
	})
	mcp.AddTool(fs.srv, &mcp.Tool{Name: "ask_user"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}},
		}})
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action + " " + res.Content["name"].(string)}}}, nil, nil
	})
	mcp.AddTool(fs.srv, &mcp.Tool{Name: "ask_url"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "url", Message: "sign in", URL: "https://example.invalid/sign-in", ElicitationID: "sign-in-1"})
		if err != nil {
			return nil, nil, err
		}
		if err := req.Session.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: "sign-in-1"}); err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action}}}, nil, nil
	})
	mcp.AddTool(fs.srv, &mcp.Tool{Name: "ask_roots"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(uris, " ")}}}, nil, nil
	})
	mcp.AddTool(fs.srv, &mcp.Tool{Name: "wait_cancel"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		fs.started <- struct{}{}
		select {
		case <-ctx.Done():
			fs.cancelled <- struct{}{}
			return nil, nil, ctx.Err()
		case <-time.After(testTimeout): // a cancellation that never comes fails the test; the wait is bounded
			return nil, nil, errors.New("wait_cancel: never cancelled")
		}
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return fs.srv },
		&mcp.StreamableHTTPOptions{Stateless: stateless, PropagateRequestCancellation: true}))
	t.Cleanup(ts.Close)
	fs.url = ts.URL
	return fs
}

// relayClient is what the client in front of the forwarder got from the
// server on its own.
type relayClient struct {
	cs       *mcp.ClientSession
	logs     chan *mcp.LoggingMessageParams
	progress chan *mcp.ProgressNotificationParams
	updated  chan string
}

// connectRelayClient connects a go-sdk client to the ledger at url that
// records the server's notifications, answers its sampling requests with
// "4" and its elicitations with name ann, and has one root,
// file:///work/project.
func connectRelayClient(t *testing.T, url string) *relayClient {
	t.Helper()
	rc := &relayClient{
		logs:     make(chan *mcp.LoggingMessageParams, 8),
		progress: make(chan *mcp.ProgressNotificationParams, 8),
		updated:  make(chan string, 8),
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "relay-test", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { rc.logs <- req.Params },
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			rc.progress <- req.Params
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			rc.updated <- req.Params.URI
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "fake", Role: "assistant", Content: &mcp.TextContent{Text: "4"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ann"}}, nil
		},
	})
	c.AddRoots(&mcp.Root{URI: "file:///work/project"})
	rc.cs = connectClient(t, c, url, "default")
	return rc
}

// receive returns the next value on ch, failing t after testTimeout.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("%s never came", what)
	}
	var zero T
	return zero
}

// forwardFull starts a fullServer, a ledger forwarding to it and a client
// in front; the server serves the 2026-07-28 protocol when stateless.
func forwardFull(t *testing.T, stateless bool) (*fullServer, *Server, *relayClient) {
	t.Helper()
	fs := newFullServer(t, stateless)
	s, url := newLedger(t, Config{Protocol: generation(stateless), Forward: &Forward{URL: fs.url}})
	return fs, s, connectRelayClient(t, url)
}

// TestForwardProtocol checks that the forwarder's client negotiates with
// the server as go-sdk does, and says which version it got: 2026-07-28 with
// a server that serves it, 2025-11-25 with one that initializes.
func TestForwardProtocol(t *testing.T) {
	for _, tt := range []struct {
		stateless bool
		want      wire.MCPProtocol
	}{{true, wire.MCPProtocol20260728}, {false, wire.MCPProtocol20251125}} {
		t.Run(string(tt.want), func(t *testing.T) {
			_, s, rc := forwardFull(t, tt.stateless)
			if got := s.ForwardProtocol(); got != tt.want {
				t.Errorf("ForwardProtocol() = %q, want %q", got, tt.want)
			}
			// What the server offers passes on either generation.
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			res, err := rc.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://doc"})
			if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "the doc" {
				t.Errorf("resources/read through the forwarder: %+v, %v; want the server's text, the doc", res, err)
			}
		})
	}
}

// TestForwardCapabilities checks that a client of a forwarding ledger is
// told the server's capabilities, not the ledger's: the server's resources
// with subscribe, its prompts and completions.
func TestForwardCapabilities(t *testing.T) {
	fs, _, rc := forwardFull(t, false)
	direct := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cs, err := direct.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: fs.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	want := cs.InitializeResult().Capabilities
	if want.Resources == nil || !want.Resources.Subscribe || want.Prompts == nil || want.Completions == nil {
		t.Fatalf("the server declares %+v; the test needs resources with subscribe, prompts and completions", want)
	}
	if diff := cmp.Diff(want, rc.cs.InitializeResult().Capabilities); diff != "" {
		t.Errorf("capabilities through the forwarder (-server's +got):\n%s", diff)
	}
}

// TestForwardResources lists, reads and subscribes to the server's resource
// through a forwarding ledger; the server's notifications/resources/updated
// reaches the subscribed client.
func TestForwardResources(t *testing.T) {
	fs, _, rc := forwardFull(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	list, err := rc.cs.ListResources(ctx, nil)
	if err != nil || len(list.Resources) != 1 || list.Resources[0].URI != "test://doc" {
		t.Fatalf("resources/list: %+v, %v; want the server's test://doc", list, err)
	}
	read, err := rc.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://doc"})
	if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != "the doc" {
		t.Errorf("resources/read: %+v, %v; want the doc", read, err)
	}
	if _, err := rc.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://missing"}); err == nil {
		t.Error("resources/read of a resource the server does not have answered; want the server's error")
	}
	if err := rc.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://doc"}); err != nil {
		t.Fatalf("resources/subscribe: %v", err)
	}
	if got := receive(t, fs.subscribe, "the server's subscription"); got != "test://doc" {
		t.Errorf("the server was subscribed to %q, want test://doc", got)
	}
	if err := fs.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://doc"}); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, rc.updated, "notifications/resources/updated"); got != "test://doc" {
		t.Errorf("the client was told %q changed, want test://doc", got)
	}
	if err := rc.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://doc"}); err != nil {
		t.Errorf("resources/unsubscribe: %v", err)
	}
}

// TestForwardPromptsAndCompletion gets the server's prompt and a completion
// through a forwarding ledger.
func TestForwardPromptsAndCompletion(t *testing.T) {
	_, _, rc := forwardFull(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	p, err := rc.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "ann"}})
	if err != nil || len(p.Messages) != 1 {
		t.Fatalf("prompts/get: %+v, %v; want the server's one message", p, err)
	}
	if tc, ok := p.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != "hello ann" {
		t.Errorf("prompts/get answered %+v, want hello ann", p.Messages[0].Content)
	}
	c, err := rc.cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"},
		Argument: mcp.CompleteParamsArgument{Name: "who", Value: "an"},
	})
	if err != nil || !cmp.Equal(c.Completion.Values, []string{"an-done"}) {
		t.Errorf("completion/complete: %+v, %v; want the server's an-done", c, err)
	}
}

// TestForwardLoggingAndProgress sets the log level at the server through a
// forwarding ledger, then calls a tool that logs and reports progress: the
// message and the progress, with the client's own token, reach the client.
func TestForwardLoggingAndProgress(t *testing.T) {
	fs, _, rc := forwardFull(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := rc.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatalf("logging/setLevel: %v", err)
	}
	if got := receive(t, fs.levels, "the server's logging/setLevel"); got != "info" {
		t.Errorf("the server's level is %q, want info", got)
	}
	params := &mcp.CallToolParams{Name: "chatty"}
	params.SetProgressToken("client-token")
	res, err := rc.cs.CallTool(ctx, params)
	if err != nil || text(res) != "chatty done" {
		t.Fatalf("chatty: %q, %v", text(res), err)
	}
	if got := receive(t, rc.logs, "the server's log message"); got.Level != "warning" || got.Data != "chatty ran" {
		t.Errorf("log message %+v, want warning chatty ran", got)
	}
	// Relayed as they come; go-sdk's clients may handle two notifications
	// in either order, so their order is not checked.
	var got []float64
	for range 2 {
		p := receive(t, rc.progress, "the server's progress")
		if p.ProgressToken != "client-token" {
			t.Errorf("progress %+v, want token client-token", p)
		}
		got = append(got, p.Progress)
	}
	slices.Sort(got)
	if diff := cmp.Diff([]float64{1, 2}, got); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
}

// TestForwardLogAfterAnswer: go-sdk's client handles the server's
// notifications on a queue of their own, so the forwarder can relay a log
// message that came with a request after the request was answered and its
// stream closed. The message then goes on the session's own stream, not
// lost on the closed one, also to a session that set no logging level.
func TestForwardLogAfterAnswer(t *testing.T) {
	_, s, rc := forwardFull(t, false)
	reads := make(chan mcp.Request, 1)
	ctxs := make(chan context.Context, 1)
	s.mcp.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "resources/read" {
				reads <- req
				ctxs <- ctx
			}
			return next(ctx, method, req)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if _, err := rc.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://doc"}); err != nil {
		t.Fatalf("resources/read: %v", err)
	}
	// The answered request, as the forwarder saw it in flight.
	late := &pending{ctx: receive(t, ctxs, "the read's context"), session: receive(t, reads, "the read").GetSession().(*mcp.ServerSession)}
	r := s.fwd.relay
	r.mu.Lock()
	r.inflight[-1] = late
	r.mu.Unlock()
	r.message(&mcp.LoggingMessageParams{Level: "warning", Data: "sent before the answer"})
	r.mu.Lock()
	delete(r.inflight, -1)
	r.mu.Unlock()
	if got := receive(t, rc.logs, "the late log message"); got.Data != "sent before the answer" {
		t.Errorf("log message %+v, want the late one", got)
	}
}

// TestForwardServerRequests calls tools whose server asks the client to
// sample, to elicit and for its roots: each request reaches the client
// through the forwarding ledger and its answer comes back to the server.
func TestForwardServerRequests(t *testing.T) {
	_, _, rc := forwardFull(t, false)
	for tool, want := range map[string]string{"ask_model": "4", "ask_user": "accept ann", "ask_roots": "file:///work/project"} {
		res, err := callTool(t, rc.cs, tool, nil)
		if err != nil || res.IsError || text(res) != want {
			t.Errorf("%s: %q (isError %v), %v; want the client's answer, %s", tool, text(res), res != nil && res.IsError, err, want)
		}
	}
}

// TestForwardCancellation: a client cancels a forwarded call while the
// server runs it, at both generations. The forwarder forwards on the
// call's context, so the cancellation reaches the server (its handler's
// context ends: a notifications/cancelled naming the forwarder's own id
// for the call on a session, the closed stream on 2026-07-28); the ledger
// records the call as cancelled by its client (one MCPCancelled event,
// Cancellations 1) and its answer as unknown (the server may have run it),
// and counts no write.
func TestForwardCancellation(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(fmt.Sprintf("stateless=%v", stateless), func(t *testing.T) {
			fs, s, rc := forwardFull(t, stateless)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := rc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait_cancel"})
				done <- err
			}()
			receive(t, fs.started, "the call at the server")
			cancel()
			receive(t, fs.cancelled, "the server's cancellation")
			if err := receive(t, done, "the cancelled call's return"); err == nil {
				t.Error("the cancelled call succeeded")
			}
			c := waitCounts(t, s, "", func(c wire.MCPCounts) bool { return c.Cancellations > 0 && c.Unknown > 0 })
			if c.Cancellations != 1 || c.Unknown != 1 || c.Writes != 0 {
				t.Errorf("counts %+v, want 1 cancellation, 1 unknown answer, no write", c)
			}
			var got []wire.MCPEvent
			for _, e := range s.Events("") {
				if e.Tool == "wait_cancel" {
					got = append(got, wire.MCPEvent{Kind: e.Kind, Fault: e.Fault})
				}
			}
			want := []wire.MCPEvent{{Kind: wire.MCPCall}, {Kind: wire.MCPCancelled}, {Kind: wire.MCPFault, Fault: wire.MCPFaultForwardUnknown}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the call's events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestForwardInputRequired calls, through a forwarding ledger, a tool of a
// 2026-07-28 server that answers input-required (MRTR: an elicitation and
// its state) before it runs: the client's answer and the server's state
// reach the server on the retried call, whichever generation the client
// speaks (a 2025-11-25 client is asked by the ledger's SDK, a 2026-07-28
// one retries itself), and the call writes once.
func TestForwardInputRequired(t *testing.T) {
	for _, tt := range []struct {
		name      string
		stateless bool // the ledger's: its client speaks 2026-07-28
	}{{"2025-11-25 client", false}, {"2026-07-28 client", true}} {
		t.Run(tt.name, func(t *testing.T) {
			srv := mcp.NewServer(&mcp.Implementation{Name: "mrtr", Version: "1"}, nil)
			rounds := make(chan string, 4) // the state each round carried
			mcp.AddTool(srv, &mcp.Tool{Name: "deploy"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				rounds <- req.Params.RequestState
				answer, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult)
				if !ok {
					return &mcp.CallToolResult{
						InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{
							"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}},
						}}},
						RequestState: "state-1",
					}, nil, nil
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deployed for " + answer.Content["name"].(string)}}}, nil, nil
			})
			ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
			t.Cleanup(ts.Close)
			s, url := newLedger(t, Config{Stateless: tt.stateless, Protocol: generation(tt.stateless), Forward: &Forward{URL: ts.URL}})
			rc := connectRelayClient(t, url)
			res, err := callTool(t, rc.cs, "deploy", nil)
			if err != nil || res.IsError || text(res) != "deployed for ann" {
				t.Fatalf("deploy: %q (isError %v), %v; want deployed for ann", text(res), res != nil && res.IsError, err)
			}
			if first, retry := receive(t, rounds, "the first round"), receive(t, rounds, "the retry"); first != "" || retry != "state-1" {
				t.Errorf("the rounds carried state %q and %q, want none and state-1", first, retry)
			}
			if got := waitCounts(t, s, "", func(c wire.MCPCounts) bool { return c.Writes > 0 }); got.Writes != 1 {
				t.Errorf("%d writes, want 1", got.Writes)
			}
		})
	}
}

// generation is the ledger's pin for a test of one client generation: a
// session (2025-11-25) unless stateless, where the client speaks 2026-07-28.
func generation(stateless bool) wire.MCPProtocol {
	if stateless {
		return ""
	}
	return wire.MCPProtocol20251125
}
