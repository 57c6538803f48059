package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Exit codes, documented in the root command's help and the README.
const (
	exitOK         = 0 // every rule held
	exitRuleBroken = 1 // a rule was broken
	exitBadUsage   = 2 // bad usage or a bad scenario or target file
	exitCannotRun  = 3 // the harness or the target could not run
	// exitInterrupted is a run stopped by Ctrl-C or SIGTERM, as a shell
	// reports a process that SIGINT ended (128+2).
	exitInterrupted = 130
)

// errInterrupted is what an interrupted run's error is (errors.Is): Ctrl-C
// or SIGTERM stopped it (exit 130).
var errInterrupted = errors.New("interrupted")

// interrupted is an interrupt with its cause, the signal that cancelled the
// command's context ("interrupt signal received").
type interrupted struct{ cause error }

func (e interrupted) Error() string {
	if e.cause == nil || e.cause == context.Canceled {
		return "interrupted"
	}
	return "interrupted: " + e.cause.Error()
}

func (e interrupted) Is(target error) bool { return target == errInterrupted }
func (e interrupted) Unwrap() error        { return e.cause }

// errRulesBroken is returned by commands whose report already told the user
// which rules broke; main prints nothing more for it.
var errRulesBroken = errors.New("a replay rule was broken")

// notPassed is the outcome of a run where no replay rule broke but runs did
// not pass (exit 1, as errRulesBroken): unmet did not meet their scenario's
// plain expectations (counts, status, the run completing), and unjudged had
// checks that could not judge (unknown is never a pass). Each names runs as
// "SCENARIO on TARGET".
type notPassed struct{ unmet, unjudged []string }

// maxNamedRuns bounds the runs notPassed names of each kind.
const maxNamedRuns = 10

func (e notPassed) Error() string {
	var parts []string
	if len(e.unmet) > 0 {
		parts = append(parts, fmt.Sprintf("%s did not meet the scenario's expectations: %s",
			countOf(len(e.unmet), "scenario run", "scenario runs"), namedRuns(e.unmet)))
	}
	if len(e.unjudged) > 0 {
		parts = append(parts, fmt.Sprintf("replaycheck could not judge %s: %s",
			countOf(len(e.unjudged), "scenario run", "scenario runs"), namedRuns(e.unjudged)))
	}
	return "no replay rule was broken, but " + strings.Join(parts, "; and ") + " (see their checks above)"
}

func (e notPassed) Is(target error) bool { return target == errRulesBroken }

// namedRuns joins runs with "; ", the first maxNamedRuns of them.
func namedRuns(runs []string) string {
	more := ""
	if len(runs) > maxNamedRuns {
		runs, more = runs[:maxNamedRuns], fmt.Sprintf(" and %d more", len(runs)-maxNamedRuns)
	}
	return strings.Join(runs, "; ") + more
}

// usageError marks an error as the user's input being wrong (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// asUsage wraps err so that it exits with exitBadUsage; nil stays nil.
func asUsage(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}

// exitCode maps the error a command returned to the process exit code.
func exitCode(err error) int {
	var u usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errInterrupted):
		return exitInterrupted
	case errors.Is(err, errRulesBroken):
		return exitRuleBroken
	case errors.As(err, &u), isCobraUsage(err):
		return exitBadUsage
	default:
		return exitCannotRun
	}
}
