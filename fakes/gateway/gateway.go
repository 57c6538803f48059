package gateway

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/replaycheck/replaycheck/internal/ctxwait"
	"github.com/replaycheck/replaycheck/internal/secret"
)

// closeGrace is how long Close lets tool calls left running by
// NoCancelOnTimeout finish before it cancels them.
const closeGrace = 5 * time.Second

// Gateway is the built-in LLM gateway. It is an http.Handler serving the
// paths of its dialectTable (and GET /health); it is safe for concurrent
// use. Close it to end its MCP sessions.
type Gateway struct {
	cfg     Config
	routes  map[string]dialect
	pool    *mcpPool
	breaker *breaker
	seq     atomic.Uint64
	// ownClient is set when the gateway made cfg.HTTPClient itself.
	ownClient bool
	// instance tells this gateway's idempotency keys from another's: its
	// start time in base 36.
	instance string
	closed   atomic.Bool

	randMu sync.Mutex
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error

	// detachCtx parents the tool calls left running by NoCancelOnTimeout;
	// Close cancels it after closeGrace.
	detachCtx    context.Context
	detachCancel context.CancelFunc
	detachMu     sync.Mutex // guards detachDone and detached.Add against Close
	detachDone   bool
	detached     sync.WaitGroup
	closeOnce    sync.Once
	closeErr     error
	// ckpt is the checkpoint file's writer; nil without Config.Checkpoint.
	ckpt *checkpoint
}

// New checks cfg, fills its defaults and returns a gateway. It connects to
// nothing yet: the MCP session is opened by the first request that needs it.
func New(cfg Config) (*Gateway, error) {
	ownClient := cfg.HTTPClient == nil
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	g := &Gateway{
		cfg:       cfg,
		ownClient: ownClient,
		routes:    dialectTable(),
		pool:      newMCPPool(cfg),
		now:       time.Now,
		sleep:     ctxwait.Sleep,
	}
	g.pool.relist = g.relist
	if cfg.Checkpoint != "" {
		g.ckpt = &checkpoint{path: cfg.Checkpoint}
	}
	g.instance = strconv.FormatInt(g.now().UnixNano(), 36)
	g.breaker = &breaker{label: cfg.ServerLabel, threshold: BreakerThreshold, cooldown: cfg.BreakerCooldown, now: func() time.Time { return g.now() }}
	g.detachCtx, g.detachCancel = context.WithCancel(context.Background())
	return g, nil
}

// Bugs returns a copy of the switched-on bugs.
func (g *Gateway) Bugs() Bugs { return maps.Clone(g.cfg.Bugs) }

// Close ends the gateway's MCP sessions. It first waits up to closeGrace for
// tool calls left running by NoCancelOnTimeout, then cancels the rest. Requests
// arriving afterwards get 503; tool calls of requests still running fail.
// Close is idempotent.
func (g *Gateway) Close() error {
	g.closeOnce.Do(func() {
		g.closed.Store(true)
		g.detachMu.Lock()
		g.detachDone = true
		g.detachMu.Unlock()
		waited := make(chan struct{})
		go func() {
			g.detached.Wait()
			close(waited)
		}()
		t := time.NewTimer(closeGrace)
		select {
		case <-waited:
		case <-t.C:
		}
		t.Stop()
		g.detachCancel()
		<-waited
		g.closeErr = g.pool.close()
		if g.ownClient {
			g.cfg.HTTPClient.CloseIdleConnections()
		}
	})
	return g.closeErr
}

// ServeHTTP answers one app request.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/health" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"ok"}`+"\n")
		return
	}
	d, ok := g.routes[r.URL.Path]
	if !ok {
		writeJSONError(w, http.StatusNotFound, fmt.Sprintf("unknown endpoint %s: the gateway serves %s", r.URL.Path, ServedPaths()), "not_found_error", "404")
		return
	}
	code := func(status int) any { return d.errorCode(status) }
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSONError(w, http.StatusMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path+": use POST", "invalid_request_error", code(http.StatusMethodNotAllowed))
		return
	}
	if !g.authorized(r) {
		writeJSONError(w, http.StatusUnauthorized, "Authentication Error: missing or wrong key; send Authorization: Bearer <master key>", "authentication_error", code(http.StatusUnauthorized))
		return
	}
	if g.closed.Load() {
		writeJSONError(w, http.StatusServiceUnavailable, "the gateway is shutting down", "server_error", code(http.StatusServiceUnavailable))
		return
	}
	body, err := g.readBody(w, r)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSONError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", maxAppBody), "invalid_request_error", code(http.StatusRequestEntityTooLarge))
			return
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			w.Header().Set("Connection", "close")
			writeJSONError(w, http.StatusRequestTimeout, fmt.Sprintf("the request body was not received within %s", g.cfg.BodyTimeout), "invalid_request_error", code(http.StatusRequestTimeout))
			return
		}
		writeJSONError(w, http.StatusBadRequest, "reading the request body: "+err.Error(), "invalid_request_error", code(http.StatusBadRequest))
		return
	}
	req, err := parseAppRequest(d, g.cfg.ServerLabel, body)
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error(), "invalid_request_error", code(http.StatusBadRequest))
		return
	}
	seq := g.seq.Add(1)
	rs := &requestState{id: fmt.Sprintf("req-%d", seq), seq: seq, req: req, d: d}
	if err := g.beginTurn(rs, r.URL.Path, body); err != nil {
		writeJSONError(w, http.StatusInternalServerError, err.Error(), "server_error", code(http.StatusInternalServerError))
		return
	}
	g.cfg.Logger.Info("request", "request", rs.id, "endpoint", r.URL.Path, "model", req.Model, "stream", req.Stream, "mcp", req.UseMCP, "block_mcp", req.BlockMCP, "token", req.Token)
	ctx := r.Context()
	if req.Stream {
		d.stream(ctx, g, w, rs)
		return
	}
	turn, err := g.route(ctx, rs, func(ctx context.Context, at *attemptState) (*modelTurn, error) {
		return g.attempt(ctx, rs, at)
	})
	if err != nil {
		g.answerError(w, rs, err)
		return
	}
	out, err := d.answer(req, turn)
	if err != nil {
		writeJSONError(w, http.StatusBadGateway, "rendering the answer: "+err.Error(), "server_error", code(http.StatusBadGateway))
		return
	}
	if g.cfg.Bugs.Has(HideServedModel) {
		out = renameModel(out, req.Model)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// readBody reads the app request's body, at most maxAppBody bytes within
// BodyTimeout: a read deadline on the connection while the body is read,
// lifted afterwards so it does not end a kept-alive connection. Where the
// server cannot set deadlines (a recorder, HTTP/2 without support), the
// size bound still holds.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(g.cfg.BodyTimeout)); err == nil {
		defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, maxAppBody))
}

// authorized checks the master key, if one is set, in constant time.
func (g *Gateway) authorized(r *http.Request) bool {
	if g.cfg.MasterKey == "" {
		return true
	}
	got, ok := secret.Bearer(r.Header.Get("Authorization"))
	if !ok {
		got = r.Header.Get("x-api-key")
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(g.cfg.MasterKey)) == 1
}

// errorBody is the OpenAI error shape the gateway answers with.
type errorBody struct {
	Error errorObject `json:"error"`
}

type errorObject struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    any    `json:"code"`
}

func writeJSONError(w http.ResponseWriter, status int, msg, typ string, code any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody{Error: errorObject{Message: msg, Type: typ, Code: code}})
}

// HeaderAfterDispatch is set to "true" on an error answer the router returned
// without retry or fallback because a tool call had been sent to the MCP
// server (the guarded behaviour; see ReplayAfterDispatch).
const HeaderAfterDispatch = "X-Replaycheck-After-Dispatch"

// answerError renders the router's final failure: an error body with the
// upstream's status, or, once streamed output was delivered, an SSE error
// event after it.
func (g *Gateway) answerError(w http.ResponseWriter, rs *requestState, err error) {
	var re *routeError
	if !errors.As(err, &re) {
		writeJSONError(w, http.StatusInternalServerError, err.Error(), "server_error", rs.d.errorCode(http.StatusInternalServerError))
		return
	}
	status, obj := g.errorObject(rs, re)
	if rs.delivered() {
		payload, mErr := json.Marshal(errorBody{Error: obj})
		if mErr == nil {
			_ = rs.sink.data(payload)
		}
		return
	}
	if re.afterDispatch {
		w.Header().Set(HeaderAfterDispatch, "true")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody{Error: obj})
}

// errorObject words a final failure as LiteLLM does (seed 000): the error
// class, the provider's message, and the router's note.
func (g *Gateway) errorObject(rs *requestState, re *routeError) (int, errorObject) {
	status := http.StatusInternalServerError
	class, typ, detail := "InternalServerError", "server_error", re.err.Error()
	var ue *upstreamError
	var le *mcpListError
	switch {
	case errors.As(re.err, &ue):
		if ue.Status != 0 {
			status = ue.Status
			class = errorClass(ue.Status)
		} else {
			class = "APIConnectionError"
		}
		if ue.Type != "" {
			typ = ue.Type
		} else if status < 500 {
			typ = "invalid_request_error"
		}
		detail = "OpenAIException - " + rs.d.detail(ue)
	case errors.As(re.err, &le):
		status, class, typ = http.StatusBadGateway, "MCPServerError", "mcp_error"
		detail = le.Error()
	case isContextErr(re.err):
		status, class, typ = 499, "RequestCancelled", "request_cancelled"
	}
	msg := fmt.Sprintf("replaycheck.%s: %s: %s", class, class, detail)
	if !rs.delivered() {
		msg += re.note
	}
	return status, errorObject{Message: msg, Type: typ, Code: rs.d.errorCode(status)}
}

// errorClass names an upstream status like the OpenAI SDKs' error classes.
func errorClass(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "BadRequestError"
	case http.StatusUnauthorized:
		return "AuthenticationError"
	case http.StatusForbidden:
		return "PermissionDeniedError"
	case http.StatusNotFound:
		return "NotFoundError"
	case http.StatusRequestTimeout:
		return "Timeout"
	case http.StatusConflict:
		return "ConflictError"
	case http.StatusUnprocessableEntity:
		return "UnprocessableEntityError"
	case http.StatusTooManyRequests:
		return "RateLimitError"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailableError"
	}
	if status >= 500 {
		return "InternalServerError"
	}
	return "APIError"
}
