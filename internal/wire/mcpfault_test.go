package wire

import "testing"

func TestMCPFaultMeanings(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range MCPFaultMeanings() {
		if m.Name == "" || seen[m.Name] {
			t.Errorf("row %+v: empty or repeated name", m)
		}
		seen[m.Name] = true
		if m.Words == "" {
			t.Errorf("%s: no words", m.Name)
		}
		if m.EndsCall && m.Ran == ToolRanYes {
			t.Errorf("%s: ends the call in place of the tool's answer, yet the tool ran and the client can tell", m.Name)
		}
	}
	if m, ok := MCPFaultMeaningOf("from_a_newer_version"); ok || m.Words != "fault from_a_newer_version" || m.Ran != ToolRanYes {
		t.Errorf("unknown name gave %+v, %v; want the zero row with its name as words", m, ok)
	}
}

func TestStdioEffect(t *testing.T) {
	tests := []struct {
		effect          StdioEffect
		answered, exits bool
	}{
		{StdioNone, true, false},
		{StdioExitAtStart, false, true},
		{StdioExitBeforeAnswer, false, true},
		{StdioExitAfterAnswer, true, true},
		{StdioHang, false, false},
		{StdioMalformedLine, true, false},
	}
	for _, tt := range tests {
		if got := tt.effect.Answered(); got != tt.answered {
			t.Errorf("%d.Answered() = %v, want %v", tt.effect, got, tt.answered)
		}
		if got := tt.effect.Exits(); got != tt.exits {
			t.Errorf("%d.Exits() = %v, want %v", tt.effect, got, tt.exits)
		}
	}
}

func TestIsExitAfterAnswer(t *testing.T) {
	for _, tt := range []struct {
		end          MCPExitEnd
		fault        string
		wantInFlight bool
	}{
		{MCPExitFault, MCPFaultStdioExitAfterAnswer, false},
		{MCPExitFault, MCPFaultStdioExitAfterExecute, true},
		{MCPExitGone, "", true},
		{MCPExitStdinClosed, "", true},
	} {
		e := MCPEvent{Kind: MCPExit, Tool: "commit_write", End: tt.end, Fault: tt.fault}
		if exit, inFlight := e.IsExit(); !exit || inFlight != tt.wantInFlight {
			t.Errorf("exit %s %s: IsExit = %v, %v; want true, %v", tt.end, tt.fault, exit, inFlight, tt.wantInFlight)
		}
	}
}
