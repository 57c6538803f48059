package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// BenchmarkRelay compares, over loopback with keep-alive, a direct request
// to a local backend with the same request through our relay (every request
// parsed and classified, faults armed but not firing), through a default
// httputil.ReverseProxy and, when REPLAYCHECK_TOXIPROXY names a toxiproxy
// v2.12.0 server binary, through toxiproxy with no toxics: p50 latency at
// concurrency 1 (requests alternate between the targets) and requests per
// second at concurrency 32 (bursts alternate).
func BenchmarkRelay(b *testing.B) {
	answer := []byte(`{"id":"chatcmpl-rc0123456789-1","object":"chat.completion","created":1700000000,"model":"repro-model","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,"annotations":[],"tool_calls":[{"id":"call_rc0123456789_1_0","type":"function","function":{"name":"ledger-commit_write","arguments":"{\"entry\":\"alpha-rc0123456789\",\"note\":\"` + strings.Repeat("replaycheck ", 40) + `\"}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":180,"completion_tokens":120,"total_tokens":300},"system_fingerprint":null}`)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(answer)))
		_, _ = w.Write(answer)
	}))
	defer backend.Close()

	relay, err := New(Config{Relay: backend.URL, Log: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	armed := []Fault{
		{On: wire.KindFollowUp, Respond: &Respond{Status: 500}},
		{Endpoint: "messages", Reset: true},
	}
	if err := relay.Arm("", nil, armed); err != nil {
		b.Fatal(err)
	}
	relaySrv := httptest.NewServer(relay)
	defer relaySrv.Close()
	bu, _ := url.Parse(backend.URL)
	rp := httptest.NewServer(httputil.NewSingleHostReverseProxy(bu))
	defer rp.Close()

	names := []string{"direct", "relay", "reverseproxy"}
	urls := []string{backend.URL, relaySrv.URL, rp.URL}
	if bin := os.Getenv("REPLAYCHECK_TOXIPROXY"); bin != "" {
		names = append(names, "toxiproxy")
		urls = append(urls, startToxiproxy(b, bin, bu.Host))
	}
	for i, u := range urls {
		got := fetch(b, http.DefaultClient, u)
		if !bytes.Equal(got, answer) {
			b.Fatalf("%s answered %d bytes, want the backend's %d", names[i], len(got), len(answer))
		}
	}
	if c := relay.Total(); c.Initial != 1 || c.Outcomes[countKey("initial forwarded")] != 1 {
		b.Fatalf("relay counts %+v", c)
	}

	b.Run("c1", func(b *testing.B) {
		clients := make([]*http.Client, len(urls))
		lat := make([][]time.Duration, len(urls))
		for i := range clients {
			clients[i] = benchClient()
			fetch(b, clients[i], urls[i])
		}
		for b.Loop() {
			for i, u := range urls {
				start := time.Now()
				fetch(b, clients[i], u)
				lat[i] = append(lat[i], time.Since(start))
			}
		}
		p50 := make([]float64, len(urls))
		for i := range lat {
			slices.Sort(lat[i])
			p50[i] = float64(lat[i][len(lat[i])/2].Nanoseconds()) / 1e3
			b.ReportMetric(p50[i], names[i]+"-p50-µs")
			if i > 0 {
				b.ReportMetric(p50[i]-p50[0], names[i]+"-added-µs")
			}
		}
	})
	b.Run("c32", func(b *testing.B) {
		const conc, per = 32, 8
		clients := make([]*http.Client, len(urls))
		for i := range clients {
			clients[i] = benchClient()
		}
		spent := make([]time.Duration, len(urls))
		done := make([]int, len(urls))
		for b.Loop() {
			for i, u := range urls {
				spent[i] += fetchConcurrently(b, clients[i], u, conc, per)
				done[i] += conc * per
			}
		}
		for i := range urls {
			b.ReportMetric(float64(done[i])/spent[i].Seconds(), names[i]+"-req/s")
		}
	})
}

// startToxiproxy runs the toxiproxy server binary and returns the URL of a
// proxy, without toxics, to upstream (host:port).
func startToxiproxy(b *testing.B, bin, upstream string) string {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	api := l.Addr().String()
	l.Close()
	host, port, _ := net.SplitHostPort(api)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, bin, "-host", host, "-port", port)
	cmd.Env = append(os.Environ(), "LOG_LEVEL=error")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("starting toxiproxy: %v", err)
	}
	b.Cleanup(func() { cancel(); _ = cmd.Wait() })
	go func() { _, _ = io.Copy(io.Discard, bufio.NewReader(out)) }()
	// The API comes up shortly after start; retry creating the proxy for a
	// bounded time.
	body, _ := json.Marshal(map[string]string{"name": "bench", "listen": "127.0.0.1:0", "upstream": upstream})
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Post("http://"+api+"/proxies", "application/json", bytes.NewReader(body))
		if err == nil {
			defer resp.Body.Close()
			var p struct{ Listen string }
			if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != http.StatusCreated {
				b.Fatalf("creating toxiproxy proxy: status %d, %v", resp.StatusCode, err)
			}
			return "http://" + p.Listen
		}
		if time.Now().After(deadline) {
			b.Fatalf("toxiproxy API at %s did not come up: %v", api, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
