package wire

import (
	"encoding/json"
	"regexp"
	"slices"
	"testing"
)

var countKeyTexts = []struct {
	text    string
	want    CountKey
	wantErr bool
}{
	{text: "initial", want: CountKey{Kind: KindInitial}},
	{text: "any", want: CountKey{Kind: KindAny}},
	{text: "follow_up injected_500", want: CountKey{Kind: KindFollowUp, Outcome: Injected(500)}},
	{text: "initial dropped_stream", want: CountKey{Kind: KindInitial, Outcome: OutcomeDroppedStream}},
	{text: "follow_up reset", want: CountKey{Kind: KindFollowUp, Outcome: OutcomeReset}},
	{text: "any stalled_stream", want: CountKey{Kind: KindAny, Outcome: OutcomeStalledStream}},
	{text: "followup", wantErr: true},
	{text: "follow_up injected_50", wantErr: true},
	{text: "follow_up injected_0500", wantErr: true},
	{text: "follow_up dropped", wantErr: true},
	{text: "initial forwarded extra", wantErr: true},
	{text: "initial ", wantErr: true},
	{text: "", wantErr: true},
}

// parseCountKey reads a count key as a scenario's loading does.
func parseCountKey(text string) (CountKey, error) {
	var k CountKey
	if err := k.UnmarshalText([]byte(text)); err != nil {
		return CountKey{}, err
	}
	return k, k.Check()
}

func TestCountKeyCheck(t *testing.T) {
	for _, tt := range countKeyTexts {
		t.Run(tt.text, func(t *testing.T) {
			got, err := parseCountKey(tt.text)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseCountKey(%q) = %v, wantErr %v", tt.text, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got != tt.want {
				t.Errorf("parseCountKey(%q) (-want +got):\n-%+v\n+%+v", tt.text, tt.want, got)
			}
			if s := got.String(); s != tt.text {
				t.Errorf("String() = %q, want the text it was read from, %q", s, tt.text)
			}
		})
	}
}

// TestCountKeyText checks that any text reads back as itself, so a
// scenario's key is named as written in a message.
func TestCountKeyText(t *testing.T) {
	for _, text := range []string{"initial", "follow_up injected_500", "initial ", " forwarded", "", "a b c", "any  reset"} {
		var k CountKey
		if err := k.UnmarshalText([]byte(text)); err != nil || k.String() != text {
			t.Errorf("%q reads back as %q (%v)", text, k.String(), err)
		}
	}
}

// TestCountKeyPattern checks that the schema's pattern accepts exactly what
// Check accepts.
func TestCountKeyPattern(t *testing.T) {
	re := regexp.MustCompile(CountKeyPattern())
	for _, tt := range countKeyTexts {
		_, err := parseCountKey(tt.text)
		if got, want := re.MatchString(tt.text), err == nil; got != want {
			t.Errorf("pattern matches %q = %v, Check accepts it = %v", tt.text, got, want)
		}
	}
}

func TestCountKeyCounts(t *testing.T) {
	u := UpstreamRequest{Kind: KindFollowUp, Outcome: Injected(503)}
	tests := []struct {
		key  string
		want bool
	}{
		{"follow_up", true},
		{"any", true},
		{"any injected_503", true},
		{"follow_up injected_503", true},
		{"follow_up injected_500", false},
		{"initial", false},
		{"initial injected_503", false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			k, err := parseCountKey(tt.key)
			if err != nil {
				t.Fatal(err)
			}
			if got := k.Counts(u); got != tt.want {
				t.Errorf("Counts(%+v) = %v, want %v", u, got, tt.want)
			}
		})
	}
}

// TestUpstreamCountsJSON checks that counts keyed by CountKey are written as
// /counts always wrote them ("KIND OUTCOME" keys, in order) and read back.
func TestUpstreamCountsJSON(t *testing.T) {
	var c UpstreamCounts
	c.Add(KindInitial, OutcomeForwarded)
	c.Add(KindFollowUp, Injected(500))
	c.Add(KindFollowUp, OutcomeForwarded)
	c.Add(KindFollowUp, Injected(500))
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"initial":1,"follow_up":3,"outcomes":{"follow_up forwarded":1,"follow_up injected_500":2,"initial forwarded":1}}`
	if string(b) != want {
		t.Errorf("JSON (-want +got):\n-%s\n+%s", want, b)
	}
	var back UpstreamCounts
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if n := back.Outcomes[CountKey{KindFollowUp, Injected(500)}]; n != 2 || len(back.Outcomes) != 3 || back.FollowUp != 3 {
		t.Errorf("round trip: %+v", back)
	}
	// An outcome this version does not know reads back as itself.
	if err := json.Unmarshal([]byte(`{"outcomes":{"initial teleported":1}}`), &back); err != nil || back.Outcomes[CountKey{KindInitial, "teleported"}] != 1 {
		t.Errorf("unknown outcome: %+v, %v", back, err)
	}
	if b, err := json.Marshal(UpstreamCounts{}.Clone()); err != nil || string(b) != `{"initial":0,"follow_up":0,"outcomes":{}}` {
		t.Errorf("empty counts: %s, %v", b, err)
	}
}

func TestMCPCountsClone(t *testing.T) {
	c := MCPCounts{Calls: map[string]int{"commit_write": 2, "read_ledger": 1}}
	d := c.Clone()
	d.Calls["commit_write"]++
	if c.Calls["commit_write"] != 2 || d.CallsTotal() != 4 || c.CallsTotal() != 3 {
		t.Errorf("clone shares its calls: %+v, %+v", c, d)
	}
	if (MCPCounts{}).Clone().Calls == nil {
		t.Error("Clone of zero counts has nil Calls; /counts would write null")
	}
}

// TestMCPCountsAddProtocol: versions are listed once each in the order
// first used; a refused request's and an event without one add nothing; a
// copy taken before an addition keeps its list.
func TestMCPCountsAddProtocol(t *testing.T) {
	var c MCPCounts
	var before MCPCounts
	for i, e := range []MCPEvent{
		{Kind: MCPSessionRefused, Method: "server/discover", Protocol: MCPProtocol20260728},
		{Kind: MCPSession, Method: "initialize", Protocol: MCPProtocol20251125},
		{Kind: MCPCall, Tool: "commit_write", Protocol: MCPProtocol20251125},
		{Kind: MCPWrite, Tool: "commit_write"},
		{Kind: MCPCall, Tool: "commit_write", Protocol: MCPProtocol20260728},
		{Kind: MCPSession, Method: "initialize", Protocol: MCPProtocol20250618},
	} {
		if i == 4 {
			before = c
		}
		c.AddProtocol(e)
	}
	want := []MCPProtocol{MCPProtocol20251125, MCPProtocol20260728, MCPProtocol20250618}
	if !slices.Equal(c.Protocols, want) {
		t.Errorf("Protocols = %v, want %v", c.Protocols, want)
	}
	if want := []MCPProtocol{MCPProtocol20251125}; !slices.Equal(before.Protocols, want) {
		t.Errorf("a copy's Protocols = %v after additions to the original, want %v", before.Protocols, want)
	}
}
