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
