package report

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TerminalText returns s safe to print on a terminal: control characters
// (newlines, carriage returns, escape sequences, C1 controls), bidi
// overrides and invalid UTF-8 are written as Go escapes (\n, \x1b, \u202e),
// so that a scenario or target name cannot move the cursor, recolour or
// rewrite what the terminal shows. Other text is returned as it is.
func TerminalText(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i, w := 0, 0; i < len(s); i += w {
		r, size := utf8.DecodeRuneInString(s[i:])
		w = size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x` + strconv.FormatInt(int64(s[i])|0x100, 16)[1:])
		case unsafeRune(r):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
	}
	return b.String()
}

func needsEscape(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	return strings.IndexFunc(s, unsafeRune) >= 0
}

// unsafeRune reports whether r changes how a terminal shows what follows:
// a control character or a bidi control.
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}

// ansiSequence matches the CSI sequences (colours, cursor moves) that
// programs print on terminals.
var ansiSequence = regexp.MustCompile("\x1b\\[[0-9:;<=>?]*[ -/]*[@-~]")

// outputText is a line a target or client printed, safe for a terminal:
// its colours dropped, other control characters escaped.
func outputText(s string) string {
	return TerminalText(ansiSequence.ReplaceAllString(s, ""))
}

func wordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// mdName renders a name (a scenario's, a target's) as literal Markdown text
// on one line: control characters escaped as by TerminalText and every
// character Markdown or HTML would read as markup backslash-escaped, so a
// name renders as written and cannot open a link, a tag or a code span.
func mdName(s string) string {
	rs := []rune(TerminalText(s))
	var b strings.Builder
	for i, r := range rs {
		// An underscore inside a word (fault_on) is not emphasis.
		inWord := r == '_' && i > 0 && i < len(rs)-1 && wordRune(rs[i-1]) && wordRune(rs[i+1])
		if strings.ContainsRune("\\`*_[]<>|~&", r) && !inWord {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
