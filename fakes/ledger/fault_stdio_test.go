package ledger

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// stdioClient connects to url as a ledger-stdio process does (its requests
// carry StdioSpawnHeader with pid), or as a plain HTTP client when pid is "".
func stdioClient(t *testing.T, ctx context.Context, url, pid string) (*mcp.ClientSession, error) {
	t.Helper()
	hc := http.DefaultClient
	if pid != "" {
		hc = &http.Client{Transport: headerTransport{StdioSpawnHeader, pid}}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, nil)
}

// TestStdioFaultDirectives: a stdio fault fires only on calls from a
// ledger-stdio process, per its times, and tells the process in the
// result's _meta (StdioFaultMeta); over plain HTTP it never matches, so it
// is armed and never fired, and no result carries a directive. The ledger
// records the fault, and the process's end when the fault ends it.
func TestStdioFaultDirectives(t *testing.T) {
	const token = "rcstdiodir01"
	for _, tt := range []struct {
		name  string
		fault Fault
		pid   string // "" a plain HTTP client
		// want is each of three calls' directive ("" none).
		want        []string
		wantWrites  int
		wantMatched int
		wantExits   int
		wantResults int
	}{
		{
			name:  "exit before execute, once",
			fault: Fault{Tool: ToolCommitWrite, StdioExit: &StdioExit{At: StdioExitBeforeExecute}, Times: fault.Once},
			pid:   "11", want: []string{wire.MCPFaultStdioExitBeforeExecute, "", ""},
			wantWrites: 2, wantMatched: 3, wantExits: 1, wantResults: 2,
		},
		{
			name:  "exit after execute (default), nth 2",
			fault: Fault{StdioExit: &StdioExit{}, Times: fault.Times{Nth: 2}},
			pid:   "12", want: []string{"", wire.MCPFaultStdioExitAfterExecute, ""},
			wantWrites: 3, wantMatched: 3, wantExits: 1, wantResults: 2,
		},
		{
			name:  "exit after answer, always",
			fault: Fault{StdioExit: &StdioExit{At: StdioExitAfterAnswer}},
			pid:   "13", want: []string{wire.MCPFaultStdioExitAfterAnswer, wire.MCPFaultStdioExitAfterAnswer, wire.MCPFaultStdioExitAfterAnswer},
			// One process ends once: the later directives record no exit.
			wantWrites: 3, wantMatched: 3, wantExits: 1, wantResults: 3,
		},
		{
			name:  "hang, 2 times",
			fault: Fault{Tool: ToolCommitWrite, StdioHang: &StdioHang{}, Times: countTimes(2)},
			pid:   "14", want: []string{wire.MCPFaultStdioHang, wire.MCPFaultStdioHang, ""},
			wantWrites: 3, wantMatched: 3, wantResults: 1,
		},
		{
			name:  "malformed line, once",
			fault: Fault{StdioMalformedLine: &StdioMalformedLine{}, Times: fault.Once},
			pid:   "15", want: []string{wire.MCPFaultStdioMalformedLine, "", ""},
			wantWrites: 3, wantMatched: 3, wantResults: 3,
		},
		{
			name:  "exit over plain HTTP never matches",
			fault: Fault{StdioExit: &StdioExit{}},
			want:  []string{"", "", ""}, wantWrites: 3, wantResults: 3,
		},
		{
			name:  "hang over plain HTTP never matches",
			fault: Fault{StdioHang: &StdioHang{}},
			want:  []string{"", "", ""}, wantWrites: 3, wantResults: 3,
		},
		{
			name:  "a tool the fault does not name",
			fault: Fault{Tool: ToolReadLedger, StdioExit: &StdioExit{}},
			pid:   "16", want: []string{"", "", ""}, wantWrites: 3, wantResults: 3,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newLedger(t, Config{})
			url := ownAddress(t, s, token)
			if err := s.Arm(token, []Fault{tt.fault}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := contextT()
			defer cancel()
			cs, err := stdioClient(t, ctx, url, tt.pid)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			var got []string
			for i := range 3 {
				res, err := callTool(t, cs, ToolCommitWrite, map[string]any{"entry": "e" + string(rune('0'+i))})
				if err != nil {
					t.Fatalf("call %d: %v", i+1, err)
				}
				d, _ := res.Meta[StdioFaultMeta].(string)
				got = append(got, d)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("directives of the three calls (-want +got):\n%s", diff)
			}
			fired := 0
			for _, d := range tt.want {
				if d != "" {
					fired++
				}
			}
			if r := s.FaultReports(token); len(r) != 1 || r[0].Matched != tt.wantMatched || r[0].Fired != fired {
				t.Errorf("fault reports = %+v, want %d matched, %d fired", r, tt.wantMatched, fired)
			}
			c := s.Counts(token)
			if c.Writes != tt.wantWrites || c.Exits != tt.wantExits {
				t.Errorf("counts = %+v, want %d writes, %d exits", c, tt.wantWrites, tt.wantExits)
			}
			var faults []string
			results, exits := 0, 0
			for _, e := range s.Events(token) {
				switch {
				case e.Kind == wire.MCPFault:
					faults = append(faults, e.Fault)
					if e.PID != tt.pid {
						t.Errorf("fault event %+v: pid %q, want %q", e, e.PID, tt.pid)
					}
				case e.Kind == wire.MCPResult:
					results++
				case e.Kind == wire.MCPExit:
					exits++
					if e.PID != tt.pid || e.Tool != ToolCommitWrite || e.RequestID == "" || e.End != wire.MCPExitFault || !strings.HasPrefix(e.Fault, "stdio_exit_") {
						t.Errorf("exit event %+v: want the fault's, with pid %s and the call", e, tt.pid)
					}
				}
			}
			var wantFaults []string
			for _, d := range tt.want {
				if d != "" {
					wantFaults = append(wantFaults, d)
				}
			}
			if diff := cmp.Diff(wantFaults, faults); diff != "" {
				t.Errorf("fault events (-want +got):\n%s", diff)
			}
			if results != tt.wantResults || exits != tt.wantExits {
				t.Errorf("%d result and %d exit events, want %d and %d", results, exits, tt.wantResults, tt.wantExits)
			}
		})
	}
}

// TestStdioExitAtStart: stdio_exit at start refuses the initialize of a
// ledger-stdio process (503, StdioFaultHeader) per its times, counted over
// spawns; a plain HTTP client's initialize is not a spawn and is never
// matched.
func TestStdioExitAtStart(t *testing.T) {
	const token = "rcstdiostart"
	s, _ := newLedger(t, Config{})
	url := ownAddress(t, s, token)
	if err := s.Arm(token, []Fault{{Method: MethodInitialize, StdioExit: &StdioExit{At: StdioExitAtStart}, Times: countTimes(2)}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := contextT()
	defer cancel()
	plain, err := stdioClient(t, ctx, url, "")
	if err != nil {
		t.Fatalf("a plain HTTP client's initialize: %v", err)
	}
	_ = plain.Close()
	for i, pid := range []string{"21", "22"} {
		if cs, err := stdioClient(t, ctx, url, pid); err == nil {
			_ = cs.Close()
			t.Fatalf("spawn %d: initialize succeeded, want it refused", i+1)
		}
	}
	// The refusal, as the process sees it.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(StdioSpawnHeader, "23")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusServiceUnavailable || resp.Header.Get(StdioFaultHeader) != "" {
		t.Errorf("third spawn: %s with %s %q, want it served (times 2)", resp.Status, StdioFaultHeader, resp.Header.Get(StdioFaultHeader))
	}
	c := s.Counts(token)
	if c.Spawns != 3 || c.Exits != 2 {
		t.Errorf("counts = %+v, want 3 spawns, 2 exits", c)
	}
	if r := s.FaultReports(token); r[0].Matched != 3 || r[0].Fired != 2 {
		t.Errorf("fault report = %+v, want 3 matched (spawns only), 2 fired", r[0])
	}
	var exits []wire.MCPEvent
	for _, e := range s.Events(token) {
		if e.Kind == wire.MCPExit {
			e.Time, e.Token = time.Time{}, ""
			exits = append(exits, e)
		}
	}
	want := []wire.MCPEvent{
		{Kind: wire.MCPExit, PID: "21", End: wire.MCPExitFault, Fault: wire.MCPFaultStdioExitAtStart},
		{Kind: wire.MCPExit, PID: "22", End: wire.MCPExitFault, Fault: wire.MCPFaultStdioExitAtStart},
	}
	if diff := cmp.Diff(want, exits); diff != "" {
		t.Errorf("exit events (-want +got):\n%s", diff)
	}
}

// TestStdioEnds: a ledger-stdio process that closes its session says why
// (StdioEndHeader): one exit event per process; a client without
// StdioSpawnHeader records none.
func TestStdioEnds(t *testing.T) {
	const token = "rcstdioends1"
	for _, tt := range []struct {
		name, pid, end string
		want           []wire.MCPExitEnd
	}{
		{name: "stdin closed", pid: "31", end: string(wire.MCPExitStdinClosed), want: []wire.MCPExitEnd{wire.MCPExitStdinClosed}},
		{name: "stopped", pid: "32", end: string(wire.MCPExitStopped), want: []wire.MCPExitEnd{wire.MCPExitStopped}},
		{name: "no reason", pid: "33", want: []wire.MCPExitEnd{wire.MCPExitStopped}},
		{name: "not a ledger-stdio process"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newLedger(t, Config{})
			url := ownAddress(t, s, token)
			ctx, cancel := contextT()
			defer cancel()
			hc := http.DefaultClient
			if tt.pid != "" {
				hc = &http.Client{Transport: endTransport{pid: tt.pid, end: tt.end}}
			}
			c := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := cs.Close(); err != nil {
				t.Fatal(err)
			}
			var got []wire.MCPExitEnd
			for _, e := range s.Events(token) {
				if e.Kind == wire.MCPExit {
					got = append(got, e.End)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("exit events (-want +got):\n%s", diff)
			}
			if n := s.Counts(token).Exits; n != len(tt.want) {
				t.Errorf("exits = %d, want %d", n, len(tt.want))
			}
		})
	}
}

// endTransport is a ledger-stdio process's: StdioSpawnHeader on every
// request, StdioEndHeader (when set) on the DELETE.
type endTransport struct{ pid, end string }

func (e endTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(StdioSpawnHeader, e.pid)
	if r.Method == http.MethodDelete && e.end != "" {
		r.Header.Set(StdioEndHeader, e.end)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestStdioFaultValidation: at start takes no tool and no method but
// initialize; at takes the four moments.
func TestStdioFaultValidation(t *testing.T) {
	for _, tt := range []struct {
		yaml    string
		wantErr string
	}{
		{yaml: `{stdio_exit: {}}`},
		{yaml: `{tool: commit_write, stdio_exit: {at: before_execute}, times: once}`},
		{yaml: `{stdio_exit: {at: start}, times: 3}`},
		{yaml: `{method: initialize, stdio_exit: {at: start}}`},
		{yaml: `{stdio_hang: {}}`},
		{yaml: `{tool: commit_write, stdio_malformed_line: {}}`},
		{yaml: `{stdio_exit: {at: later}}`, wantErr: `at "later": want start, before_execute, after_execute, after_answer`},
		{yaml: `{tool: commit_write, stdio_exit: {at: start}}`, wantErr: "drop the tool"},
		{yaml: `{method: tools/list, stdio_exit: {at: start}}`, wantErr: "want method initialize or none"},
		{yaml: `{method: initialize, stdio_exit: {}}`, wantErr: "a session step can only be refused"},
		{yaml: `{stdio_hang: {seconds: 3}}`, wantErr: "unknown field"},
	} {
		t.Run(tt.yaml, func(t *testing.T) {
			f, err := ParseFault(tt.yaml)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("ParseFault = %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("ParseFault = %v, want an error with %q", err, tt.wantErr)
			case err == nil && f.Transport() != wire.MCPTransportStdio:
				t.Errorf("%s: transport %q, want stdio", tt.yaml, f.Transport())
			}
		})
	}
}

// TestStdioCallAfterItsEnd: a tools/call a ledger-stdio process wrote on
// its session as it closed it, which the ledger takes after the DELETE, is
// refused (unknown session), never runs, and is recorded as unforwarded
// with the process's pid: the process counted it as forwarded, so only the
// ledger can name it.
func TestStdioCallAfterItsEnd(t *testing.T) {
	const token = "rcstdiolate1"
	s, _ := newLedger(t, Config{})
	url := ownAddress(t, s, token)
	ctx, cancel := contextT()
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: endTransport{pid: "35", end: string(wire.MCPExitStdinClosed)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	session := cs.ID()
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"commit_write","arguments":{"entry":"late `+token+`"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
	req.Header.Set(StdioSpawnHeader, "35")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a call on the ended session: %s, want 404", resp.Status)
	}
	if c := s.Counts(token); c.CallsTotal() != 0 || c.Writes != 0 {
		t.Errorf("counts = %+v, want no call, no write", c)
	}
	var got []wire.MCPEvent
	for _, e := range s.Events(token) {
		if e.Kind == wire.MCPUnforwarded {
			got = append(got, wire.MCPEvent{Kind: e.Kind, Tool: e.Tool, PID: e.PID})
		}
	}
	want := []wire.MCPEvent{{Kind: wire.MCPUnforwarded, Tool: ToolCommitWrite, PID: "35"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("unforwarded events (-want +got):\n%s", diff)
	}
}
