package upstream

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// benchBody is the seed's chat request with a run token.
const benchBody = `{"model":"repro-model","messages":[{"role":"system","content":"You record ledger entries with the tools you are given. Call each tool exactly as asked and answer briefly."},{"role":"user","content":"Call the commit_write tool exactly once with entry alpha-rc0123456789, then reply done."}],"tools":[{"type":"function","function":{"name":"ledger-commit_write","description":"Append one entry to the ledger file.","parameters":{"type":"object","properties":{"entry":{"type":"string"}},"required":["entry"]}}},{"type":"function","function":{"name":"ledger-read_ledger","description":"Return the entries.","parameters":{"type":"object","properties":{}}}}]}`

// benchScript makes the answer about 1 KB.
var benchScript = Script{Steps: []Step{
	{Call: "commit_write", Arguments: map[string]any{"entry": "{{entry}}", "note": string(bytes.Repeat([]byte("replaycheck "), 36))}},
	{Say: "done"},
}}

// BenchmarkChatCompletion compares a scripted chat completion through the
// fake with a bare net/http handler returning the same fixed answer, over
// loopback with keep-alive: p50 latency at concurrency 1 and requests per
// second at concurrency 32.
func BenchmarkChatCompletion(b *testing.B) {
	fake, err := New(Config{Script: benchScript, Log: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	fakeSrv := httptest.NewServer(fake)
	defer fakeSrv.Close()
	answer := fetch(b, http.DefaultClient, fakeSrv.URL)
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(answer)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(answer)
	}))
	defer bare.Close()
	b.Logf("answer is %d bytes", len(answer))

	targets := []string{fakeSrv.URL, bare.URL}
	names := []string{"fake", "bare"}

	// Concurrency 1: requests alternate between the fake and the bare
	// handler, so load from anything else on the machine hits both alike.
	b.Run("c1", func(b *testing.B) {
		clients := []*http.Client{benchClient(), benchClient()}
		lat := [2][]time.Duration{}
		for i, u := range targets {
			fetch(b, clients[i], u) // warm the connection
		}
		for b.Loop() {
			for i, u := range targets {
				start := time.Now()
				fetch(b, clients[i], u)
				lat[i] = append(lat[i], time.Since(start))
			}
		}
		var p50 [2]float64
		for i := range lat {
			slices.Sort(lat[i])
			p50[i] = float64(lat[i][len(lat[i])/2].Nanoseconds()) / 1e3
			b.ReportMetric(p50[i], names[i]+"-p50-µs")
		}
		b.ReportMetric(p50[0]/p50[1], "p50-ratio")
	})

	// Concurrency 32: each iteration is a burst of 32 clients × 8 requests
	// against the fake, then the same against the bare handler.
	b.Run("c32", func(b *testing.B) {
		const conc, per = 32, 8
		clients := []*http.Client{benchClient(), benchClient()}
		var spent [2]time.Duration
		var done [2]int
		for b.Loop() {
			for i, u := range targets {
				spent[i] += fetchConcurrently(b, clients[i], u, conc, per)
				done[i] += conc * per
			}
		}
		var rps [2]float64
		for i := range rps {
			rps[i] = float64(done[i]) / spent[i].Seconds()
			b.ReportMetric(rps[i], names[i]+"-req/s")
		}
		b.ReportMetric(rps[0]/rps[1], "rps-ratio")
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
		b.ReportMetric(float64(ms.Sys)/(1<<20), "sys-MB")
	})
}

func benchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64}}
}

// fetchConcurrently sends conc*per chat requests to url with client, from
// conc goroutines at once, and returns how long they took.
func fetchConcurrently(b testing.TB, client *http.Client, url string, conc, per int) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for range per {
				fetch(b, client, url)
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

func fetch(b testing.TB, client *http.Client, url string) []byte {
	resp, err := client.Post(url+"/v1/chat/completions", "application/json", bytes.NewReader([]byte(benchBody)))
	if err != nil {
		b.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	return body
}
