package upstream_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/replaycheck/replaycheck/fakes/upstream"
)

// The fake model answers a chat request that offers commit_write with the
// default script's call: commit_write with the entry the prompt names.
func ExampleServer() {
	fake, err := upstream.New(upstream.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(fake)
	defer srv.Close()

	body := `{"model": "gpt-4o", "messages": [{"role": "user", "content": "Call commit_write once with entry alpha-rc0123456789, then reply done."}],
		"tools": [{"type": "function", "function": {"name": "commit_write", "parameters": {"type": "object"}}}]}`
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	var answer struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range answer.Choices[0].Message.ToolCalls {
		fmt.Println(c.Function.Name, c.Function.Arguments)
	}
	fmt.Println(fake.Counts("rc0123456789").Initial, "initial request")
	// Output:
	// commit_write {"entry":"alpha-rc0123456789"}
	// 1 initial request
}
