package upstream

import (
	"net/http"

	"github.com/replaycheck/replaycheck/internal/runtoken"
)

// runOf returns the run a model request belongs to: the run whose own
// address it arrived at (runtoken.Handler), else the run token its body
// carries, else "" (unattributed).
func runOf(r *http.Request, body []byte) string {
	if t, ok := runtoken.FromContext(r.Context()); ok {
		return t
	}
	return runtoken.Find(body)
}
