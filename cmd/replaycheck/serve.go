package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/fakes/control"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/ledger/mcpcassette"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/fakes/upstream/cassette"
	"github.com/replaycheck/replaycheck/internal/dialect"
	"github.com/replaycheck/replaycheck/internal/fakepair"
	"github.com/replaycheck/replaycheck/internal/harness/process"
	"github.com/replaycheck/replaycheck/internal/linefile"
	"github.com/replaycheck/replaycheck/internal/loopback"
	"github.com/replaycheck/replaycheck/internal/secret"
	"github.com/replaycheck/replaycheck/internal/wire"
	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

// serveOptions are the flags of `replaycheck serve`.
type serveOptions struct {
	UpstreamAddr string
	MCPAddr      string
	// LedgerFile is the ledger's file (--ledger); "" keeps it in memory.
	LedgerFile  string
	UpstreamLog string
	Relay       string
	FlagsDir    string
	Stateless   bool
	// MCPProtocol pins the MCP protocol version the ledger speaks
	// (--mcp-protocol); "" negotiates.
	MCPProtocol mcpProtocolFlag
	// HonourCancellation makes the ledger honour cancellation
	// (--honour-cancellation).
	HonourCancellation bool
	// ScriptFile is the fake model's YAML script file (--script); "" is
	// the seed's script.
	ScriptFile     string
	UpstreamFaults []string
	MCPFaults      []string
	Every          time.Duration
	Verbose        bool
	// ControlKey, when set, is the bearer key of the control API.
	ControlKey string
	// RecordDir, CassettePath, Miss and ReplayTiming are the record and
	// replay flags (see cassetteFlags): the directory to record into, the
	// cassette file or directory to replay.
	RecordDir    string
	CassettePath string
	Miss         string
	ReplayTiming bool

	// MCPRelay and MCPCommand make the ledger a forwarder in front of the
	// user's own MCP server (--mcp-relay URL, --mcp-command "CMD ARGS",
	// split on spaces); MCPWrites names the tools that write
	// (--mcp-writes; nil: every tool not annotated readOnlyHint).
	MCPRelay   string
	MCPCommand string
	MCPWrites  []string
	// MCPEnv is --mcp-env, repeatable: NAME=VALUE sets a variable of
	// MCPCommand's environment, NAME alone passes serve's own (the rest of
	// it starts scrubbed, as a client target's).
	MCPEnv []string
	// MCPCassette replays the MCP side from an MCP cassette file or
	// directory instead (--mcp-cassette; see mcpCassetteFlags).
	MCPCassette string

	// SessionTimeout and MaxSessions bound the ledger's MCP sessions
	// (--mcp-session-timeout, --mcp-max-sessions).
	SessionTimeout time.Duration
	MaxSessions    int
	// MaxRuns bounds the run tokens the fakes keep (--max-runs; 0 = all).
	MaxRuns int
	// MaxBodyMiB bounds a model request's body (--max-body-mib); 0 is
	// upstream.DefaultMaxBody.
	MaxBodyMiB int64

	Out    io.Writer
	ErrOut io.Writer
	// Ready, when set, is called with the fakes' URLs once both accept
	// connections (the upstream base URL with /v1, the ledger's /mcp URL).
	Ready func(upstreamURL, mcpURL string)
	// wrapControl, when set (by tests), wraps the control API's handler.
	wrapControl func(http.Handler) http.Handler
}

func newServeCmd() *cobra.Command {
	opts := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the ledger MCP server and the faulting model upstream standalone",
		Long: `serve runs replaycheck's two fakes on fixed loopback ports for a hand-made
reproduction, as the rig of seed 000 did with a Python forwarder and a FastMCP
server:

  upstream  the model API, scripted by default: it calls the ledger tool
            once with the entry the prompt names, then answers "done";
            --relay forwards to a real provider. Its paths:
` + modelPaths() + `
  ledger    an MCP server (Streamable HTTP at /mcp) whose commit_write appends
            one line per write to --ledger, synced before it answers

Faults come from flags (--upstream-fault, --mcp-fault, repeatable YAML flow
mappings) and, live, from the seed's flag files in --flags-dir: fault_on (every
follow-up gets a 500), fault_once (one follow-up gets a 500, then the file is
removed), drop_stream (a streamed follow-up gets its headers, then the
connection closes).

serve is one run: every model request and MCP message that reaches it is
counted, whatever prompt, tool names or arguments the client sends (an agent
CLI with its own prompt included). A request or tool call that carries a run
token (one the harness or the built-in gateway wrote) gets a row of its own.

A count table (per run token and in total: upstream requests by kind and
outcome, MCP calls of every tool, writes, idempotency keys, cancellations, and
the other MCP messages such as initialize and tools/list, and writes that could
not be persisted) is printed every
--every and on Ctrl-C or SIGTERM, which stop serve cleanly.

Every line of the ledger file, the upstream log and a recorded cassette is
written whole or not at all. A write that fails (a full disk) is said at once
on stderr, once per file, counted under the table (LOST LINES) and in
/_replaycheck/counts (write_errors), and makes serve exit 3. A fault armed and
never fired is said on stderr when serve stops, and listed in counts
(unfired_faults). MCP sessions idle for --mcp-session-timeout are closed, and
past --mcp-max-sessions open ones an initialize is refused with 503 until one
ends (counts: mcp_sessions). The fakes keep the --max-runs most recently active
run tokens; older runs are forgotten (their counts stay in the total) and
counted under the table and in counts (dropped_runs), with the idempotency keys
only they saw (counts: mcp_keys; a commit_write_keyed call with a forgotten key
writes again) and their ledger lines (counts: mcp_lines; read_ledger returns the
lines kept, the ledger file has every line). Of what carries no token, the
newest --max-runs idempotency keys, ledger lines, stdio process ends and MCP
events are kept. The --every table shows
the most recent runs and says how many more are kept; the table at the end
shows every run kept. A model request whose body is over --max-body-mib is
answered 413 in its dialect's error shape, the first said on stderr, and all
counted under the table (BODY TOO LARGE). With --record, a plain model answer
over 32 MiB is relayed whole but not recorded: its record in the timeline says
so (unrecorded: too_large), and those are counted under the table (NOT
RECORDED) with the cassette they are missing from.

A control API on the upstream's port switches faults and reads counts while
serve runs, for hand reproductions and test suites in any language (see
examples/control for Python and TypeScript; GET /_replaycheck/openapi.yaml is its
OpenAPI 3.1 description). Without a control key it answers loopback clients only.
--control-key or $REPLAYCHECK_CONTROL_KEY requires Authorization: Bearer KEY on
every route but health, from any address; listening on an address other than
loopback (--upstream-addr 0.0.0.0:8765, for another container) needs a key. The
key guards the control API only: the model API and the MCP server never ask for
it (the agents under test cannot send it), so on an address beyond loopback any
host that reaches it can send model requests and call the tools, writes
included, unauthenticated; the banner says so (other hosts:). A
POST or PUT says Content-Type: application/json or application/yaml; web pages
are refused; a wrong method gets 405 with Allow.
  GET    /_replaycheck/health            ready (no key needed)
  GET    /_replaycheck/counts            the count table as JSON, per run token and in total
  GET    /_replaycheck/faults[?run=T]    the armed faults: ids, matched and fired, per run and in total
  POST   /_replaycheck/faults            add {run, upstream: [...], mcp: [...]} (the shapes of a
                                         scenario's faults, for one run token or, no run, all);
                                         answers 201 with their ids; a bad body is a 400 naming
                                         the line, and arms nothing
  PUT    /_replaycheck/faults            replace the faults of the body's run (or the global ones)
  DELETE /_replaycheck/faults[?run=T]    disarm all (or run T's; ?run= the global ones)
  GET    /_replaycheck/faults/ID         one fault; DELETE disarms it
  POST   /_replaycheck/reset             forget counts, events and faults (the ledger file stays)
  GET    /_replaycheck/timeline?run=T    what both fakes saw for a run token, in order

MCP fault kinds: ` + strings.Join(ledger.Kinds(), ", ") + `.`,
		Example: `  # the seed rig: fakes on 8765 and 8766, the seed's files and flag files
  replaycheck serve --ledger ledger.txt --upstream-log upstream.log --flags-dir .

  # the first follow-up gets a 500, and every commit_write's answer is lost after it wrote
  replaycheck serve --upstream-fault '{on: follow_up, respond: {status: 500}, times: once}' \
    --mcp-fault '{tool: commit_write, drop_after_execute: {}}'

  # your own MCP server in place of the ledger; script.yaml calls its tools, such as
  # [{call: create_item, arguments: {name: "{{entry}}"}}, {say: done}], and every
  # call's answer is lost after the server ran it
  replaycheck serve --mcp-relay http://127.0.0.1:3001/mcp --script script.yaml \
    --mcp-fault '{drop_after_execute: {}}'
  replaycheck serve --mcp-command "node build/index.js" --script script.yaml

  # the 2026-07-28 protocol only (server/discover, no initialize), cancellation honoured
  replaycheck serve --mcp-protocol 2026-07-28 --honour-cancellation

  # relay to OpenAI, print the counts every 10 seconds
  replaycheck serve --relay https://api.openai.com --every 10s

  # record a real session once, then replay it offline (no key), faults and all
  replaycheck serve --relay https://api.openai.com --record cassettes/
  replaycheck serve --cassette cassettes/ --upstream-fault '{on: initial, drop: {after: tool_call}}'

  # record your own MCP server's answers once (into cassettes/mcp/), then replay them offline
  replaycheck serve --mcp-relay http://127.0.0.1:3001/mcp --script script.yaml --record cassettes/
  replaycheck serve --mcp-cassette cassettes/mcp/ --script script.yaml --mcp-fault '{drop_after_execute: {}}'

  # add a fault while it runs (the answer holds its id), then read the counts
  curl -s localhost:8765/_replaycheck/faults -H 'Content-Type: application/json' -d '{"upstream": [{"on": "follow_up", "respond": {"status": 500}}]}'
  curl -s localhost:8765/_replaycheck/counts

  # serve another container (a CI service): any address, with a control key
  REPLAYCHECK_CONTROL_KEY=$(openssl rand -hex 16) replaycheck serve --upstream-addr 0.0.0.0:8765 --mcp-addr 0.0.0.0:8766`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Out, opts.ErrOut = cmd.OutOrStdout(), cmd.ErrOrStderr()
			return runServe(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.UpstreamAddr, "upstream-addr", "127.0.0.1:8765", "address of the model upstream fake")
	f.StringVar(&opts.MCPAddr, "mcp-addr", "127.0.0.1:8766", "address of the ledger MCP server (served at /mcp)")
	f.StringVar(&opts.LedgerFile, "ledger", "", "ledger file, one line appended per write; existing lines are kept, as in the seed (default: in memory only)")
	f.StringVar(&opts.UpstreamLog, "upstream-log", "", `upstream log file, one "PATH KIND OUTCOME" line appended per model request`)
	f.StringVar(&opts.Relay, "relay", "", "relay model requests to this provider base URL (e.g. https://api.openai.com)")
	f.StringVar(&opts.FlagsDir, "flags-dir", "", "directory of the seed's flag files fault_on, fault_once, drop_stream")
	f.BoolVar(&opts.Stateless, "stateless", false, "serve the ledger as stateless Streamable HTTP only, every protocol version without sessions (by default 2026-07-28 is served statelessly and clients that initialize get sessions; --mcp-protocol 2026-07-28 serves that protocol only)")
	f.Var(&opts.MCPProtocol, "mcp-protocol", "pin the MCP protocol version the ledger (or the forwarder) speaks: "+wire.MCPProtocolNames()+"; an initialize-era pin also serves the older versions a client initializes with (default: negotiate as a current server does, 2026-07-28 to clients that ask for it, the version a client initializes with otherwise)")
	f.BoolVar(&opts.HonourCancellation, "honour-cancellation", false, "the ledger honours cancellation as the 2026-07-28 specification asks: a call whose request stream closed before its write committed writes nothing")
	f.DurationVar(&opts.SessionTimeout, "mcp-session-timeout", defaultSessionTimeout, "close an MCP session that sent no request for this long (0 = never)")
	f.IntVar(&opts.MaxSessions, "mcp-max-sessions", defaultMaxSessions, "most MCP sessions open at once; past it an initialize is refused with 503 until one ends (0 = no cap)")
	f.Int64Var(&opts.MaxBodyMiB, "max-body-mib", upstream.DefaultMaxBody>>20, "largest model request body taken, in MiB; a larger one is answered 413 and said on stderr")
	f.IntVar(&opts.MaxRuns, "max-runs", defaultMaxRuns, "most run tokens whose counts, timelines and ledger lines are kept, the most recently active, and most idempotency keys, ledger lines and events of no token kept, the newest; older ones are forgotten and counted (0 = no cap)")
	f.StringVar(&opts.ScriptFile, "script", "", `YAML script of the fake model, replacing the seed's default: a list of steps such as [{call: commit_write, arguments: {entry: "{{entry}}"}}, {say: done}]`)
	f.StringArrayVar(&opts.UpstreamFaults, "upstream-fault", nil, "upstream fault as a YAML flow mapping (repeatable)")
	f.StringArrayVar(&opts.MCPFaults, "mcp-fault", nil, "ledger fault as a YAML flow mapping (repeatable)")
	f.StringVar(&opts.MCPRelay, "mcp-relay", "", "forward the MCP side to your own MCP server at this Streamable HTTP URL: its tools replace the ledger's, each call is forwarded once, --mcp-fault applies at the forwarding point")
	f.StringVar(&opts.MCPCommand, "mcp-command", "", `forward the MCP side to your own MCP server started with this command over stdio ("CMD ARGS", split on spaces, no shell quoting)`)
	f.StringArrayVar(&opts.MCPEnv, "mcp-env", nil, "with --mcp-command: NAME=VALUE sets a variable of the server's environment, NAME passes serve's own (repeatable); the server gets nothing else but PATH, HOME, USER, LOGNAME, SHELL, TERM, TZ, TMPDIR, LANG, LANGUAGE and LC_*")
	f.StringSliceVar(&opts.MCPWrites, "mcp-writes", nil, "with --mcp-relay, --mcp-command or --mcp-cassette: exactly the server's tools whose calls write (default: every tool not annotated readOnlyHint)")
	f.StringVar(&opts.MCPCassette, "mcp-cassette", "", "replay your own MCP server offline from an MCP cassette file, or every *.jsonl one in a directory (recorded by --mcp-relay or --mcp-command with --record DIR, in DIR/mcp/): its tools, each call answered from the recorded call of the same tool and arguments (a call never recorded gets an MCP error, counted as a cassette miss); --mcp-fault applies as when forwarding")
	f.DurationVar(&opts.Every, "every", 0, "also print the count table at this interval (0 = only on exit)")
	f.BoolVarP(&opts.Verbose, "verbose", "v", false, "log every model request and ledger call to stderr")
	f.StringVar(&opts.RecordDir, "record", "", "with --relay: record each relayed exchange into a new cassette (session-TIME.jsonl) in this directory; with --mcp-relay or --mcp-command: record the forwarded MCP exchanges into a new MCP cassette in its mcp/ subdirectory; credentials never reach them")
	f.StringVar(&opts.CassettePath, "cassette", "", "answer model requests from a cassette file, or every *.jsonl cassette in a directory, offline; faults apply as to scripted answers")
	f.StringVar(&opts.Miss, "miss", upstream.MissError, `with --cassette: a request no entry matches gets "error" (404 naming the closest entry) or "relay" (needs --relay; relayed and recorded)`)
	f.BoolVar(&opts.ReplayTiming, "replay-timing", false, "with --cassette: wait for headers and between events as recorded")
	f.StringVar(&opts.ControlKey, "control-key", "", "require Authorization: Bearer KEY on the control API but health, from any address (default $REPLAYCHECK_CONTROL_KEY; none when both are empty, and then only loopback addresses may be listened on)")
	return cmd
}

// The defaults of --mcp-session-timeout and --mcp-max-sessions: an
// abandoned session lasts ten minutes, and at most 1024 are kept (about 14
// MB), however many initialize calls come.
const (
	defaultSessionTimeout = 10 * time.Minute
	defaultMaxSessions    = 1024
)

// defaultMaxRuns is the default of --max-runs: about 5 KB of counts and
// events a run, so some 5 MB however many runs come.
const defaultMaxRuns = 1024

// Serve prunes the runs the fakes keep (--max-runs) every pruneEvery, and
// before every table and GET counts; the --every table shows the
// everyRows most recently active runs.
const (
	pruneEvery = time.Second
	everyRows  = 20
)

// servedFakes are the two fakes built from the options.
type servedFakes struct {
	pair      *fakepair.Pair // serves upstream and ledger
	upstream  *upstream.Server
	ledger    *ledger.Server
	upFaults  []upstream.Fault
	mcpFaults []ledger.Fault
	log       *linefile.File     // the upstream log file, or nil
	recorder  *cassette.Recorder // the cassette being recorded, or nil
	runs      *control.RunLimit  // --max-runs
	// mcpRecorder is the MCP cassette being recorded, or nil.
	mcpRecorder *mcpcassette.Recorder
	// tooLarge counts the model requests refused for their body's size,
	// over maxBody bytes.
	tooLarge atomic.Int64
	maxBody  int64
	// unrecorded counts the relayed answers too large to record
	// (upstream.MaxRecordedBody).
	unrecorded atomic.Int64
}

// maxBodyMiB is the largest --max-body-mib.
const maxBodyMiB = 1024

// sayTooLarge returns the upstream's BodyTooLarge hook: it counts each
// model request refused for its body's size, and says the first on w.
func (fk *servedFakes) sayTooLarge(w io.Writer) func(upstream.BodyTooLarge) {
	return func(b upstream.BodyTooLarge) {
		if fk.tooLarge.Add(1) != 1 {
			return
		}
		size := "over " + mib(b.Limit)
		if b.Size >= 0 {
			size = mib(b.Size)
		}
		fmt.Fprintf(w, "serve: a model request to %s was refused (413): its body of %s is over the limit of %s; "+
			"raise it with --max-body-mib (later ones are counted under the table)\n", b.Path, size, mib(b.Limit))
	}
}

// mib renders a byte count in MiB to a tenth ("8 MiB", "9.5 MiB").
func mib(n int64) string {
	return strconv.FormatFloat(math.Round(float64(n)/(1<<20)*10)/10, 'f', -1, 64) + " MiB"
}

// servedFile is a file serve appends to, with what the user calls it.
type servedFile struct {
	what string // "ledger file", "upstream log", "cassette"
	file *linefile.File
}

// files returns the files the fakes append to.
func (fk *servedFakes) files() []servedFile {
	var out []servedFile
	if fk.ledger != nil && fk.ledger.File() != nil {
		out = append(out, servedFile{"ledger file", fk.ledger.File()})
	}
	if fk.log != nil {
		out = append(out, servedFile{"upstream log", fk.log})
	}
	if fk.recorder != nil {
		out = append(out, servedFile{"cassette", fk.recorder.File()})
	}
	if fk.mcpRecorder != nil {
		out = append(out, servedFile{"MCP cassette", fk.mcpRecorder.File()})
	}
	return out
}

// linefiles returns the files the fakes append to, for the control API.
func (fk *servedFakes) linefiles() []*linefile.File {
	var out []*linefile.File
	for _, f := range fk.files() {
		out = append(out, f.file)
	}
	return out
}

// buildFakes turns the options into the two fakes; every error is the
// user's (exit 2). The caller closes what it returns.
func buildFakes(opts *serveOptions) (*servedFakes, error) {
	if opts.Every < 0 {
		return nil, asUsage(fmt.Errorf("--every %s: want a positive interval, or 0 for none", opts.Every))
	}
	if opts.SessionTimeout < 0 {
		return nil, asUsage(fmt.Errorf("--mcp-session-timeout %s: want a positive duration, or 0 for never", opts.SessionTimeout))
	}
	if opts.MaxSessions < 0 {
		return nil, asUsage(fmt.Errorf("--mcp-max-sessions %d: want a positive number, or 0 for no cap", opts.MaxSessions))
	}
	if opts.MaxBodyMiB < 0 || opts.MaxBodyMiB > maxBodyMiB {
		return nil, asUsage(fmt.Errorf("--max-body-mib %d: want 1 to %d", opts.MaxBodyMiB, maxBodyMiB))
	}
	if opts.MaxRuns < 0 {
		return nil, asUsage(fmt.Errorf("--max-runs %d: want a positive number, or 0 for no cap", opts.MaxRuns))
	}
	fk := &servedFakes{}
	for _, s := range opts.UpstreamFaults {
		f, err := upstream.ParseFault(s)
		if err != nil {
			return nil, asUsage(fmt.Errorf("--upstream-fault: %w", err))
		}
		fk.upFaults = append(fk.upFaults, f)
	}
	parseMCPFault := ledger.ParseFault
	if opts.MCPRelay != "" || strings.TrimSpace(opts.MCPCommand) != "" || opts.MCPCassette != "" {
		parseMCPFault = ledger.ParseForwardedFault // names the server's tools; Arm checks them
	}
	for _, s := range opts.MCPFaults {
		f, err := parseMCPFault(s)
		if err != nil {
			return nil, asUsage(fmt.Errorf("--mcp-fault: %w", err))
		}
		fk.mcpFaults = append(fk.mcpFaults, f)
	}
	var script upstream.Script
	if opts.ScriptFile != "" {
		b, err := yamlfile.ReadFile(opts.ScriptFile, maxScriptSize)
		if err != nil {
			return nil, asUsage(fmt.Errorf("--script: %w", err))
		}
		if script, err = upstream.ParseScript(b); err != nil {
			return nil, asUsage(fmt.Errorf("--script %s: %w", opts.ScriptFile, err))
		}
		if len(script.Steps) == 0 {
			return nil, asUsage(fmt.Errorf("--script %s: no steps; want a list such as [{call: commit_write, arguments: {entry: \"{{entry}}\"}}, {say: done}]", opts.ScriptFile))
		}
	}
	for _, a := range []struct{ flag, addr string }{{"--upstream-addr", opts.UpstreamAddr}, {"--mcp-addr", opts.MCPAddr}} {
		if err := checkAddr(a.addr); err != nil {
			return nil, asUsage(fmt.Errorf("%s %q: %w", a.flag, a.addr, err))
		}
	}
	if _, port, _ := net.SplitHostPort(opts.UpstreamAddr); opts.UpstreamAddr == opts.MCPAddr && port != "0" {
		return nil, asUsage(fmt.Errorf("--upstream-addr and --mcp-addr are both %s; the two fakes need two ports", opts.MCPAddr))
	}
	if opts.FlagsDir != "" {
		if st, err := os.Stat(opts.FlagsDir); err != nil || !st.IsDir() {
			return nil, asUsage(fmt.Errorf("--flags-dir %s: not a directory", opts.FlagsDir))
		}
	}
	var inner slog.Handler = slog.DiscardHandler
	if opts.Verbose {
		inner = slog.NewTextHandler(opts.ErrOut, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: logScrubber()}) // ledger calls and writes log at debug
	}
	ucfg := upstream.Config{Script: script, Relay: opts.Relay, FlagsDir: opts.FlagsDir, Logger: slog.New(inner),
		MaxBody: opts.MaxBodyMiB << 20, BodyTooLarge: fk.sayTooLarge(opts.ErrOut),
		TooLargeToRecord: func(string) { fk.unrecorded.Add(1) }}
	fk.maxBody = cmp.Or(ucfg.MaxBody, upstream.DefaultMaxBody)
	if opts.UpstreamLog != "" {
		f, err := linefile.Open(opts.UpstreamLog, linefile.Options{})
		if err != nil {
			return nil, asUsage(fmt.Errorf("--upstream-log: %w", err))
		}
		fk.log, ucfg.Log = f, f
	}
	rec, err := cassetteFlags(opts, &ucfg, time.Now())
	if err != nil {
		fk.close()
		return nil, asUsage(err)
	}
	fk.recorder = rec
	fwd, err := opts.forward()
	if err == nil {
		fwd, fk.mcpRecorder, err = mcpCassetteFlags(opts, fwd, time.Now())
	}
	if err != nil {
		fk.close()
		return nil, asUsage(err)
	}
	p, err := fakepair.New(fakepair.Config{UpstreamAddr: opts.UpstreamAddr, MCPAddr: opts.MCPAddr, Upstream: ucfg,
		Ledger: ledger.Config{Path: opts.LedgerFile, Stateless: opts.Stateless, Protocol: wire.MCPProtocol(opts.MCPProtocol),
			HonourCancellation: opts.HonourCancellation, Logger: slog.New(inner),
			SessionTimeout: opts.SessionTimeout, MaxSessions: opts.MaxSessions, Forward: fwd}})
	if se := (*fakepair.StartError)(nil); errors.As(err, &se) {
		fk.close()
		switch {
		case se.Side == fakepair.UpstreamSide:
			return nil, asUsage(fmt.Errorf("upstream: %w", se.Err))
		case fwd != nil:
			return nil, fmt.Errorf("--mcp-relay/--mcp-command: %w", se.Err)
		}
		return nil, asUsage(fmt.Errorf("--ledger: %w", se.Err))
	}
	fk.pair, fk.upstream, fk.ledger = p, p.Upstream(), p.Ledger()
	if err := fk.upstream.Arm("", nil, fk.upFaults); err != nil {
		fk.close()
		return nil, asUsage(fmt.Errorf("--upstream-fault: %w", err))
	}
	fk.runs = &control.RunLimit{Upstream: fk.upstream, Ledger: fk.ledger, Max: opts.MaxRuns}
	if err := fk.ledger.Arm("", fk.mcpFaults); err != nil {
		fk.close()
		return nil, asUsage(fmt.Errorf("--mcp-fault: %w", err))
	}
	return fk, nil
}

// forward returns the MCP server --mcp-relay or --mcp-command names, nil
// when neither is set.
func (opts *serveOptions) forward() (*ledger.Forward, error) {
	command := strings.Fields(opts.MCPCommand)
	switch {
	case opts.MCPRelay != "" && len(command) > 0:
		return nil, errors.New("--mcp-relay and --mcp-command: set one, the MCP server to forward to")
	case opts.MCPEnv != nil && len(command) == 0:
		return nil, errors.New("--mcp-env needs --mcp-command: it is the environment of the server's process")
	case opts.MCPRelay == "" && len(command) == 0:
		if opts.MCPWrites != nil && opts.MCPCassette == "" {
			return nil, errors.New("--mcp-writes needs --mcp-relay, --mcp-command or --mcp-cassette")
		}
		return nil, nil
	}
	fwd := &ledger.Forward{URL: opts.MCPRelay, Command: command, Writes: opts.MCPWrites}
	for _, e := range opts.MCPEnv {
		name, _, set := strings.Cut(e, "=")
		switch {
		case !process.VarName(name):
			return nil, fmt.Errorf("--mcp-env %q: want NAME=VALUE, or NAME to pass serve's own", e)
		case set:
			fwd.Env = append(fwd.Env, e)
		default:
			fwd.PassEnv = append(fwd.PassEnv, name)
			if _, ok := os.LookupEnv(name); !ok {
				fmt.Fprintf(opts.ErrOut, "serve: --mcp-env %s: serve's environment has no %s, so the MCP server does not get it either (set it, or say --mcp-env %s=VALUE)\n", name, name, name)
			}
		}
	}
	if len(command) > 0 {
		fwd.Exited = func(err error) { fmt.Fprintf(opts.ErrOut, "serve: %v\ncalls to it are refused from now on\n", err) }
	}
	return fwd, nil
}

// close closes the pair (the ledger syncs its file) and the files.
func (fk *servedFakes) close() error {
	var errs []error
	if fk.pair != nil {
		errs = append(errs, fk.pair.Close())
	}
	if fk.log != nil {
		if err := fk.log.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing upstream log: %w", err))
		}
	}
	if fk.recorder != nil {
		errs = append(errs, fk.recorder.Close())
	}
	if fk.mcpRecorder != nil {
		errs = append(errs, fk.mcpRecorder.Close()) // after the ledger, which writes it
	}
	return errors.Join(errs...)
}

// runServe serves both fakes until ctx ends, printing the count table every
// opts.Every and once more at the end.
func runServe(ctx context.Context, opts *serveOptions) error {
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.ErrOut == nil {
		opts.ErrOut = io.Discard
	}
	key, err := controlKey(opts)
	if err != nil {
		return err
	}
	fk, err := buildFakes(opts)
	if err != nil {
		return err
	}
	defer fk.close()

	var ctl http.Handler = (&control.API{Upstream: fk.upstream, Ledger: fk.ledger, Key: key, Files: fk.linefiles(), Runs: fk.runs}).Handler()
	if opts.wrapControl != nil {
		ctl = opts.wrapControl(ctl)
	}
	fk.pair.HandleControl(ctl)
	if err := fk.pair.Serve(); err != nil {
		return listenError(err)
	}
	// The file watch ends at shutdown, with the requests (see
	// fakepair.Pair.Shutdown).
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	upURL, mcpURL := fk.pair.UpstreamURL(), fk.pair.MCPURL()
	printServeBanner(opts, upURL, mcpURL, key, fk)
	watched := watchFiles(base, opts.ErrOut, fk.files())
	if opts.Ready != nil {
		opts.Ready(upURL, mcpURL)
	}

	var tick <-chan time.Time
	if opts.Every > 0 {
		t := time.NewTicker(opts.Every)
		defer t.Stop()
		tick = t.C
	}
	prune := time.NewTicker(pruneEvery)
	defer prune.Stop()
	var serveErr error
loop:
	for {
		select {
		case <-prune.C:
			fk.runs.Prune()
		case <-tick:
			if err := writeCountTable(opts.Out, fk, everyRows); err != nil {
				serveErr = err
				break loop
			}
		case err := <-fk.pair.Failed():
			serveErr = fmt.Errorf("serve: %w", err)
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	tableErr := writeCountTable(opts.Out, fk, 0)
	cancelBase()
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	// A shutdown that ctx cuts short closes what is left: not serve's failure.
	_ = fk.pair.Shutdown(shutdownCtx)
	exitErr := fk.ledger.ForwardExit()
	closeErr := fk.close()
	<-watched
	sayUnfired(opts.ErrOut, fk)
	if serveErr != nil {
		return serveErr
	}
	if tableErr != nil {
		return tableErr
	}
	if closeErr != nil {
		closeErr = fmt.Errorf("serve: %w", closeErr)
	}
	if exitErr != nil {
		exitErr = fmt.Errorf("serve: %w", exitErr)
	}
	if err := errors.Join(exitErr, closeErr, lostLines(fk.files())); err != nil {
		return err
	}
	fmt.Fprintln(opts.Out, "serve stopped")
	return nil
}

// controlKey returns the control API's key (--control-key, else
// $REPLAYCHECK_CONTROL_KEY; "" for none). Listening on an address other than
// loopback needs one of at least minControlKey characters (exit 2): other
// hosts could arm faults otherwise.
func controlKey(opts *serveOptions) (string, error) {
	key := opts.ControlKey
	if key == "" {
		key = os.Getenv("REPLAYCHECK_CONTROL_KEY")
	}
	for _, a := range []struct{ flag, addr string }{{"--upstream-addr", opts.UpstreamAddr}, {"--mcp-addr", opts.MCPAddr}} {
		host, _, err := net.SplitHostPort(a.addr)
		if err != nil || loopback.IsLoopbackHost(host) {
			continue
		}
		if key != "" && len(key) < minControlKey {
			return "", asUsage(fmt.Errorf("%s %s is not a loopback address, and the control key has %d characters: other hosts could guess it; "+
				"use at least %d, e.g. --control-key $(openssl rand -hex 16)", a.flag, a.addr, len(key), minControlKey))
		}
		if key == "" {
			return "", asUsage(fmt.Errorf("%s %s is not a loopback address, so other hosts could reach the fakes and the control API; "+
				"set a control key with --control-key KEY or $REPLAYCHECK_CONTROL_KEY (every control request but health then needs "+
				"Authorization: Bearer KEY; the model API and the MCP server never ask for it), or listen on 127.0.0.1", a.flag, a.addr))
		}
	}
	return key, nil
}

// minControlKey is the fewest characters a control key needs when serve
// listens beyond loopback.
const minControlKey = 16

// maxScriptSize bounds a --script file.
const maxScriptSize = 1 << 20

// checkAddr reports an address that no listener could take: it must be
// host:port with a port from 0 to 65535 (0 picks a free one).
func checkAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port such as 127.0.0.1:8765: %w", err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("port %q: want a number from 0 to 65535 (0 picks a free port)", port)
	}
	return nil
}

// listenError says which fake's address Serve could not take (err, a
// *fakepair.StartError) and the flag that picks another; a busy port is
// named.
func listenError(err error) error {
	var se *fakepair.StartError
	if !errors.As(err, &se) {
		return fmt.Errorf("serve: %w", err)
	}
	flag := map[fakepair.Side]string{fakepair.UpstreamSide: "--upstream-addr", fakepair.LedgerSide: "--mcp-addr"}[se.Side]
	cause := se.Err
	if op := (*net.OpError)(nil); errors.As(cause, &op) {
		cause = op // the listener's own error, without loopback's words
	}
	if errors.Is(cause, syscall.EADDRINUSE) {
		return fmt.Errorf("serve: %s address %s is already in use (another serve, or the seed's Python rig?); pick another with %s: %w", se.Side, se.Addr, flag, cause)
	}
	return fmt.Errorf("serve: %s: listening on %s (%s): %w", se.Side, se.Addr, flag, cause)
}

func printServeBanner(opts *serveOptions, upURL, mcpURL, key string, fk *servedFakes) {
	or := func(s, dflt string) string {
		if s == "" {
			return dflt
		}
		return s
	}
	mode := "scripted"
	if opts.Relay != "" {
		mode = "relay to " + redactURL(opts.Relay)
	}
	if opts.CassettePath != "" {
		mode = "replay" // cassetteBanner says from where and what a miss does
	}
	session := "2026-07-28 and 2025 sessions"
	if opts.Stateless {
		session = "stateless"
	}
	if opts.MCPProtocol != "" {
		// A pinned version says more than the handler's mode.
		session = "MCP " + string(opts.MCPProtocol) + " only"
		if opts.Stateless {
			session += ", stateless"
		}
	}
	if opts.HonourCancellation {
		session += ", honours cancellation"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "replaycheck serve\n")
	fmt.Fprintf(&b, "  upstream:     %s (%s)\n", upURL, mode)
	side := serveMCPSide(opts)
	if fk.ledger != nil {
		if p := fk.ledger.ForwardProtocol(); p != "" {
			side += ", MCP " + string(p) // as the forwarder's client negotiated it with the server
		}
	}
	fmt.Fprintf(&b, "  mcp:          %s (%s): %s\n", mcpURL, session, side)
	fmt.Fprintf(&b, "  ledger file:  %s\n", or(opts.LedgerFile, "none (in memory)"))
	fmt.Fprintf(&b, "  upstream log: %s\n", or(opts.UpstreamLog, "none"))
	fmt.Fprintf(&b, "  flags dir:    %s\n", or(opts.FlagsDir, "none"))
	b.WriteString(cassetteBanner(opts, fk))
	b.WriteString(mcpCassetteBanner(opts, fk))
	ctl := strings.TrimSuffix(upURL, "/v1") + control.Prefix
	if key != "" {
		ctl += " (bearer key required)"
	}
	fmt.Fprintf(&b, "  control API:  %s (health, counts, faults, reset, timeline)\n", ctl)
	if open := openBeyondLoopback(opts, upURL, mcpURL); key != "" && len(open) > 0 {
		// The agents under test cannot send the key, so the fakes take none.
		var fakes, uses []string
		for _, o := range open {
			fakes, uses = append(fakes, o.what+" on "+o.addr), append(uses, o.use)
		}
		take, them := "takes", "it"
		if len(open) > 1 {
			take, them = "take", "them"
		}
		fmt.Fprintf(&b, "  other hosts:  %s %s no key: any host that reaches %s can %s; the key guards only the control API\n",
			joinAnd(fakes), take, them, joinAnd(uses))
	}
	for _, f := range fk.upFaults {
		fmt.Fprintf(&b, "  upstream fault: %s\n", f)
	}
	for _, f := range fk.mcpFaults {
		fmt.Fprintf(&b, "  mcp fault:      %s\n", f)
	}
	_, _ = io.WriteString(opts.Out, b.String())
}

// openFake is a fake serve listens for beyond loopback: what it is, its
// address (the flag's host, the port it got) and what another host can do
// with it.
type openFake struct{ what, addr, use string }

// openBeyondLoopback returns the fakes whose listen flag is not a loopback
// address; upURL and mcpURL are where they listen.
func openBeyondLoopback(opts *serveOptions, upURL, mcpURL string) []openFake {
	var out []openFake
	for _, f := range []struct{ flag, url string }{{opts.UpstreamAddr, upURL}, {opts.MCPAddr, mcpURL}} {
		host, _, err := net.SplitHostPort(f.flag)
		if err != nil || loopback.IsLoopbackHost(host) {
			continue
		}
		u, err := url.Parse(f.url)
		if err != nil {
			continue
		}
		o := openFake{what: "the model API", addr: net.JoinHostPort(host, u.Port()), use: "send model requests"}
		if f.url == mcpURL {
			o.what, o.use = "the MCP server", "call the MCP tools (writes included)"
		}
		out = append(out, o)
	}
	return out
}

// joinAnd joins names with commas and a final "and".
func joinAnd(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// serveMCPSide says what answers at serve's MCP URL: the ledger's own
// tools, or a forwarder in front of the user's MCP server (--mcp-relay,
// --mcp-command) or its cassette (--mcp-cassette).
func serveMCPSide(opts *serveOptions) string {
	command := strings.Fields(opts.MCPCommand)
	switch {
	case opts.MCPRelay != "":
		return forwardedTo(opts.MCPRelay, nil) + " over Streamable HTTP"
	case len(command) > 0:
		return forwardedTo("", command) + " over stdio"
	case opts.MCPCassette != "":
		return "replaying the MCP cassette below"
	}
	return "the ledger (" + strings.Join([]string{ledger.ToolCommitWrite, ledger.ToolCommitWriteKeyed, ledger.ToolReadLedger}, ", ") + ")"
}

// writeCountTable writes the count table: one row per run token either
// fake keeps (at most the rows most recently active, in token order, and
// the row of no token; rows 0 for all), then the total, then what it
// left out and what serve dropped (--max-runs).
func writeCountTable(w io.Writer, fk *servedFakes, rows int) error {
	t := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
	)
	t.Header([]string{"TOKEN", "INITIAL", "FOLLOW-UP", "UPSTREAM OUTCOMES", "MCP CALLS", "WRITES", "KEYS", "CANCELLED", "MCP MSGS", "FAILED WRITES", "SPAWNS", "EXITS", "MCP PROTOCOL"})
	row := func(name string, c control.RunCounts) error {
		u, l := c.Upstream, c.MCP
		return t.Append([]string{name, strconv.Itoa(u.Initial), strconv.Itoa(u.FollowUp), outcomes(u),
			mcpCallsCell(l), strconv.Itoa(l.Writes), strconv.Itoa(l.Keys), strconv.Itoa(l.Cancellations),
			strconv.Itoa(l.Messages), strconv.Itoa(l.WriteFailures), strconv.Itoa(l.Spawns), strconv.Itoa(l.Exits), wire.MCPProtocolsText(l.Protocols)})
	}
	counts := control.CountsOf(fk.upstream, fk.ledger, fk.runs, fk.linefiles()...)
	shown, hidden := recentRuns(counts.Runs, rows)
	for _, rc := range shown {
		name := rc.Token
		if name == "" {
			// serve is one run: what carries no run token is its own.
			name = "(serve, no token)"
		}
		if err := row(name, rc); err != nil {
			return fmt.Errorf("writing count table: %w", err)
		}
	}
	if err := row("TOTAL", counts.Total); err != nil {
		return fmt.Errorf("writing count table: %w", err)
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("writing count table: %w", err)
	}
	var b strings.Builder
	if hidden > 0 {
		fmt.Fprintf(&b, "%d more runs kept, not shown (the %d most recently active are; GET %scounts lists all)\n", hidden, rows, control.Prefix)
	}
	if counts.DroppedRuns > 0 {
		fmt.Fprintf(&b, "%d older runs dropped: the %d most recently active are kept (--max-runs); the total counts every run\n", counts.DroppedRuns, counts.MaxRuns)
	}
	if k := counts.MCPKeys; k.Forgotten > 0 {
		fmt.Fprintf(&b, "%d idempotency keys forgotten with the dropped runs that saw them (%d kept): a commit_write_keyed call with one writes again\n", k.Forgotten, k.Kept)
	}
	if l := counts.MCPLines; l.Forgotten > 0 {
		fmt.Fprintf(&b, "%d ledger lines forgotten with the dropped runs that wrote them, or the oldest of no token (%d kept): read_ledger returns the kept ones; the ledger file has them all\n", l.Forgotten, l.Kept)
	}
	for _, f := range fk.files() {
		if l := f.file.Loss(); l.Lost > 0 {
			fmt.Fprintf(&b, "LOST LINES: %s %s: %d of %d (%v)\n", f.what, l.Path, l.Lost, l.Written+l.Lost, l.Err)
		}
	}
	if n := fk.tooLarge.Load(); n > 0 {
		fmt.Fprintf(&b, "BODY TOO LARGE: %d model requests refused (413), their body over the --max-body-mib limit of %s\n", n, mib(fk.maxBody))
	}
	if n := fk.unrecorded.Load(); n > 0 && fk.recorder != nil {
		fmt.Fprintf(&b, "NOT RECORDED: %d model %s relayed but not recorded in %s, their body over the recording limit of %s; a replay of the cassette misses them\n",
			n, pluralize(int(n), "answer"), fk.recorder.Path(), mib(upstream.MaxRecordedBody))
	}
	if ss := counts.MCPSessions; ss.Refused > 0 {
		fmt.Fprintf(&b, "MCP SESSIONS: %d open, %d initialize refused at --mcp-max-sessions %d\n", ss.Live, ss.Refused, ss.Max)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing count table: %w", err)
	}
	return nil
}

// mcpCallsCell renders a run's tools/call count for the table: "3", with
// the calls forwarded and never answered ("3 (1 unknown)") and those
// refused because the forwarded server had exited ("3 (1 refused: server
// gone)"), which did not run.
func mcpCallsCell(l wire.MCPCounts) string {
	text := wire.CallsText(l.CallsTotal(), l.Unknown)
	if l.ServerGone == 0 {
		return text
	}
	if l.Unknown == 0 {
		return fmt.Sprintf("%s (%d refused: server gone)", text, l.ServerGone)
	}
	return fmt.Sprintf("%s, %d refused: server gone)", strings.TrimSuffix(text, ")"), l.ServerGone)
}

// recentRuns returns the runs to show, at most rows of them (0 for all):
// the most recently active ones and the one of no token, in their order,
// and how many it left out.
func recentRuns(runs []control.RunCounts, rows int) ([]control.RunCounts, int) {
	if rows <= 0 || len(runs) <= rows {
		return runs, 0
	}
	byRecency := slices.Clone(runs)
	slices.SortStableFunc(byRecency, func(a, b control.RunCounts) int { return b.LastActive.Compare(a.LastActive) })
	keep := map[string]bool{}
	for _, rc := range byRecency[:rows] {
		keep[rc.Token] = true
	}
	shown := slices.DeleteFunc(slices.Clone(runs), func(rc control.RunCounts) bool { return rc.Token != "" && !keep[rc.Token] })
	return shown, len(runs) - len(shown)
}

// outcomes renders upstream outcome counts like `sort upstream.log | uniq -c`.
func outcomes(c wire.UpstreamCounts) string {
	keys := slices.SortedFunc(maps.Keys(c.Outcomes), func(a, b wire.CountKey) int { return strings.Compare(a.String(), b.String()) })
	lines := make([]string, 0, len(keys))
	for _, k := range keys {
		lines = append(lines, fmt.Sprintf("%d %s", c.Outcomes[k], k))
	}
	if len(lines) == 0 {
		return "-"
	}
	return strings.Join(lines, "\n")
}

// modelPaths lists the upstream fake's model API paths (internal/dialect's
// table), one per line, indented for serve's help.
func modelPaths() string {
	var b strings.Builder
	for i, d := range dialect.All() {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString("              " + d.URLPath("MODEL", false))
	}
	return b.String()
}

// logScrubber returns the ReplaceAttr of the loggers of serve and gateway:
// it scrubs a log line's string and error values of credentials
// (secret.Scrub, with the values of replaycheck's secret-named environment
// variables).
func logScrubber() func([]string, slog.Attr) slog.Attr {
	env := secret.Environ(os.Environ())
	return func(_ []string, a slog.Attr) slog.Attr {
		var s string
		switch v := a.Value.Any().(type) {
		case string:
			s = v
		case error:
			s = v.Error()
		default:
			return a
		}
		return slog.String(a.Key, secret.Scrub(s, env, secret.Mark))
	}
}
