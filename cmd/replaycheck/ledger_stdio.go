package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/fakes/ledgerstdio"
)

func newLedgerStdioCmd() *cobra.Command {
	opts := &ledgerstdio.Options{Version: version}
	cmd := &cobra.Command{
		Use:   ledgerstdio.Name + " URL",
		Short: "Serve a run's ledger over MCP stdio, for a client that spawns its MCP servers",
		Long: `ledger-stdio is an MCP server over stdio (newline-delimited JSON-RPC on stdin
and stdout) for agents that only spawn their MCP servers as processes. It
belongs to one ledger: it connects to URL, the ledger's Streamable HTTP URL
(in a client target file, the run's own: {{mcp_url}}), offers over stdio the
tools the ledger lists, as the ledger lists them (names, descriptions, input
schemas, annotations), and forwards each tools/call to the ledger, passing its
result back unchanged. The ledger runs and records every call and write, so
they are counted for the run exactly as over HTTP; a call is never sent twice
(a failure forwarding it is answered as an error, not retried).

Each process announces itself on its connection (the Replaycheck-Stdio-Spawn
header, its process id), so the ledger records one spawn event per process a
client starts, counted as spawns. When stdin closes, it closes its ledger
session and exits 0 (an exit event of the run, stdin_closed). It waits at most
--connect-timeout for the ledger.

It serves both MCP protocol generations to its client, as a current server
does: 2026-07-28 to a client that asks for it (server/discover and
self-describing requests, no initialize), 2025-11-25, 2025-06-18 or older to
one that initializes. Each call it forwards carries the version its client
used (the Replaycheck-Stdio-Protocol header), which the ledger records as the
call's. When the run pins a version (mcp: {protocol: …}, the ledger's
Config.Protocol), the ledger tells the process (Replaycheck-Stdio-Pin) and it
serves that version only.

It obeys the ledger's stdio faults (stdio_exit, stdio_hang,
stdio_malformed_line), which the ledger arms and counts per run: it exits
with code 70 as it starts or with a call in flight, hangs instead of
answering, or writes a line that is not JSON-RPC before an answer. The
ledger records each such end.

In a client target file, {{ledger_stdio_json}} is this command as a JSON
array for the run, {{ledger_stdio_command}} the binary and
{{ledger_stdio_args_json}} its arguments (see the README).`,
		Example: `  # the stdio server a client target's MCP config names, for the run's ledger
  replaycheck ledger-stdio http://127.0.0.1:8766/mcp

  # against a standalone ledger ('replaycheck serve')
  replaycheck ledger-stdio --connect-timeout 30s http://127.0.0.1:8766/mcp`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.URL = args[0]
			opts.In, opts.Out, opts.ErrOut = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			return runLedgerStdio(cmd.Context(), opts)
		},
	}
	cmd.Flags().DurationVar(&opts.ConnectTimeout, "connect-timeout", ledgerstdio.DefaultConnectTimeout, "how long to wait for the ledger to answer initialize and tools/list")
	return cmd
}

// runLedgerStdio serves the ledger over stdio (ledgerstdio.Serve), mapping
// its errors to exit codes: a bad option is bad usage, an ending context an
// interruption.
func runLedgerStdio(ctx context.Context, opts *ledgerstdio.Options) error {
	err := ledgerstdio.Serve(ctx, opts)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ledgerstdio.ErrBadUsage):
		return asUsage(err)
	case ctx.Err() != nil:
		return interrupted{context.Cause(ctx)}
	}
	return err
}
