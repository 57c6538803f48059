// Command loopback is the floor BenchmarkLoopbackFloor compares `replaycheck
// run` with: a plain net/http server and client in one process, on
// 127.0.0.1, making -n round trips, -parallel at once, each a POST of a small
// JSON body answered with a small JSON body, over kept-alive connections —
// what the harness's fakes, gateway and ledger do per scenario with nothing
// else: no scenario, no fault, no MCP session, no record.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
)

func main() {
	n := flag.Int("n", 1000, "round trips")
	parallel := flag.Int("parallel", 1, "round trips at once")
	flag.Parse()
	if err := run(*n, *parallel); err != nil {
		fmt.Fprintln(os.Stderr, "loopback:", err)
		os.Exit(1)
	}
}

func run(n, parallel int) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	answer := []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}`)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: parallel}}
	url := "http://" + ln.Addr().String() + "/v1/chat/completions"
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"Call commit_write once, then reply done."}]}`)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, parallel)
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				resp, err := client.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					errs <- fmt.Errorf("status %d, %v", resp.StatusCode, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}
