package ledger

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/itemserver"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestForwardStdioFaults: each stdio fault kind acts at the forwarding
// point on a call from a ledger-stdio process: before_execute refuses the
// call before it is forwarded (the server runs nothing), the others forward
// it (the server runs it once, the forwarder records the write) and tell
// the process to die, hang or break its stdout before or after the answer.
func TestForwardStdioFaults(t *testing.T) {
	const token = "rcfwdstdio01"
	tests := []struct {
		name      string
		fault     Fault
		directive string
		wantItems int
		wantExit  bool
	}{
		{"exit before execute", Fault{StdioExit: &StdioExit{At: StdioExitBeforeExecute}}, wire.MCPFaultStdioExitBeforeExecute, 0, true},
		{"exit after execute", Fault{StdioExit: &StdioExit{At: StdioExitAfterExecute}}, wire.MCPFaultStdioExitAfterExecute, 1, true},
		{"exit after answer", Fault{StdioExit: &StdioExit{At: StdioExitAfterAnswer}}, wire.MCPFaultStdioExitAfterAnswer, 1, true},
		{"hang", Fault{StdioHang: &StdioHang{}}, wire.MCPFaultStdioHang, 1, false},
		{"malformed line", Fault{StdioMalformedLine: &StdioMalformedLine{}}, wire.MCPFaultStdioMalformedLine, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is, url, _ := itemserver.ServeHTTP(t)
			s, _ := newLedger(t, Config{Forward: &Forward{URL: url}})
			ledgerURL := ownAddress(t, s, token)
			f := tt.fault
			f.Tool, f.Times = "create_item", fault.Once
			if err := s.Arm(token, []Fault{f}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := contextT()
			defer cancel()
			cs, err := stdioClient(t, ctx, ledgerURL, "4711")
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := callTool(t, cs, "create_item", map[string]any{"name": "a"})
			if err != nil {
				t.Fatal(err)
			}
			name := tt.directive
			if d, _ := res.Meta[StdioFaultMeta].(string); d != name {
				t.Errorf("directive %q, want %q", d, name)
			}
			if items := first(is.Record()); len(items) != tt.wantItems {
				t.Errorf("server created %v, want %d items", items, tt.wantItems)
			}
			c := s.Counts(token)
			if c.Writes != tt.wantItems || c.Exits != b2i(tt.wantExit) {
				t.Errorf("counts %+v: want %d writes, %d exits", c, tt.wantItems, b2i(tt.wantExit))
			}
			var faults []string
			for _, e := range s.Events(token) {
				if e.Kind == wire.MCPFault {
					faults = append(faults, e.Fault)
				}
			}
			if diff := cmp.Diff([]string{name}, faults); diff != "" {
				t.Errorf("fault events (-want +got):\n%s", diff)
			}
		})
	}
}

// b2i is 1 for true.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// first returns the first of two values.
func first[A, B any](a A, _ B) A { return a }
