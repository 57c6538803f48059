// Command replaycheck is a fault-injection harness that proves whether an LLM
// gateway or agent client runs an MCP tool twice when something fails after
// the tool ran.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// A stdout closed early ("replaycheck run | head -1") fails the write
	// (EPIPE, said) instead of SIGPIPE killing the process: the exit code
	// stays the verdict's. Notified, not ignored, so that the targets
	// replaycheck starts get the default disposition.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	tuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd(os.Stdin, os.Stdout, os.Stderr).ExecuteContext(ctx)
	stop()
	code := exitCode(err)
	// A bare errRulesBroken was told by the report; joined to another
	// error (a report that could not be written), that one is printed.
	if err != nil && err != errRulesBroken {
		fmt.Fprintln(os.Stderr, "replaycheck:", err)
	}
	os.Exit(code)
}
