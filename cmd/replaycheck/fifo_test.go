//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInputNotARegularFile names a FIFO where each command takes an input
// file: each refuses it at once, naming it and what it is, with exit 2,
// instead of blocking in open(2) until something writes to the pipe. A
// command still blocked after the deadline fails the test (and the pipe is
// then opened for writing, so the blocked open returns).
func TestInputNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "x.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	inDir := filepath.Join(dir, "suite")
	if err := os.Mkdir(inDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(inDir, "y.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		file string
	}{
		{name: "validate", args: []string{"validate", fifo}, file: fifo},
		{name: "validate a directory holding one", args: []string{"validate", inDir}, file: filepath.Join(inDir, "y.yaml")},
		{name: "run", args: []string{"run", fifo}, file: fifo},
		{name: "run --target", args: []string{"run", "--target", fifo}, file: fifo},
		{name: "validate --target", args: []string{"validate", "--target", fifo}, file: fifo},
		{name: "gateway --config", args: []string{"gateway", "--config", fifo, "--addr", "127.0.0.1:0"}, file: fifo},
		{name: "serve --script", args: []string{"serve", "--script", fifo, "--upstream-addr", "127.0.0.1:0", "--mcp-addr", "127.0.0.1:0"}, file: fifo},
		{name: "serve --cassette", args: []string{"serve", "--cassette", fifo, "--upstream-addr", "127.0.0.1:0", "--mcp-addr", "127.0.0.1:0"}, file: fifo},
		{name: "report merge", args: []string{"report", "merge", fifo}, file: fifo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			root := newRootCmd(strings.NewReader(""), &out, &out)
			root.SetArgs(tt.args)
			done := make(chan error, 1)
			go func() { done <- root.ExecuteContext(context.Background()) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				if w, oerr := os.OpenFile(tt.file, os.O_WRONLY|syscall.O_NONBLOCK, 0); oerr == nil {
					w.Close()
				}
				t.Fatalf("replaycheck %s still blocked after 20s on the FIFO %s", strings.Join(tt.args, " "), tt.file)
			}
			if err == nil || exitCode(err) != 2 {
				t.Fatalf("error %v (exit %d), want exit 2\noutput:\n%s", err, exitCode(err), out.String())
			}
			// validate prints each problem and returns their count.
			if said := err.Error() + out.String(); !strings.Contains(said, tt.file+": is a named pipe (FIFO), not a regular file") {
				t.Errorf("error %v, want one naming %s as a named pipe\noutput:\n%s", err, tt.file, out.String())
			}
		})
	}
}
