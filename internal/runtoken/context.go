package runtoken

import (
	"context"
	"net/http"
)

type ctxKey struct{}

// NewContext returns ctx carrying token as the run that owns a request that
// arrived at the run's own address.
func NewContext(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, ctxKey{}, token)
}

// FromContext returns the token NewContext put in ctx, if any.
func FromContext(ctx context.Context) (string, bool) {
	t, ok := ctx.Value(ctxKey{}).(string)
	return t, ok && t != ""
}

// Handler returns h with every request attributed to token: a fake that
// finds a token in the request's context (FromContext) uses it instead of
// scanning the body. It serves a run's own listener, so a client that never
// sends the token (its own prompt, its own tool names) is still attributed.
func Handler(token string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(NewContext(r.Context(), token)))
	})
}
