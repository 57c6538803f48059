package upstream

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// The default relay client relays plain and streamed answers over one
// kept-alive connection, over HTTP and HTTPS.
func TestRelayDefaultClient(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		name := "http"
		if useTLS {
			name = "https"
		}
		t.Run(name, func(t *testing.T) {
			inner, err := New(Config{Clock: fixedClock})
			if err != nil {
				t.Fatal(err)
			}
			var conns atomic.Int64
			backend := httptest.NewUnstartedServer(inner)
			backend.Config.ConnState = func(_ net.Conn, st http.ConnState) {
				if st == http.StateNew {
					conns.Add(1)
				}
			}
			if useTLS {
				backend.StartTLS()
			} else {
				backend.Start()
			}
			t.Cleanup(backend.Close)
			s, srv, log := newFake(t, Config{Relay: backend.URL})
			if useTLS {
				s.client.Transport.(*http.Transport).TLSClientConfig = backend.Client().Transport.(*http.Transport).TLSClientConfig
			}
			tok := token(t)
			client := openaiClient(srv.URL)
			for range 3 {
				resp, err := client.Chat.Completions.New(context.Background(), chatParams(tok, "commit_write"))
				if err != nil {
					t.Fatalf("relayed call: %v", err)
				}
				diff(t, "arguments", `{"entry":"alpha-`+tok+`"}`, resp.Choices[0].Message.ToolCalls[0].Function.Arguments)
				stream := client.Chat.Completions.NewStreaming(context.Background(), chatParams(tok, "commit_write"))
				var acc openai.ChatCompletionAccumulator
				for stream.Next() {
					acc.AddChunk(stream.Current())
				}
				if err := stream.Err(); err != nil {
					t.Fatalf("relayed stream: %v", err)
				}
				diff(t, "streamed arguments", `{"entry":"alpha-`+tok+`"}`, acc.Choices[0].Message.ToolCalls[0].Function.Arguments)
			}
			diff(t, "backend connections", int64(1), conns.Load())
			diff(t, "log lines", 6, strings.Count(log.String(), "/v1/chat/completions initial forwarded\n"))
		})
	}
}

// closingPeer is a raw HTTP/1.1 peer on loopback, as a provider or as an
// HTTP proxy in front of one: it answers the first request it reads with a
// small chat completion on a kept-alive connection, and after reading the
// second it closes that connection without a byte of answer. Any later
// request is answered again — so a client that re-sends the second request
// on a new connection succeeds, and the peer counts it.
type closingPeer struct {
	addr string
	mu   sync.Mutex
	seen []peerRequest
}

// peerRequest is one request a closingPeer read.
type peerRequest struct {
	conn       int    // which accepted connection carried it, from 1
	requestURI string // as on the request line: absolute-form through a proxy
	key        string // its Idempotency-Key
}

const peerAnswer = `{"id":"chatcmpl-peer","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`

func newClosingPeer(t *testing.T) *closingPeer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &closingPeer{addr: l.Addr().String()}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for n := 1; ; n++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			wg.Go(func() { p.serve(c, n) })
		}
	})
	return p
}

func (p *closingPeer) serve(c net.Conn, conn int) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		p.mu.Lock()
		p.seen = append(p.seen, peerRequest{conn: conn, requestURI: req.RequestURI, key: req.Header.Get("Idempotency-Key")})
		n := len(p.seen)
		p.mu.Unlock()
		if n == 2 {
			return // read it, answer nothing, close
		}
		_, err = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "+
			strconv.Itoa(len(peerAnswer))+"\r\n\r\n"+peerAnswer)
		if err != nil {
			return
		}
	}
}

func (p *closingPeer) requests() []peerRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]peerRequest(nil), p.seen...)
}

// The relay never sends a model request twice. The client sends two
// requests, each with an Idempotency-Key (which the relay passes on, and
// which makes net/http treat a POST as idempotent); the second reaches the
// provider on the connection the first kept alive, and the provider — or
// the HTTP proxy in front of it — closes that connection having read the
// request. net/http re-sends such a request on a new connection when it can
// rewind its body; the relay's cannot be, so the provider sees it once and
// the client gets a 502 recorded as relay_failed.
func TestRelayNeverResends(t *testing.T) {
	for _, viaProxy := range []bool{false, true} {
		name := "provider closes"
		if viaProxy {
			name = "proxy closes"
		}
		t.Run(name, func(t *testing.T) {
			peer := newClosingPeer(t)
			relay := "http://" + peer.addr
			if viaProxy {
				relay = "http://api.provider.test"
			}
			s, srv, log := newFake(t, Config{Relay: relay})
			if viaProxy {
				s.client.Transport.(*http.Transport).Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: peer.addr})
			}
			tok := token(t)
			body := `{"model":"m","messages":[{"role":"user","content":"` + prompt(tok) + `"}]}`
			var statuses []int
			for i := range 2 {
				req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", "key-"+strconv.Itoa(i))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				statuses = append(statuses, resp.StatusCode)
			}
			diff(t, "statuses", []int{http.StatusOK, http.StatusBadGateway}, statuses)
			got := peer.requests()
			uri := "/v1/chat/completions"
			if viaProxy {
				uri = relay + uri
			}
			diff(t, "requests the peer read", []peerRequest{{1, uri, "key-0"}, {1, uri, "key-1"}}, got)
			diff(t, "log", "/v1/chat/completions initial forwarded\n/v1/chat/completions initial relay_failed\n", log.String())
			recs := s.Requests(tok)
			if len(recs) != 2 || recs[1].Outcome != wire.OutcomeRelayFailed || recs[1].Error == "" {
				t.Errorf("records %+v, want the second relay_failed with its error", recs)
			}
		})
	}
}

// An unreachable provider is a 502 logged relay_failed, through the default
// client.
func TestRelayDefaultClientProviderDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, srv, log := newFake(t, Config{Relay: "http://" + addr})
	status, _, _ := post(t, srv.URL+"/v1/responses", `{"input":"hi"}`)
	diff(t, "status", http.StatusBadGateway, status)
	diff(t, "log", "/v1/responses initial relay_failed\n", log.String())
}

// A provider stream that breaks reaches the client as it came, up to the
// break, and then breaks too: the client never sees a clean end. An event
// over the relay's bound is a break as well (not passed on).
func TestRelayProviderBreaksStream(t *testing.T) {
	const head = "data: {\"n\":1}\n\ndata: {\"n\":2}\n\n"
	tests := []struct {
		name string
		tail string // written after head, then the connection is closed
		want string // what the client receives before the break
	}{
		{"mid-event", "data: {\"cut", head + "data: {\"cut"},
		{"event over the bound", "data: " + strings.Repeat("x", maxRelayEvent) + "\n\n", head},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				_, _ = io.WriteString(w, head+tt.tail)
				_ = http.NewResponseController(w).Flush()
				if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
					c.Close()
				}
			}))
			t.Cleanup(backend.Close)
			_, srv, log := newFake(t, Config{Relay: backend.URL})
			resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
				strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err == nil {
				t.Errorf("the client's stream ended cleanly; want a break")
			}
			diff(t, "received", tt.want, string(got))
			diff(t, "log", "/v1/chat/completions initial forwarded\n", log.String())
		})
	}
}
