package ledger

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listenClient is a 2026-07-28 go-sdk client in front of a forwarding
// ledger, with what reached it on its listen streams.
type listenClient struct {
	cs      *mcp.ClientSession
	acks    chan *mcp.SubscriptionsAcknowledgedParams
	updated chan *mcp.ResourceUpdatedNotificationParams
	prompts chan *mcp.PromptListChangedParams
	listed  chan *mcp.ResourceListChangedParams
}

// connectListenClient connects a go-sdk client at its default protocol
// (2026-07-28) to the ledger at url; it opens a listen for list changes as
// it connects, as go-sdk does when the server declares them.
func connectListenClient(t *testing.T, url string) *listenClient {
	t.Helper()
	lc := &listenClient{
		acks:    make(chan *mcp.SubscriptionsAcknowledgedParams, 8),
		updated: make(chan *mcp.ResourceUpdatedNotificationParams, 8),
		prompts: make(chan *mcp.PromptListChangedParams, 8),
		listed:  make(chan *mcp.ResourceListChangedParams, 8),
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "listen-test", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { lc.updated <- req.Params },
		PromptListChangedHandler: func(_ context.Context, req *mcp.PromptListChangedRequest) {
			lc.prompts <- req.Params
		},
		ResourceListChangedHandler: func(_ context.Context, req *mcp.ResourceListChangedRequest) { lc.listed <- req.Params },
	})
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ok {
				lc.acks <- p
			}
			return next(ctx, method, req)
		}
	})
	lc.cs = connectClient(t, c, url, "default")
	return lc
}

// TestForwardListen has a 2026-07-28 client listen through a forwarding
// ledger, to a server of either generation: its listen streams are
// acknowledged with the server's notifications it asked for (prompts' and
// resources' list changes, a resource's updates), the forwarder subscribes
// to the resource at the server, and what the server then sends reaches
// the client on its stream, with the listen request's id in its _meta.
func TestForwardListen(t *testing.T) {
	for _, stateless := range []bool{true, false} {
		t.Run(generationOf(stateless), func(t *testing.T) {
			fs := newFullServer(t, stateless)
			_, url := newLedger(t, Config{Forward: &Forward{URL: fs.url}})
			lc := connectListenClient(t, url)
			first := receive(t, lc.acks, "the acknowledgement of the listen opened on connect")
			if n := first.Notifications; !n.PromptsListChanged || !n.ResourcesListChanged {
				t.Errorf("the listen opened on connect was acknowledged with %+v, want the server's prompts and resources list changes", n)
			}
			ctx, cancel := contextT()
			defer cancel()
			if err := lc.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://doc"}); err != nil {
				t.Fatal(err)
			}
			ack := receive(t, lc.acks, "the acknowledgement of the resource's listen")
			if got := ack.Notifications.ResourceSubscriptions; len(got) != 1 || got[0] != "test://doc" {
				t.Errorf("the resource's listen was acknowledged with %v, want test://doc", got)
			}
			if uri := receive(t, fs.subscribe, "the forwarder's subscription at the server"); uri != "test://doc" {
				t.Errorf("the server got a subscription to %q, want test://doc", uri)
			}
			// The SDK's server calls its SubscribeHandler before it adds
			// the subscriber, so the first update may find none: the test
			// sends it until one reaches the client.
			updated := sendUntil(t, lc.updated, "notifications/resources/updated", func() {
				if err := fs.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://doc"}); err != nil {
					t.Error(err)
				}
			})
			if updated.URI != "test://doc" || updated.Meta[mcp.MetaKeySubscriptionID] != ack.Meta[mcp.MetaKeySubscriptionID] {
				t.Errorf("resources/updated %+v, want test://doc with the listen's id %v", updated, ack.Meta[mcp.MetaKeySubscriptionID])
			}
			fs.srv.AddPrompt(&mcp.Prompt{Name: "farewell"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{}, nil
			})
			if p := receive(t, lc.prompts, "notifications/prompts/list_changed"); p.Meta[mcp.MetaKeySubscriptionID] != first.Meta[mcp.MetaKeySubscriptionID] {
				t.Errorf("prompts/list_changed _meta %v, want the listen's id %v", p.Meta, first.Meta[mcp.MetaKeySubscriptionID])
			}
			fs.srv.AddResource(&mcp.Resource{URI: "test://other", Name: "other"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{}, nil
			})
			receive(t, lc.listed, "notifications/resources/list_changed")
		})
	}
}

// TestForwardElicitationComplete calls a tool whose server asks the client
// for a URL-mode elicitation and then says it completed: the elicitation
// reaches the client through the forwarding ledger, and so does
// notifications/elicitation/complete, to the same client.
func TestForwardElicitationComplete(t *testing.T) {
	fs := newFullServer(t, false)
	_, url := newLedger(t, Config{Protocol: generation(false), Forward: &Forward{URL: fs.url}})
	completed := make(chan string, 1)
	c := mcp.NewClient(&mcp.Implementation{Name: "url-elicit", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
		ElicitationCompleteHandler: func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			completed <- req.Params.ElicitationID
		},
	})
	cs := connectClient(t, c, url, "")
	res, err := callTool(t, cs, "ask_url", nil)
	if err != nil || res.IsError || text(res) != "accept" {
		t.Fatalf("ask_url: %q (isError %v), %v; want the client's accept", text(res), res != nil && res.IsError, err)
	}
	if id := receive(t, completed, "notifications/elicitation/complete"); id != "sign-in-1" {
		t.Errorf("elicitation/complete of %q, want sign-in-1", id)
	}
}

// generationOf names the protocol a fullServer speaks.
func generationOf(stateless bool) string {
	if stateless {
		return "2026-07-28 server"
	}
	return "2025-11-25 server"
}

// sendUntil calls send, then again every 50ms, until a value comes on ch,
// and returns it; the test fails if none comes within testTimeout.
func sendUntil[T any](t *testing.T, ch <-chan T, what string, send func()) T {
	t.Helper()
	ctx, cancel := contextT()
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		send()
		select {
		case v := <-ch:
			return v
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("%s never came", what)
		}
	}
}
