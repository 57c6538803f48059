package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/gateway"
	"github.com/replaycheck/replaycheck/internal/loopback"
	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

// envMasterKey is read when --master-key is not given.
const envMasterKey = "REPLAYCHECK_MASTER_KEY"

// gatewayOptions are the flags of `replaycheck gateway`.
type gatewayOptions struct {
	Addr        string
	Upstream    string
	MCP         string
	Mode        string
	Bugs        []string
	NumRetries  int
	Fallbacks   []string
	MasterKey   string
	ToolTimeout time.Duration
	// StreamIdleTimeout gives up on a streamed model answer that sends
	// nothing for this long.
	StreamIdleTimeout time.Duration
	Verbose           bool
	// Config is a YAML file of flag values (--config); flags given on the
	// command line win over it.
	Config string
	// Checkpoint is the gateway's checkpoint file (gateway.Config.Checkpoint);
	// "" is none.
	Checkpoint string
	// Resume continues the turns Checkpoint holds as pending once the
	// gateway listens (gateway.Gateway.Resume).
	Resume bool

	Out    io.Writer
	ErrOut io.Writer
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// Ready, when set, is called with the bound address once the gateway
	// accepts connections.
	Ready func(addr string)
}

func newGatewayCmd() *cobra.Command {
	opts := &gatewayOptions{}
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Run the built-in LLM gateway standalone, naive or guarded",
		Long: `gateway runs replaycheck's built-in LLM gateway: a small proxy in the shape of
LiteLLM's that serves ` + gateway.ServedPaths() + `, runs
auto-approved MCP tools on the ledger, and retries and falls back between model
groups. Point it at the fakes of 'replaycheck serve' and reproduce seed 000 by
hand: --mode naive has every replay bug, --mode guarded none, and --bug turns
single bugs on.

Switches:
` + bugHelp() + `
The master key is read from --master-key or $` + envMasterKey + ` and never printed.
It stops cleanly on Ctrl-C or SIGTERM.`,
		Example: `  # the seed's Before: every replay bug on, the fakes on their default ports
  replaycheck serve --ledger ledger.txt --upstream-log upstream.log --flags-dir . &
  replaycheck gateway --mode naive --master-key sk-local

  # the seed's After, with the streaming case's fallback
  replaycheck gateway --mode guarded --fallback repro-model=backup-model

  # guarded except for one bug
  replaycheck gateway --bug stream-splice --fallback repro-model=backup-model

  # give up on a model stream that goes silent for 2s (a stall fault) instead of 5s
  replaycheck gateway --stream-idle-timeout 2s

  # settings from a file (upstream, mcp, mode, bugs, num_retries, fallbacks, tool_timeout, stream_idle_timeout)
  replaycheck gateway --config gateway.yaml --addr 127.0.0.1:4001

  # checkpoint every turn; after a kill, start it again with --resume to finish the pending turns
  replaycheck gateway --checkpoint run/checkpoint.jsonl
  replaycheck gateway --checkpoint run/checkpoint.jsonl --resume`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Out, opts.ErrOut = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if err := applyGatewayFile(opts, cmd.Flags().Changed); err != nil {
				return err
			}
			return runGateway(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Addr, "addr", "127.0.0.1:4000", "address to listen on")
	f.StringVar(&opts.Upstream, "upstream", "http://127.0.0.1:8765/v1", "model API base URL, including /v1")
	f.StringVar(&opts.MCP, "mcp", "http://127.0.0.1:8766/mcp", "ledger MCP server URL (Streamable HTTP)")
	f.StringVar(&opts.Mode, "mode", gateway.ModeGuarded, "naive (every replay bug on) or guarded (none)")
	f.StringArrayVar(&opts.Bugs, "bug", nil, "turn replay bugs on (repeatable or comma-separated); see the list above")
	f.IntVar(&opts.NumRetries, "num-retries", gateway.DefaultNumRetries, "router retries per model group (0 = none)")
	f.StringArrayVar(&opts.Fallbacks, "fallback", nil, "model group fallback GROUP=FALLBACK (repeatable)")
	f.StringVar(&opts.MasterKey, "master-key", "", "require Authorization: Bearer KEY (default $"+envMasterKey+")")
	f.DurationVar(&opts.ToolTimeout, "tool-timeout", gateway.DefaultToolTimeout, "timeout of one MCP tool call")
	f.DurationVar(&opts.StreamIdleTimeout, "stream-idle-timeout", gateway.DefaultStreamIdleTimeout,
		"give up on a streamed model answer that sends nothing for this long (e.g. 500ms); the request then fails over or errors like a cut stream")
	f.BoolVarP(&opts.Verbose, "verbose", "v", false, "log every request and router decision to stderr")
	f.StringVar(&opts.Config, "config", "", "YAML file of flag values: upstream, mcp, mode, bugs, num_retries, fallbacks {GROUP: FALLBACK}, tool_timeout, stream_idle_timeout (flags win)")
	f.StringVar(&opts.Checkpoint, "checkpoint", "", "append each turn's app request, tool calls and end to this file (JSON lines, synced), for --resume after a kill")
	f.BoolVar(&opts.Resume, "resume", false, "once listening, finish the turns --checkpoint holds as pending (begun by a gateway that was killed), without sending a checkpointed tool call again")
	return cmd
}

// maxGatewayFileSize bounds a gateway config file (--config).
const maxGatewayFileSize = 1 << 20

// gatewayFile is a gateway config file (--config): flag values in YAML, so
// that a harness can render one from a template.
type gatewayFile struct {
	Upstream          string            `yaml:"upstream"`
	MCP               string            `yaml:"mcp"`
	Mode              string            `yaml:"mode"`
	Bugs              []string          `yaml:"bugs"`
	NumRetries        *int              `yaml:"num_retries"`
	Fallbacks         map[string]string `yaml:"fallbacks"`
	ToolTimeout       fault.Duration    `yaml:"tool_timeout"`
	StreamIdleTimeout fault.Duration    `yaml:"stream_idle_timeout"`
}

// applyGatewayFile fills the options from opts.Config where the flag was not
// given (changed reports whether it was). A bad file is the user's error
// (exit 2), at its line and column.
func applyGatewayFile(opts *gatewayOptions, changed func(flag string) bool) error {
	if opts.Config == "" {
		return nil
	}
	src, err := yamlfile.ReadFile(opts.Config, maxGatewayFileSize)
	if err != nil {
		return asUsage(fmt.Errorf("--config %s: %s", opts.Config, yamlfile.DescribeReadError(err)))
	}
	var g gatewayFile
	if err := yamlfile.Decode(opts.Config, src, &g); err != nil {
		return asUsage(fmt.Errorf("--config: %w", err))
	}
	set := func(flag, v string, dst *string) {
		if v != "" && !changed(flag) {
			*dst = v
		}
	}
	set("upstream", g.Upstream, &opts.Upstream)
	set("mcp", g.MCP, &opts.MCP)
	set("mode", g.Mode, &opts.Mode)
	if len(g.Bugs) > 0 && !changed("bug") {
		opts.Bugs = g.Bugs
	}
	if g.NumRetries != nil && !changed("num-retries") {
		opts.NumRetries = *g.NumRetries
	}
	if g.ToolTimeout > 0 && !changed("tool-timeout") {
		opts.ToolTimeout = g.ToolTimeout.D()
	}
	if g.StreamIdleTimeout > 0 && !changed("stream-idle-timeout") {
		opts.StreamIdleTimeout = g.StreamIdleTimeout.D()
	}
	if len(g.Fallbacks) > 0 && !changed("fallback") {
		opts.Fallbacks = nil
		for _, from := range slices.Sorted(maps.Keys(g.Fallbacks)) {
			opts.Fallbacks = append(opts.Fallbacks, from+"="+g.Fallbacks[from])
		}
	}
	return nil
}

func bugHelp() string {
	var b strings.Builder
	for _, info := range gateway.AllBugs() {
		fmt.Fprintf(&b, "  %-27s %s\n", info.Bug, info.Doc)
	}
	return b.String()
}

// gatewayConfig turns the options into a gateway.Config; every error is the
// user's (exit 2).
func gatewayConfig(opts *gatewayOptions) (gateway.Config, error) {
	var names []string
	for _, b := range opts.Bugs {
		for _, n := range strings.Split(b, ",") {
			if strings.TrimSpace(n) != "" { // --bug= is none (a target file's unset ${VAR:-})
				names = append(names, n)
			}
		}
	}
	if opts.Resume && opts.Checkpoint == "" {
		return gateway.Config{}, asUsage(errors.New("--resume needs --checkpoint: the file the killed gateway's pending turns are in"))
	}
	bugs, err := gateway.ParseBugs(opts.Mode, names)
	if err != nil {
		return gateway.Config{}, asUsage(err)
	}
	_, port, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return gateway.Config{}, asUsage(fmt.Errorf("--addr %q: want HOST:PORT, e.g. 127.0.0.1:4000: %w", opts.Addr, err))
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return gateway.Config{}, asUsage(fmt.Errorf("--addr %q: port %q: want a number from 0 to 65535", opts.Addr, port))
	}
	if opts.NumRetries < 0 {
		return gateway.Config{}, asUsage(fmt.Errorf("--num-retries %d: want 0 or more", opts.NumRetries))
	}
	retries := opts.NumRetries
	if retries == 0 {
		retries = -1 // gateway.Config: negative means none, 0 the default
	}
	if opts.ToolTimeout <= 0 {
		return gateway.Config{}, asUsage(fmt.Errorf("--tool-timeout %s: want a positive duration", opts.ToolTimeout))
	}
	if opts.StreamIdleTimeout <= 0 {
		return gateway.Config{}, asUsage(fmt.Errorf("--stream-idle-timeout %s: want a positive duration, e.g. 500ms", opts.StreamIdleTimeout))
	}
	fallbacks := map[string]string{}
	for _, fb := range opts.Fallbacks {
		from, to, ok := strings.Cut(fb, "=")
		from, to = strings.TrimSpace(from), strings.TrimSpace(to)
		if !ok || from == "" || to == "" || from == to {
			return gateway.Config{}, asUsage(fmt.Errorf("--fallback %q: want GROUP=FALLBACK with two different groups", fb))
		}
		if prev, dup := fallbacks[from]; dup && prev != to {
			return gateway.Config{}, asUsage(fmt.Errorf("--fallback %q: group %q already falls back to %q", fb, from, prev))
		}
		fallbacks[from] = to
	}
	key := opts.MasterKey
	if key == "" {
		getenv := opts.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		key = getenv(envMasterKey)
	}
	cfg := gateway.Config{
		Upstream:          opts.Upstream,
		MCP:               opts.MCP,
		Bugs:              bugs,
		NumRetries:        retries,
		Fallbacks:         fallbacks,
		MasterKey:         key,
		ToolTimeout:       opts.ToolTimeout,
		StreamIdleTimeout: opts.StreamIdleTimeout,
		Checkpoint:        opts.Checkpoint,
	}
	if opts.Verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(opts.ErrOut, &slog.HandlerOptions{ReplaceAttr: logScrubber()}))
	}
	return cfg, nil
}

// runGateway serves the gateway on opts.Addr until ctx ends, then shuts it
// down: in-flight requests get a few seconds, then the MCP sessions close.
func runGateway(ctx context.Context, opts *gatewayOptions) error {
	if opts.ErrOut == nil {
		opts.ErrOut = io.Discard
	}
	cfg, err := gatewayConfig(opts)
	if err != nil {
		return err
	}
	g, err := gateway.New(cfg)
	if err != nil {
		return asUsage(err)
	}
	defer g.Close()
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("gateway: address %s is already in use (another gateway or a LiteLLM proxy?); pick another with --addr: %w", opts.Addr, err)
		}
		return fmt.Errorf("gateway: listening on %s: %w", opts.Addr, err)
	}
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(loopback.DeferHeaderTimeout(ln)) }()

	addr := ln.Addr().String()
	if err := printGatewayBanner(opts.Out, addr, cfg); err != nil {
		_ = srv.Close()
		<-served
		return fmt.Errorf("gateway: writing the banner: %w", err)
	}
	if opts.Ready != nil {
		opts.Ready(addr)
	}
	if opts.Resume {
		if err := printResumed(ctx, opts.Out, g); err != nil {
			fmt.Fprintf(opts.ErrOut, "gateway: resuming: %v\n", err)
		}
	}
	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("gateway: serving on %s: %w", addr, err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
	}
	<-served
	// A session that cannot be closed (the MCP server went first) ends
	// with the gateway all the same: said, not a failure of its run.
	if err := g.Close(); err != nil {
		fmt.Fprintf(opts.ErrOut, "gateway: closing MCP sessions: %v\n", err)
	}
	fmt.Fprintln(opts.Out, "gateway stopped")
	return nil
}

// printResumed finishes the turns g's checkpoint holds as pending and
// writes a line for each: its answer, or the error that ended it.
func printResumed(ctx context.Context, w io.Writer, g *gateway.Gateway) error {
	turns, err := g.Resume(ctx)
	if w == nil {
		w = io.Discard
	}
	fmt.Fprintf(w, "resumed %d pending turn(s)\n", len(turns))
	for _, t := range turns {
		if t.Err != nil {
			fmt.Fprintf(w, "  %s: error: %v\n", t.ID, t.Err)
			continue
		}
		fmt.Fprintf(w, "  %s: %s\n", t.ID, strings.Join(strings.Fields(t.Answer), " "))
	}
	return err
}

func printGatewayBanner(w io.Writer, addr string, cfg gateway.Config) error {
	if w == nil {
		return nil
	}
	retries := cfg.NumRetries
	if retries < 0 {
		retries = 0
	}
	var fbs []string
	for from, to := range cfg.Fallbacks {
		fbs = append(fbs, from+" -> "+to)
	}
	sort.Strings(fbs)
	fallbacks := "none"
	if len(fbs) > 0 {
		fallbacks = strings.Join(fbs, ", ")
	}
	key := "none"
	if cfg.MasterKey != "" {
		key = "required (not shown)"
	}
	_, err := fmt.Fprintf(w, `replaycheck gateway listening on http://%s
  upstream:    %s
  mcp:         %s
  switches:    %s
  num_retries: %d
  fallbacks:   %s
  master key:  %s
`, addr, redactURL(cfg.Upstream), redactURL(cfg.MCP), cfg.Bugs, retries, fallbacks, key)
	return err
}

// redactURL hides the password of a URL's userinfo and its query values
// (where a key such as ?key=… travels), so a banner never shows a credential
// given in --upstream or --mcp.
func redactURL(raw string) string { return gateway.RedactURL(raw) }
