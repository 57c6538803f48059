package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
)

func TestReadStream(t *testing.T) {
	tests := []struct {
		name string
		body string
		want history.Exchange
	}{
		{"chat done", "data: {\"id\":\"a\",\"choices\":[]}\n\ndata: {\"id\":\"a\"}\n\ndata: [DONE]\n\n",
			history.Exchange{DataChunks: 2, Done: true, CleanEnd: true, ResponseIDs: []string{"a"}}},
		{"chat models", "data: {\"id\":\"a\",\"model\":\"m1\"}\n\ndata: {\"id\":\"a\",\"model\":\"m2\"}\n\ndata: {\"id\":\"a\",\"model\":\"m1\"}\n\ndata: [DONE]\n\n",
			history.Exchange{DataChunks: 3, Done: true, CleanEnd: true, ResponseIDs: []string{"a"}, Models: []string{"m1", "m2"}}},
		{"responses model", "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r1\",\"model\":\"gpt-x\"}}\n\nevent: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n",
			history.Exchange{DataChunks: 2, CleanEnd: true, ResponseIDs: []string{"r1"}, Models: []string{"gpt-x"}}},
		{"messages model", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"model\":\"claude-x\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
			history.Exchange{DataChunks: 2, Done: true, CleanEnd: true, ResponseIDs: []string{"m1"}, Models: []string{"claude-x"}}},
		{"chat error after chunks", "data: {\"id\":\"a\"}\n\ndata: {\"id\":\"b\"}\n\ndata: {\"error\": {\"message\": \"cut\"}}\n\n",
			history.Exchange{DataChunks: 2, ErrorEvents: 1, CleanEnd: true, ResponseIDs: []string{"a", "b"}}},
		{"responses completed", "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r1\"}}\n\nevent: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r1\"}}\n\n",
			history.Exchange{DataChunks: 2, Done: true, CleanEnd: true, ResponseIDs: []string{"r1"}}},
		{"gemini finished", "data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\"}}],\"role\":\"model\"},\"index\":0}],\"modelVersion\":\"gemini-x\",\"responseId\":\"g1\"}\n\ndata: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\"}],\"role\":\"model\"},\"finishReason\":\"STOP\",\"index\":0}],\"modelVersion\":\"gemini-x\",\"responseId\":\"g1\"}\n\n",
			history.Exchange{DataChunks: 2, Done: true, CleanEnd: true, ResponseIDs: []string{"g1"}, Models: []string{"gemini-x"}}},
		{"gemini error object", "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]},\"index\":0}],\"responseId\":\"g1\"}\n\n{\n  \"error\": {\n    \"code\": 503,\n    \"message\": \"overloaded\",\n    \"status\": \"UNAVAILABLE\"\n  }\n}\n",
			history.Exchange{DataChunks: 1, ErrorEvents: 1, CleanEnd: true, ResponseIDs: []string{"g1"}}},
		{"not an error object", "data: {\"id\":\"a\"}\n\n{\"errors\": 1}\n\n: keep-alive\n\n",
			history.Exchange{DataChunks: 1, CleanEnd: true, ResponseIDs: []string{"a"}}},
		{"messages error event", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\"}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\"}}\n\n",
			history.Exchange{DataChunks: 1, ErrorEvents: 1, CleanEnd: true, ResponseIDs: []string{"m1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got history.Exchange
			readStream(strings.NewReader(tt.body), &got)
			got.Body = ""
			if got.DataChunks != tt.want.DataChunks || got.ErrorEvents != tt.want.ErrorEvents || got.Done != tt.want.Done ||
				got.CleanEnd != tt.want.CleanEnd || strings.Join(got.ResponseIDs, ",") != strings.Join(tt.want.ResponseIDs, ",") ||
				strings.Join(got.Models, ",") != strings.Join(tt.want.Models, ",") {
				t.Errorf("(-want +got):\n-%+v\n+%+v", tt.want, got)
			}
		})
	}
}

func TestSendNotesModelOfPlainAnswer(t *testing.T) {
	tests := []struct {
		name     string
		endpoint scenario.Endpoint
		body     string
		want     []string
	}{
		{"chat", "chat", `{"id":"c1","model":"gpt-served","choices":[]}`, []string{"gpt-served"}},
		{"responses", "responses", `{"id":"r1","object":"response","model":"gpt-served","output":[]}`, []string{"gpt-served"}},
		{"messages", "messages", `{"id":"m1","type":"message","model":"claude-served","content":[]}`, []string{"claude-served"}},
		{"gemini", "gemini", `{"candidates":[],"modelVersion":"gemini-served","responseId":"g1"}`, []string{"gemini-served"}},
		{"error", "chat", `{"error":{"message":"no"}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(tt.body))
			}))
			t.Cleanup(srv.Close)
			s := &Client{base: srv.URL, client: srv.Client(), body: seedBody}
			got := s.Send(context.Background(), scenario.Request{Endpoint: tt.endpoint})
			if strings.Join(got.Models, ",") != strings.Join(tt.want, ",") {
				t.Errorf("models (-want +got):\n-%q\n+%q", tt.want, got.Models)
			}
		})
	}
}

// readStream reads events as the event-stream format defines them (as
// internal/sse does): data lines join into one event, an event's name holds
// for its whole block, a stream cut mid-event counts what came and ends
// unclean, and a line over the bound is a transport error.
func TestReadStreamEvents(t *testing.T) {
	tests := []struct {
		name          string
		body          string
		want          history.Exchange
		wantTransport bool
		wantBody      string
	}{
		{"crlf and blank lines", "\r\ndata: {\"id\":\"a\"}\r\n\r\n\r\ndata: [DONE]\r\n\r\n",
			history.Exchange{DataChunks: 1, Done: true, CleanEnd: true, ResponseIDs: []string{"a"}}, false,
			"data: {\"id\":\"a\"}\ndata: [DONE]\n"},
		{"data lines are one event", "data: {\"id\":\ndata: \"a\"}\n\n",
			history.Exchange{DataChunks: 1, CleanEnd: true, ResponseIDs: []string{"a"}}, false,
			"data: {\"id\":\ndata: \"a\"}\n"},
		{"name after the data", "data: {\"message\":\"overloaded\"}\nevent: error\n\n",
			history.Exchange{ErrorEvents: 1, CleanEnd: true}, false,
			"data: {\"message\":\"overloaded\"}\nevent: error\n"},
		{"cut mid-event", "data: {\"id\":\"a\"}\n\ndata: {\"id\":\"b\"", // then EOF: CleanEnd is the body's, not the event's
			history.Exchange{DataChunks: 2, CleanEnd: true, ResponseIDs: []string{"a"}}, false,
			"data: {\"id\":\"a\"}\ndata: {\"id\":\"b\"\n"},
		{"line over the bound", "data: {\"id\":\"a\"}\n\ndata: " + strings.Repeat("x", maxLineBytes) + "\n\n",
			history.Exchange{DataChunks: 1, ResponseIDs: []string{"a"}}, true,
			"data: {\"id\":\"a\"}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got history.Exchange
			readStream(strings.NewReader(tt.body), &got)
			if got.DataChunks != tt.want.DataChunks || got.ErrorEvents != tt.want.ErrorEvents || got.Done != tt.want.Done ||
				got.CleanEnd != tt.want.CleanEnd || strings.Join(got.ResponseIDs, ",") != strings.Join(tt.want.ResponseIDs, ",") ||
				(got.TransportError != "") != tt.wantTransport {
				t.Errorf("(-want +got):\n-%+v transport error %v\n+%+v", tt.want, tt.wantTransport, got)
			}
			if got.Body != tt.wantBody {
				t.Errorf("body (-want +got):\n-%q\n+%q", tt.wantBody, got.Body)
			}
		})
	}
}
