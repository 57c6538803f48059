package ledgerstdio

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/internal/runtoken"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestMain serves ledger-stdio when the test binary is spawned as
// replaycheck ledger-stdio URL.
func TestMain(m *testing.M) {
	if code, ok := Main(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// stdioLedger starts a ledger writing to a file in a temp directory, served
// at a run's own address (as a client run's is): everything arriving there
// belongs to token. It returns the ledger, its /mcp URL and the file.
func stdioLedger(t *testing.T, token string) (*ledger.Server, string, string) {
	t.Helper()
	return stdioLedgerWith(t, token, ledger.Config{})
}

// stdioLedgerWith is stdioLedger with cfg, whose Path it sets, and faults
// armed for token.
func stdioLedgerWith(t *testing.T, token string, cfg ledger.Config, faults ...ledger.Fault) (*ledger.Server, string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.txt")
	cfg.Path = path
	l, err := ledger.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Arm(token, faults); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", runtoken.Handler(token, l))
	mux.Handle("/shared", l) // no run's: what arrives here is nobody's
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.Close()
		_ = l.Close()
	})
	return l, srv.URL + "/mcp", path
}

// servePipes runs Serve with opts in the background over pipes, and
// returns the client's end of them and Serve's error once it returned
// (its stdout then closed). Closing the transport's writer ends Serve.
func servePipes(ctx context.Context, opts *Options) (*mcp.IOTransport, <-chan error) {
	clientIn, serverOut := io.Pipe() // the server's stdout, the client reads
	serverIn, clientOut := io.Pipe() // the server's stdin, the client writes
	opts.In, opts.Out = serverIn, serverOut
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, opts)
		_ = serverOut.Close()
	}()
	return &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, done
}

// waitLedger waits for cond on token's counts, bounded.
func waitLedger(t *testing.T, l *ledger.Server, token string, cond func(wire.MCPCounts) bool) wire.MCPCounts {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := l.WaitFor(ctx, token, cond)
	if err != nil {
		t.Fatalf("waiting for the ledger's counts: %v (have %+v)", err, l.Counts(token))
	}
	return c
}

// listTools lists cs's tools, sorted by name.
func listTools(t *testing.T, ctx context.Context, cs *mcp.ClientSession) []*mcp.Tool {
	t.Helper()
	var out []*mcp.Tool
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tool)
	}
	slices.SortFunc(out, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func toolNames(tools []*mcp.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}

func commitWrite(t *testing.T, ctx context.Context, cs *mcp.ClientSession, entry string) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ledger.ToolCommitWrite, Arguments: map[string]any{"entry": entry}})
	if err != nil {
		t.Fatalf("commit_write over stdio: %v", err)
	}
	if res.IsError {
		t.Fatalf("commit_write over stdio answered isError: %+v", res.Content)
	}
}

func TestLedgerStdioForwardsToTheRunsLedger(t *testing.T) {
	const token = "rc0stdio0001"
	l, url, path := stdioLedger(t, token)
	sharedURL := strings.TrimSuffix(url, "/mcp") + "/shared"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var errOut strings.Builder
	transport, done := servePipes(ctx, &Options{URL: url, PID: 4242, ErrOut: &errOut})

	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := listTools(t, ctx, cs)
	if names := toolNames(got); !cmp.Equal(names, stdioToolNames) {
		t.Errorf("tools over stdio = %v, want %v", names, stdioToolNames)
	}
	// The ledger's own list, over HTTP at a shared address (not the run's).
	direct := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, nil)
	ds, err := direct.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: sharedURL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := listTools(t, ctx, ds)
	_ = ds.Close()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools over stdio, against the ledger's over HTTP (-want +got):\n%s", diff)
	}
	if a := got[1].Annotations; got[1].Name != ledger.ToolCommitWriteKeyed || a == nil || !a.IdempotentHint {
		t.Errorf("commit_write_keyed over stdio = %+v, want idempotentHint", got[1])
	}

	commitWrite(t, ctx, cs, "entry-"+token)
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("runLedgerStdio: %v (stderr %q)", err, errOut.String())
	}

	c := waitLedger(t, l, token, func(c wire.MCPCounts) bool { return c.Spawns == 1 && c.Writes == 1 })
	if c.CallsTotal() != 1 || c.Calls[ledger.ToolCommitWrite] != 1 || c.Writes != 1 || c.Spawns != 1 {
		t.Errorf("ledger counts = %+v, want 1 commit_write call, 1 write, 1 spawn", c)
	}
	var spawns []string
	for _, e := range l.Events(token) {
		if e.Kind == wire.MCPSpawn {
			spawns = append(spawns, e.PID)
		}
	}
	if diff := cmp.Diff([]string{"4242"}, spawns); diff != "" {
		t.Errorf("spawn events' pids (-want +got):\n%s", diff)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "entry-"+token) {
		t.Errorf("ledger file = %q, want one line with the entry", b)
	}
}

func TestLedgerStdioSpawnedTwice(t *testing.T) {
	bin, err := os.Executable() // TestMain serves ledger-stdio as replaycheck does
	if err != nil {
		t.Fatal(err)
	}
	const token = "rc0stdio0002"
	l, url, _ := stdioLedger(t, token)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 2 {
		client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		cmd := exec.CommandContext(ctx, bin, "ledger-stdio", url)
		cmd.Stderr = os.Stderr
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("spawn %d: %v", i+1, err)
		}
		commitWrite(t, ctx, cs, "entry-"+token)
		if err := cs.Close(); err != nil {
			t.Fatalf("spawn %d: closing: %v", i+1, err)
		}
		if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
			t.Errorf("spawn %d: ledger-stdio ended %v, want exit 0", i+1, cmd.ProcessState)
		}
	}
	c := waitLedger(t, l, token, func(c wire.MCPCounts) bool { return c.Spawns == 2 && c.Writes == 2 })
	if c.Spawns != 2 || c.Writes != c.CallsTotal() || c.Writes != 2 {
		t.Errorf("ledger counts = %+v, want 2 spawns and 2 writes for 2 calls", c)
	}
}

func TestLedgerStdioBadURL(t *testing.T) {
	err := Serve(context.Background(), &Options{URL: "127.0.0.1:8766", In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	if !errors.Is(err, ErrBadUsage) {
		t.Errorf("Serve with a URL without scheme = %v, want ErrBadUsage", err)
	}
}

// stdioToolNames are the ledger's tools, sorted.
var stdioToolNames = []string{ledger.ToolCommitWrite, ledger.ToolCommitWriteKeyed, ledger.ToolReadLedger}

// TestLedgerStdioRelaysToolListChanges: when the ledger's tool list changes
// (a change_tools fault renames commit_write), the stdio client is told and
// lists the new tools, and a call of the new name runs on the ledger.
func TestLedgerStdioRelaysToolListChanges(t *testing.T) {
	const token = "rc0stdio0003"
	l, url, _ := stdioLedgerWith(t, token, ledger.Config{}, ledger.Fault{Tool: ledger.ToolCommitWrite, ChangeTools: &ledger.ChangeTools{Rename: ledger.ToolCommitWrite, To: "record_entry"}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	transport, done := servePipes(ctx, &Options{URL: url, ErrOut: io.Discard})
	changed := make(chan struct{}, 8)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	commitWrite(t, ctx, cs, "entry-"+token)
	want := []string{ledger.ToolCommitWriteKeyed, ledger.ToolReadLedger, "record_entry"}
	for names := toolNames(listTools(t, ctx, cs)); !cmp.Equal(want, names); names = toolNames(listTools(t, ctx, cs)) {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("tools over stdio = %v, want %v", names, want)
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "record_entry", Arguments: map[string]any{"entry": "again-" + token}})
	if err != nil || res.IsError {
		t.Fatalf("record_entry over stdio: %v %+v", err, res)
	}
	_ = cs.Close()
	if err := <-done; err != nil {
		t.Fatalf("runLedgerStdio: %v", err)
	}
	if c := l.Counts(token); c.Writes != 2 || c.Spawns != 1 {
		t.Errorf("ledger counts = %+v, want 2 writes, 1 spawn", c)
	}
}
