package wire

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/duration"
)

func TestOutcome(t *testing.T) {
	tests := []struct {
		name         string
		o            Outcome
		wantStatus   int
		wantInjected bool
		wantKnown    bool
		wantCut      bool
		wantDropped  bool
	}{
		{name: "forwarded", o: OutcomeForwarded, wantKnown: true},
		{name: "dropped stream", o: OutcomeDroppedStream, wantKnown: true, wantCut: true, wantDropped: true},
		{name: "reset", o: OutcomeReset, wantKnown: true, wantCut: true},
		{name: "injected 500", o: Injected(500), wantStatus: 500, wantInjected: true, wantKnown: true},
		{name: "injected 429 by name", o: "injected_429", wantStatus: 429, wantInjected: true, wantKnown: true},
		{name: "injected out of range", o: "injected_600"},
		{name: "injected padded", o: "injected_0500"},
		{name: "injected word", o: "injected_x"},
		{name: "misspelt", o: "forwarded_"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ok := tt.o.Injected()
			if s != tt.wantStatus || ok != tt.wantInjected {
				t.Errorf("Injected() = %d, %v, want %d, %v", s, ok, tt.wantStatus, tt.wantInjected)
			}
			if got := tt.o.Known(); got != tt.wantKnown {
				t.Errorf("Known() = %v, want %v", got, tt.wantKnown)
			}
			if got := tt.o.Cut(); got != tt.wantCut {
				t.Errorf("Cut() = %v, want %v", got, tt.wantCut)
			}
			if got := tt.o.Dropped(); got != tt.wantDropped {
				t.Errorf("Dropped() = %v, want %v", got, tt.wantDropped)
			}
		})
	}
}

// TestFactsJSON checks that typed facts are written as the plain strings
// saved histories hold, and read back.
func TestFactsJSON(t *testing.T) {
	in := UpstreamRequest{At: duration.Duration(1500 * time.Microsecond), Kind: "follow_up", Outcome: Injected(503)}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"at":"1.5ms","path":"","kind":"follow_up","outcome":"injected_503"}`
	if string(b) != want {
		t.Errorf("JSON (-want +got):\n-%s\n+%s", want, b)
	}
	var back UpstreamRequest
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.At != in.At || back.Outcome != in.Outcome {
		t.Errorf("round trip: %+v", back)
	}
	var e MCPEvent
	if err := json.Unmarshal([]byte(`{"at":"2s","kind":"cancelled"}`), &e); err != nil || e.Kind != MCPCancelled || e.At.D() != 2*time.Second {
		t.Errorf("MCP event: %+v, %v", e, err)
	}
}
