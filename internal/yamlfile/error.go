package yamlfile

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// Error is a problem in a YAML file, at a line and column (1-based; 0 when
// the problem is not at one place). Source is the offending line with the
// line before it and a caret under the column.
type Error struct {
	File      string
	Line, Col int
	Msg       string
	Source    string
	// Warning marks a problem that does not stop the file from loading.
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

// NewError returns an *Error at line and col (1-based) of file, with the
// source excerpt taken from src; line 0 is no place and no excerpt.
func NewError(file string, src []byte, line, col int, format string, args ...any) *Error {
	return &Error{File: file, Line: line, Col: col, Msg: fmt.Sprintf(format, args...), Source: excerpt(src, line, col)}
}

// ErrorAt returns an *Error at node n of file (at no place when n is nil),
// with the source excerpt taken from src.
func ErrorAt(file string, src []byte, n ast.Node, format string, args ...any) *Error {
	line, col := Pos(n)
	return NewError(file, src, line, col, format, args...)
}

// ReadError is the *Error of a file that could not be read (see
// DescribeReadError).
func ReadError(file string, err error) *Error {
	return &Error{File: file, Msg: DescribeReadError(err)}
}

// DescribeReadError is the text of a ReadFile error for a message that
// already names the path: a *fs.PathError gives only its cause.
func DescribeReadError(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// excerpt shows the line before and the line at line, with a caret at col.
// It keeps the two-line form of the golden files rather than goccy/go-yaml's
// FormatError, which shows more context and colours. A line longer than
// excerptWidth bytes is cut to the part around the column.
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
		prev, _ := window(lines[line-2], 1)
		fmt.Fprintf(&b, "  %4d | %s\n", line-1, prev)
	}
	text, col := window(lines[line-1], col)
	fmt.Fprintf(&b, "> %4d | %s", line, text)
	if col > 0 {
		fmt.Fprintf(&b, "\n         %s^", strings.Repeat(" ", col-1))
	}
	return b.String()
}

// excerptWidth is the longest line an excerpt shows whole.
const excerptWidth = 160

// window returns the part of text around col (1-based, in bytes) at most
// excerptWidth bytes long, marked with "…" where it was cut, and col within
// it.
func window(text string, col int) (string, int) {
	if len(text) <= excerptWidth {
		return text, col
	}
	start := max(0, min(col-1-excerptWidth/2, len(text)-excerptWidth))
	out := text[start : start+excerptWidth]
	if start > 0 {
		out = "…" + out
		col = col - start + 1
	}
	if start+excerptWidth < len(text) {
		out += "…"
	}
	return out, col
}
