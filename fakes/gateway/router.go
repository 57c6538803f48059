package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// requestState is one app request as the router sees it.
type requestState struct {
	id  string
	seq uint64
	req *appRequest
	d   dialect
	// attempts counts the attempts started, so attempt numbers are 1-based
	// across model groups.
	attempts int
	// sink is the open SSE answer of a streamed request, nil otherwise.
	sink *sseSink
	// turn identifies the request's turn in the checkpoint; "" without one.
	turn string
	// restored are the calls a resumed turn's checkpoint holds, by index;
	// nil for a turn that was not resumed.
	restored map[int]CheckpointCall
	// unsaved are the calls run and not yet checkpointed
	// (CheckpointAtTurnEnd).
	unsaved []CheckpointCall
}

// keyPrefix starts every idempotency key of the request: its run token, so
// the ledger attributes the key to the run, or "gw". The gateway adds its
// instance id after it, so keys of two gateways never collide on one ledger.
func (rs *requestState) keyPrefix() string {
	if rs.req.Token != "" {
		return rs.req.Token
	}
	return "gw"
}

func (rs *requestState) delivered() bool { return rs.sink != nil && rs.sink.started }

// attemptState is one run of the whole tool loop on one model group.
type attemptState struct {
	group  string
	number int
	// calls counts the tool calls the model asked for so far; the n-th call
	// of every attempt is the same logical action.
	calls int
	// dispatched counts the calls handed to the MCP session; unkeyed those
	// of them without an idempotency key.
	dispatched int
	unkeyed    int
}

// attemptError is a failed attempt and what it had done before it failed.
type attemptError struct {
	err        error
	group      string
	dispatched int
	unkeyed    int
	// delivered is set when streamed output had reached the app.
	delivered bool
}

func (e *attemptError) Error() string {
	return fmt.Sprintf("model group %q: %v", e.group, e.err)
}

func (e *attemptError) Unwrap() error { return e.err }

// routeError is the router's final failure, the one the app gets.
type routeError struct {
	*attemptError
	// afterDispatch tags an error raised after a tool call was sent to the
	// MCP server, returned without retry or fallback.
	afterDispatch bool
	// note is appended to the message, as LiteLLM appends its router note.
	note string
}

// attemptFunc runs one attempt of the whole tool loop.
type attemptFunc func(ctx context.Context, at *attemptState) (*modelTurn, error)

// routeAttempts runs attempts of rs on its model group and its fallbacks: up to
// NumRetries retries per group, then the next group. Which failures are
// retried, and how long it waits, depends on the switches; see AllBugs.
func (g *Gateway) routeAttempts(ctx context.Context, rs *requestState, run attemptFunc) (*modelTurn, error) {
	groups := g.cfg.chain(rs.req.Model)
	log := g.cfg.Logger.With("request", rs.id)
	var waited time.Duration
	var last *attemptError
	for gi, group := range groups {
		for try := 0; ; try++ {
			rs.attempts++
			at := &attemptState{group: group, number: rs.attempts}
			turn, err := run(ctx, at)
			if err == nil {
				return turn, nil
			}
			ae := &attemptError{err: err, group: group, dispatched: at.dispatched, unkeyed: at.unkeyed, delivered: rs.delivered()}
			last = ae
			log.Info("attempt failed", "attempt", at.number, "group", group, "dispatched", at.dispatched, "delivered", ae.delivered, "err", err)
			if ctx.Err() != nil {
				return nil, &routeError{attemptError: ae}
			}
			if ae.delivered {
				if g.cfg.Bugs.Has(StreamSplice) && gi+1 < len(groups) {
					log.Info("stream failed after output; splicing the fallback's stream", "fallback", groups[gi+1])
					break
				}
				return nil, &routeError{attemptError: ae, afterDispatch: ae.dispatched > 0}
			}
			if ae.dispatched > 0 && ae.unkeyed > 0 && !g.cfg.Bugs.Has(ReplayAfterDispatch) {
				log.Info("failure after a tool call was dispatched; not retried", "group", group)
				return nil, &routeError{attemptError: ae, afterDispatch: true}
			}
			retry, minWait := g.retryable(err)
			if !retry {
				log.Info("failure is not retryable", "group", group)
				return nil, &routeError{attemptError: ae}
			}
			if try >= g.cfg.NumRetries {
				break
			}
			wait := g.backoff(try, minWait)
			if !g.cfg.Bugs.Has(RetryEverything) && waited+wait > g.cfg.Backoff.Budget {
				log.Info("next wait exceeds the retry budget; giving up", "wait", wait, "waited", waited, "budget", g.cfg.Backoff.Budget)
				return nil, &routeError{attemptError: ae}
			}
			if err := g.sleep(ctx, wait); err != nil {
				return nil, &routeError{attemptError: ae}
			}
			waited += wait
		}
	}
	note := fmt.Sprintf("\n\nreplaycheck gateway: model group '%s' failed with the error above. No fallback was attempted.", rs.req.Model)
	if len(groups) > 1 {
		note = fmt.Sprintf("\n\nreplaycheck gateway: model groups '%s' failed; the error above is the last one.", strings.Join(groups, "', '"))
	}
	return nil, &routeError{attemptError: last, note: note}
}

// retryable classifies a failed attempt. Guarded: connection failures, 408,
// 429, 500, 502, 503, 504 and 529 retry, other statuses stop, and an explicit
// x-should-retry header wins over the status; minWait is the Retry-After the
// upstream asked for. With RetryEverything everything retries and minWait is 0.
func (g *Gateway) retryable(err error) (retry bool, minWait time.Duration) {
	if g.cfg.Bugs.Has(RetryEverything) {
		return true, 0
	}
	var ue *upstreamError
	if !errors.As(err, &ue) {
		return true, 0 // the MCP server's tool list could not be read: transient
	}
	minWait = g.retryAfter(ue.Header)
	switch strings.ToLower(strings.TrimSpace(ue.Header.Get("x-should-retry"))) {
	case "false":
		return false, 0
	case "true":
		return true, minWait
	}
	switch ue.Status {
	case 0, http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, 529:
		return true, minWait
	}
	return false, 0
}

// retryAfter reads retry-after-ms, then Retry-After in seconds or as an HTTP
// date; 0 when neither is there or usable.
func (g *Gateway) retryAfter(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(g.now()); d > 0 {
			return d
		}
	}
	return 0
}

// backoff is the wait before retry try+1: exponential from Base, capped at
// Cap, with equal jitter (half fixed, half random), and at least minWait.
func (g *Gateway) backoff(try int, minWait time.Duration) time.Duration {
	d := g.cfg.Backoff.Base << min(try, 30)
	if d <= 0 || d > g.cfg.Backoff.Cap {
		d = g.cfg.Backoff.Cap
	}
	g.randMu.Lock()
	jitter := time.Duration(g.cfg.Rand.Int64N(int64(d/2) + 1))
	g.randMu.Unlock()
	return max(d/2+jitter, minWait)
}
