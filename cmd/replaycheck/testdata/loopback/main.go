// Command loopback is the floor BenchmarkLoopbackFloor compares `replaycheck
// run` with: a plain net/http server and client in one process, on
// 127.0.0.1, making -n round trips, -parallel at once, each a POST of a small
// JSON body answered with a small JSON body, over kept-alive connections —
// what the harness's fakes, gateway and ledger do per scenario with nothing
// else: no scenario, no fault, no MCP session, no record.
//
// With -tool-calls M it also makes M MCP tools/calls, mixed in with the
// round trips, through the official MCP Go SDK (the library the ledger and the
// built-in gateway speak MCP with): one server with one typed tool that
// appends its argument to a slice, over Streamable HTTP, and one client
// session. That is the floor the chosen MCP library sets: the same exchanges
// with nothing of the harness around them.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	n := flag.Int("n", 1000, "round trips")
	toolCalls := flag.Int("tool-calls", 0, "MCP tools/calls through the Go SDK, besides the round trips")
	parallel := flag.Int("parallel", 1, "round trips at once")
	flag.Parse()
	if err := run(*n, *toolCalls, *parallel); err != nil {
		fmt.Fprintln(os.Stderr, "loopback:", err)
		os.Exit(1)
	}
}

func run(n, toolCalls, parallel int) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	answer := []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}`)
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	})
	server := ledger()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: parallel + 1}}
	base := "http://" + ln.Addr().String()
	var session *mcp.ClientSession
	if toolCalls > 0 {
		c := mcp.NewClient(&mcp.Implementation{Name: "loopback"}, nil)
		session, err = c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: client}, nil)
		if err != nil {
			return err
		}
		defer session.Close()
	}
	url := base + "/v1/chat/completions"
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"Call commit_write once, then reply done."}]}`)
	var trips, calls atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, parallel)
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				trip, call := trips.Add(1) <= int64(n), calls.Add(1) <= int64(toolCalls)
				if !trip && !call {
					return
				}
				if trip {
					if err := post(client, url, body); err != nil {
						errs <- err
						return
					}
				}
				if call {
					args := map[string]any{"entry": "alpha"}
					if _, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "commit_write", Arguments: args}); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// post makes one round trip: body posted to url, the answer read whole.
func post(client *http.Client, url string, body []byte) error {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d, %v", resp.StatusCode, err)
	}
	return nil
}

// entry is commit_write's input.
type entry struct {
	Entry string `json:"entry" jsonschema:"the line to append"`
}

// ledger is an MCP server with one tool, commit_write, that appends its
// entry to a slice.
func ledger() *mcp.Server {
	var mu sync.Mutex
	var lines []string
	s := mcp.NewServer(&mcp.Implementation{Name: "loopback-ledger"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "commit_write"}, func(_ context.Context, _ *mcp.CallToolRequest, in entry) (*mcp.CallToolResult, any, error) {
		mu.Lock()
		lines = append(lines, in.Entry)
		mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "written"}}}, nil, nil
	})
	return s
}
