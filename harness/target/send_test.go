package target

import (
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/harness/history"
)

func TestReadStream(t *testing.T) {
	tests := []struct {
		name string
		body string
		want history.Exchange
	}{
		{"chat done", "data: {\"id\":\"a\",\"choices\":[]}\n\ndata: {\"id\":\"a\"}\n\ndata: [DONE]\n\n",
			history.Exchange{DataChunks: 2, Done: true, CleanEnd: true, ResponseIDs: []string{"a"}}},
		{"chat error after chunks", "data: {\"id\":\"a\"}\n\ndata: {\"id\":\"b\"}\n\ndata: {\"error\": {\"message\": \"cut\"}}\n\n",
			history.Exchange{DataChunks: 2, ErrorEvents: 1, CleanEnd: true, ResponseIDs: []string{"a", "b"}}},
		{"responses completed", "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r1\"}}\n\nevent: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r1\"}}\n\n",
			history.Exchange{DataChunks: 2, Done: true, CleanEnd: true, ResponseIDs: []string{"r1"}}},
		{"messages error event", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\"}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\"}}\n\n",
			history.Exchange{DataChunks: 1, ErrorEvents: 1, CleanEnd: true, ResponseIDs: []string{"m1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got history.Exchange
			readStream(strings.NewReader(tt.body), &got)
			got.Body = ""
			if got.DataChunks != tt.want.DataChunks || got.ErrorEvents != tt.want.ErrorEvents || got.Done != tt.want.Done ||
				got.CleanEnd != tt.want.CleanEnd || strings.Join(got.ResponseIDs, ",") != strings.Join(tt.want.ResponseIDs, ",") {
				t.Errorf("(-want +got):\n-%+v\n+%+v", tt.want, got)
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
