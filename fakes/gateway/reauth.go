package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http"

	"golang.org/x/oauth2"
)

// reauthorizer is the auth.OAuthHandler of the gateway's MCP transport. The
// gateway holds no MCP credentials, so it sends no token; when the server
// answers a request 401 or 403, the go-sdk transport calls Authorize, where a
// gateway with credentials would refresh its token, then sends the request
// again, once: it never authorizes twice for one request.
type reauthorizer struct {
	label string
	log   *slog.Logger
}

// TokenSource returns no token source: the gateway has no token.
func (reauthorizer) TokenSource(context.Context) (oauth2.TokenSource, error) { return nil, nil }

// Authorize logs the server's challenge and lets the transport send the
// request again.
func (r reauthorizer) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	r.log.Info("mcp server asked to re-authenticate; sending the request again, once", "server", r.label,
		"status", resp.StatusCode, "challenge", resp.Header.Get("WWW-Authenticate"))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	return resp.Body.Close()
}
