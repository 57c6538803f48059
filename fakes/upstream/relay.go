package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/fakes/upstream/cassette"
	"github.com/replaycheck/replaycheck/internal/sse"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// maxRelayEvent bounds one relayed SSE event and each of its lines.
const maxRelayEvent = 4 << 20

// relayHeaders are the request headers passed to the provider: the caller's
// credentials and API options. Their values are never logged.
var relayHeaders = [...]string{
	"Content-Type", "Accept", "User-Agent",
	"Authorization", "Api-Key", "X-Api-Key",
	"Anthropic-Version", "Anthropic-Beta", "Anthropic-Dangerous-Direct-Browser-Access",
	"Openai-Organization", "Openai-Project", "Openai-Beta", "Idempotency-Key",
	"X-Goog-Api-Key", "X-Goog-Api-Client", "X-Goog-User-Project",
}

// hopHeaders are response headers not copied back to the client.
var hopHeaders = [...]string{
	"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade", "Trailer", "Te",
}

// checkRelayURL reports a relay base URL that is not absolute http(s).
func checkRelayURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("upstream relay URL %q: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("upstream relay URL %q: want an absolute http or https URL", s)
	}
	if u.User != nil {
		return fmt.Errorf("upstream relay URL: must not carry credentials; they come from each request")
	}
	if u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		// Request paths are appended to it; a query would end up in the
		// middle of every URL (and may hold a key the banner would show).
		return fmt.Errorf("upstream relay URL: must not carry a query or fragment; want a base URL such as https://api.openai.com")
	}
	return nil
}

// defaultRelayClient bounds connecting and waiting for response headers; a
// stream's body may then take as long as the caller waits.
func defaultRelayClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 5 * time.Minute,
			IdleConnTimeout:       90 * time.Second,
			MaxIdleConns:          256,
			MaxIdleConnsPerHost:   256,
			ForceAttemptHTTP2:     true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// relay forwards the request to the provider and streams its answer back,
// cutting it where the exchange's drop says. The outcome is recorded before
// the last byte reaches the client.
func (s *Server) relay(x *exchange) {
	if d := x.drop(); d != nil && d.After == DropAfterHeaders {
		// As forwarder.py: the provider is not called (no paid request, and
		// the cut does not depend on its answer being a stream).
		x.finish(wire.OutcomeDroppedStream, http.StatusOK)
		x.w.Header().Set("Content-Type", "text/event-stream")
		x.w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(x.w).Flush()
		x.cutStream()
		return
	}
	start := s.clock()
	resp, err := s.send(x)
	if err != nil {
		x.writeError(wire.OutcomeRelayFailed, http.StatusBadGateway, err.Error(), nil)
		return
	}
	defer resp.Body.Close()
	if s.cfg.Record != nil {
		x.tape = newTape(start, s.clock(), resp)
	}
	h := x.w.Header()
	copyResponseHeaders(h, resp.Header)
	isStream := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	if !isStream || resp.StatusCode != http.StatusOK {
		if x.tape != nil {
			s.relayRecordedBody(x, resp)
			return
		}
		x.finish(x.normalOutcome(), resp.StatusCode)
		x.w.WriteHeader(resp.StatusCode)
		s.copyBody(x.w, resp.Body)
		return
	}
	h.Del("Content-Length")
	if x.tape != nil {
		x.tape.entry.Answer.Events = []cassette.Event{}
	}
	s.relayStream(x, resp.Body)
}

// send forwards the exchange's request to the provider through s.client,
// once: the body cannot be rewound, so the transport never re-sends it.
func (s *Server) send(x *exchange) (*http.Response, error) {
	// Errors name the URL without its query, which may carry a key (?key=).
	shown := strings.TrimRight(s.cfg.Relay, "/") + x.r.URL.Path
	target := shown
	if x.r.URL.RawQuery != "" {
		target += "?" + x.r.URL.RawQuery
	}
	req, err := newRelayRequest(x.r.Context(), http.MethodPost, target, x.body)
	if err != nil {
		return nil, fmt.Errorf("relay: building request to %s: %w", shown, err)
	}
	copyRelayHeaders(req.Header, x.r.Header)
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("relay to %s failed: %w", shown, errors.Unwrap(err))
	}
	return resp, nil
}

// newRelayRequest builds a request to the provider whose body net/http
// cannot replay. http.Transport re-sends a request on a new connection when
// a kept-alive one dies under it and the request is "replayable": its body
// can be rewound (GetBody set, as http.NewRequest does for a *bytes.Reader)
// and it is idempotent — which a POST becomes by carrying Idempotency-Key,
// a header relayed from the client. A model call must reach the provider at
// most once per call the client made, so GetBody stays nil and a dead
// connection is an error the client sees. body is not retained.
func newRelayRequest(ctx context.Context, method, target string, body []byte) (*http.Request, error) {
	var rd io.Reader
	if len(body) > 0 {
		rd = bytes.NewReader(bytes.Clone(body))
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, err
	}
	req.GetBody = nil // ContentLength stays set: NewRequest took it from the reader
	return req, nil
}

// relayAncillary forwards a request that is not a model call (model lists,
// token counts) as it is: no classification, no count, no faults.
func (s *Server) relayAncillary(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r, w, s.maxBody, nil)
	if err != nil {
		writeJSON(w, bodyStatus(err), openAIErrorBody(bodyStatus(err), err.Error()))
		return
	}
	shown := strings.TrimRight(s.cfg.Relay, "/") + r.URL.Path // errors omit the query: it may carry a key
	target := shown
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	req, err := newRelayRequest(r.Context(), r.Method, target, body)
	if err != nil {
		writeJSON(w, http.StatusBadGateway, openAIErrorBody(http.StatusBadGateway, fmt.Sprintf("relay: building request to %s: %v", shown, err)))
		return
	}
	copyRelayHeaders(req.Header, r.Header)
	resp, err := s.client.Do(req)
	if err != nil {
		writeJSON(w, http.StatusBadGateway, openAIErrorBody(http.StatusBadGateway, fmt.Sprintf("relay to %s failed: %v", shown, errors.Unwrap(err))))
		return
	}
	defer resp.Body.Close()
	copyResponseHeaders(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	s.copyBody(w, resp.Body)
}

// copyBody copies a provider's body through a pooled buffer and plain
// Writes, so a small answer leaves in one write with its headers (io.Copy
// would take the ResponseWriter's ReadFrom path: headers and body in two
// writes, and a fresh 32 KiB buffer each time). A broken copy reaches the
// client as a short body.
func (s *Server) copyBody(w io.Writer, r io.Reader) {
	bp := s.getBuf()
	defer s.putBuf(bp)
	buf := (*bp)[:cap(*bp)]
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// copyRelayHeaders copies the relayed request headers (credentials included).
func copyRelayHeaders(dst, src http.Header) {
	for _, k := range relayHeaders {
		if v := src.Values(k); len(v) > 0 {
			dst[k] = v
		}
	}
}

// copyResponseHeaders copies a provider's response headers except hop-by-hop ones.
func copyResponseHeaders(dst, src http.Header) {
	for k, v := range src {
		dst[k] = v
	}
	for _, k := range hopHeaders {
		dst.Del(k)
	}
}

// relayStream copies SSE events one by one, flushing each. It holds one
// event back so that the outcome is recorded before the final event leaves.
func (s *Server) relayStream(x *exchange, body io.Reader) {
	rc := http.NewResponseController(x.w)
	cutEvents, cutTool := 0, false
	if d := x.drop(); d != nil {
		switch d.After { // DropAfterHeaders never gets here: relay cuts before sending
		case DropAfterEvents:
			cutEvents = d.Events
		case DropAfterToolCall:
			cutTool = true
		}
	}
	x.w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	events := sse.NewReader(body, maxRelayEvent, maxRelayEvent)
	var held []byte
	written := 0
	// emit writes the held event; a cut after it closes the connection.
	emit := func(final bool) bool {
		cut := !final && cutEvents > 0 && written+1 == cutEvents
		if cut {
			x.finish(wire.OutcomeDroppedStream, http.StatusOK)
		} else if final {
			x.finish(x.normalOutcome(), http.StatusOK)
		}
		if _, err := x.w.Write(held); err != nil {
			return false
		}
		written++
		if err := rc.Flush(); err != nil {
			return false
		}
		if cut {
			x.cutStream()
			return false
		}
		return true
	}
	for {
		ev, err := events.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			// The provider broke its stream (or sent an event over the
			// bound): pass the break on.
			x.finish(x.normalOutcome(), http.StatusOK)
			if held != nil {
				_, _ = x.w.Write(held) // the connection is cut next either way
				_ = rc.Flush()
			}
			x.closeConn(false)
			return
		}
		switch {
		case x.tape == nil:
		case ev.Partial:
			x.tape = nil // the stream ended mid-event: not a whole answer
		case ev.Data != nil: // comments and keep-alives are not kept
			x.tape.event(ev.Name, ev.Data, s.clock())
		case bytes.HasPrefix(bytes.TrimSpace(ev.Raw), []byte("{")):
			x.tape = nil // an object outside the format (Gemini's mid-stream error): the answer failed
		}
		if cutTool && x.de.d.terminal(sseEvent{name: ev.Name, data: ev.Data}) {
			x.finish(wire.OutcomeDroppedStream, http.StatusOK)
			if held != nil {
				_, _ = x.w.Write(held) // the connection is cut next either way
				_ = rc.Flush()
			}
			x.cutStream()
			return
		}
		if held != nil && !emit(false) {
			return
		}
		held = append(held[:0], ev.Raw...)
	}
	if x.tape != nil {
		x.saveTape() // the provider's stream ended whole
	}
	if held == nil {
		x.finish(x.normalOutcome(), http.StatusOK)
		return
	}
	emit(true)
}
