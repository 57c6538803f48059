package ledgerstdio

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"

	"github.com/replaycheck/replaycheck/fakes/ledger"
)

// unforwarded are the tools/calls the process read from its client and
// never sent to the ledger because the client gave them up first: it
// cancelled the call, or closed stdin (which cancels the calls in flight),
// before the process had written the call's request out. The process names
// them on the DELETE that closes its ledger session
// (ledger.StdioUnforwardedHeader), so the run knows the target sent a call
// that the harness's own stdio server did not deliver in time. Its methods
// are safe for concurrent use.
type unforwarded struct {
	mu    sync.Mutex
	tools []string
}

// track returns ctx, on which the call of tool is forwarded, and a func to
// call with the forward's error: it notes the call as unforwarded when ctx
// ended (the client gave it up) before any request carrying it was written
// to the ledger's connection. A request written, even in part or with an
// error, may have reached the ledger: that counts as forwarded.
func (u *unforwarded) track(ctx context.Context, tool string) (context.Context, func(error)) {
	var wrote atomic.Bool
	tctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(true) },
	})
	return tctx, func(err error) {
		if err == nil || ctx.Err() == nil || wrote.Load() {
			return
		}
		u.mu.Lock()
		defer u.mu.Unlock()
		u.tools = append(u.tools, tool)
	}
}

// name sets ledger.StdioUnforwardedHeader on h, one value per unforwarded
// call.
func (u *unforwarded) name(h http.Header) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, t := range u.tools {
		h.Add(ledger.StdioUnforwardedHeader, t)
	}
}
