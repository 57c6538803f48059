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

// couldNotJudge is the outcome of a run where no rule broke but checks could
// not judge (unknown is never a pass: exit 1, as errRulesBroken). Runs names
// the scenario runs, "SCENARIO on TARGET".
type couldNotJudge struct{ runs []string }

// maxNamedUnjudged bounds the runs couldNotJudge names.
const maxNamedUnjudged = 10

func (e couldNotJudge) Error() string {
	names := e.runs
	more := ""
	if len(names) > maxNamedUnjudged {
		names, more = names[:maxNamedUnjudged], fmt.Sprintf(" and %d more", len(e.runs)-maxNamedUnjudged)
	}
	return fmt.Sprintf("no replay rule was broken, but replaycheck could not judge %s: %s%s (see their checks above)",
		countOf(len(e.runs), "scenario run", "scenario runs"), strings.Join(names, "; "), more)
}

func (e couldNotJudge) Is(target error) bool { return target == errRulesBroken }

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
