package upstream

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
)

// scriptedBackend is a provider that is itself a scripted fake; it counts
// the connections it accepted.
func scriptedBackend(t *testing.T, tlsServer bool) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	inner, err := New(Config{Clock: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(inner)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	if tlsServer {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, &conns
}

// The lean client relays plain and streamed answers over one kept-alive
// connection, over HTTP and HTTPS.
func TestH1Relay(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		name := "http"
		if useTLS {
			name = "https"
		}
		t.Run(name, func(t *testing.T) {
			backend, conns := scriptedBackend(t, useTLS)
			s, srv, log := newFake(t, Config{Relay: backend.URL})
			if s.h1 == nil {
				t.Fatal("relay without Client does not use the lean client")
			}
			if useTLS {
				pool := x509.NewCertPool()
				pool.AddCert(backend.Certificate())
				s.h1.tlsConf.RootCAs = pool
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

// A provider that drops the connection after reading the request gets that
// request once: the relay reports the failure and never re-sends.
func TestH1NoReplay(t *testing.T) {
	var seen atomic.Int64
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(backend.Close)
	_, srv, log := newFake(t, Config{Relay: backend.URL})
	status, body, _ := post(t, srv.URL+"/v1/chat/completions", `{"messages":[{"role":"tool","content":"ok"}]}`)
	diff(t, "status", http.StatusBadGateway, status)
	if !strings.Contains(body, "relay to "+backend.URL+"/v1/chat/completions failed") {
		t.Errorf("body %s", body)
	}
	diff(t, "provider saw", int64(1), seen.Load())
	diff(t, "log", "/v1/chat/completions follow_up relay_failed\n", log.String())
}

func TestH1ProviderDown(t *testing.T) {
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

// An idle connection the provider closed is not reused.
func TestH1StaleConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	c := &h1Client{addr: l.Addr().String(), maxIdle: 4}
	dial := func() *h1Conn {
		pc, err := c.conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return pc
	}
	live, dead := dial(), dial()
	peerLive, peerDead := <-accepted, <-accepted
	defer peerLive.Close()
	peerDead.Close()
	diff(t, "live conn alive", true, live.alive())
	// The closed peer's FIN arrives asynchronously: read until it is seen.
	_ = dead.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := dead.br.Peek(1); err == nil {
		t.Fatal("closed peer sent data")
	}
	_ = dead.SetReadDeadline(time.Time{})
	diff(t, "dead conn alive", false, dead.alive())

	c.put(live)
	c.put(dead)
	old := time.Now().Add(-time.Second)
	live.idleAt, dead.idleAt = old, old
	got := dial()
	if got != live {
		t.Errorf("conn() returned %p, want the live pooled conn %p", got, live)
	}
	var ne net.Error
	if _, err := dead.Read(make([]byte, 1)); !errors.As(err, &ne) && err == nil {
		t.Errorf("the dead conn was not closed")
	}
}
