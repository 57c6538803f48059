package scenario

import (
	"fmt"
	"strings"
)

// Error is a problem in a scenario file, at a line and column (1-based; 0
// when the problem is not at one place). Source is the offending line with
// its neighbour and a caret under the column.
type Error struct {
	File      string
	Line, Col int
	Msg       string
	Source    string
	// Warning marks a problem that does not stop the file from loading
	// (see Scenario.Warnings).
	Warning bool
}

// Error renders "file:line:col: msg" (with "warning: " before msg for a
// warning) followed by the source excerpt.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	b.WriteString(": ")
	if e.Warning {
		b.WriteString("warning: ")
	}
	b.WriteString(e.Msg)
	if e.Source != "" {
		b.WriteString("\n")
		b.WriteString(e.Source)
	}
	return b.String()
}

// ErrorList is every problem found in a set of files, in file order.
type ErrorList []*Error

// Error renders each problem, separated by blank lines.
func (l ErrorList) Error() string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n\n")
}

// Unwrap returns the problems, so errors.As finds an *Error.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// newError builds an Error with a source excerpt from src.
func newError(file string, src []byte, line, col int, format string, args ...any) *Error {
	return &Error{File: file, Line: line, Col: col, Msg: fmt.Sprintf(format, args...), Source: excerpt(src, line, col)}
}

// excerpt shows the line before and the line at line, with a caret at col.
func excerpt(src []byte, line, col int) string {
	if line <= 0 {
		return ""
	}
	lines := strings.Split(string(src), "\n")
	if line > len(lines) {
		return ""
	}
	var b strings.Builder
	if line > 1 {
		fmt.Fprintf(&b, "  %4d | %s\n", line-1, lines[line-2])
	}
	fmt.Fprintf(&b, "> %4d | %s", line, lines[line-1])
	if col > 0 {
		fmt.Fprintf(&b, "\n         %s^", strings.Repeat(" ", col-1))
	}
	return b.String()
}

// NewError returns an *Error at line and col (1-based) of file with the source
// excerpt from src, for other YAML file formats (target files, baselines)
// whose errors should read like a scenario's.
func NewError(file string, src []byte, line, col int, format string, args ...any) *Error {
	return newError(file, src, line, col, format, args...)
}
