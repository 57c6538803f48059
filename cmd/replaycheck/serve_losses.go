package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/replaycheck/replaycheck/fakes/control"
)

// watchFiles tells errOut at once, in one line per file, when a file serve
// appends to first fails a write; later failures of the same file are only
// counted (the count table, GET counts, serve's exit). The returned channel
// is closed once ctx has ended and every notice is written.
func watchFiles(ctx context.Context, errOut io.Writer, files []servedFile) <-chan struct{} {
	var mu sync.Mutex // one notice at a time
	var wg sync.WaitGroup
	for _, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-f.file.Failed():
			case <-ctx.Done():
				return
			}
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(errOut, "replaycheck serve: %s %s: a line could not be written and is lost (%v); lost lines are counted in the count table and %scounts, and serve exits 3\n",
				f.what, f.file.Path(), f.file.Loss().Err, control.Prefix)
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	return done
}

// lostLines returns an error (exit 3) naming every file that lost lines:
// how many of how many, and the first error.
func lostLines(files []servedFile) error {
	var errs []error
	for _, f := range files {
		if l := f.file.Loss(); l.Err != nil {
			errs = append(errs, fmt.Errorf("serve: %s %s: %d of %d lines could not be written: %w", f.what, l.Path, l.Lost, l.Written+l.Lost, l.Err))
		}
	}
	return errors.Join(errs...)
}

// sayUnfired tells errOut about every armed fault that never fired: a
// fault that matched nothing, or matched requests it could not act on (a
// stream drop on a plain answer), did nothing the user should count on.
func sayUnfired(errOut io.Writer, fk *servedFakes) {
	for _, u := range control.CountsOf(fk.upstream, fk.ledger, nil).UnfiredFaults {
		run := "for every request"
		if u.Run != "" {
			run = "for run " + u.Run
		}
		side, fault, why := "mcp", "", ""
		if u.Upstream != nil {
			side, fault = "upstream", u.Upstream.String()
			switch {
			case u.Upstream.StreamOnly():
				why = "; it acts on streamed answers only"
			case u.Upstream.PlainOnly():
				why = "; it acts on non-streamed answers only"
			}
		} else {
			fault = u.MCP.String()
		}
		fmt.Fprintf(errOut, "replaycheck serve: %s fault %s, armed %s, never fired (it matched %d requests%s)\n", side, fault, run, u.Matched, why)
	}
}
