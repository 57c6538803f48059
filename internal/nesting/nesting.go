// Package nesting bounds how deeply a YAML or JSON document nests, by one
// pass over its bytes before any parser sees them. Parsers spend memory and
// time per level of nesting (goccy/go-yaml took 14 GB for a 200 KB list of
// lists), so every loader of the harness's YAML files and every fake that
// decodes JSON from the network checks the depth first, in constant memory
// for JSON and memory linear in the depth for YAML.
//
// The depth of a document is the largest number of collections (mappings
// and sequences, block or flow) that contain one point of it: "a: 1" is 1,
// "[[1]]" is 2. The YAML scan never counts less than the parser builds: it
// follows YAML's rules for quoted and block scalars, comments and flow
// collections, and where it is unsure it counts.
package nesting

import (
	"fmt"
	"strings"
)

// Max is the depth every input of the harness may reach. Scenarios, target
// files and real API requests (tool schemas included) stay far below it.
const Max = 100

// Error is a document that nests deeper than Max levels, at the line and
// column (1-based, in bytes) of the collection that opens level Max+1.
type Error struct {
	Line, Col int
	Max       int
}

// Error says what is too deep; the caller names the file.
func (e *Error) Error() string {
	return fmt.Sprintf("nests deeper than %d levels (lists and mappings inside each other)", e.Max)
}

// CheckJSON is JSON with Max for an input named what (such as "request
// body"): its error says "what:line:col: nests deeper …" and wraps the
// *Error.
func CheckJSON(what string, src []byte) error {
	if e := JSON(src, Max); e != nil {
		return fmt.Errorf("%s:%d:%d: %w", what, e.Line, e.Col, e)
	}
	return nil
}

// JSON returns an *Error when src nests deeper than max, else nil. It does
// not validate src: a document it passes may still fail to decode.
func JSON(src []byte, max int) *Error {
	depth, line, lineStart := 0, 1, 0
	inString, escaped := false, false
	for i, c := range src {
		switch {
		case c == '\n':
			line, lineStart = line+1, i+1
			escaped = false
		case inString && escaped:
			escaped = false
		case inString:
			escaped = c == '\\'
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > max {
				return &Error{Line: line, Col: i - lineStart + 1, Max: max}
			}
		case (c == ']' || c == '}') && depth > 0:
			depth--
		}
	}
	return nil
}

// YAML returns an *Error when src, a stream of YAML documents, nests
// deeper than max, else nil. It does not validate src.
func YAML(src []byte, max int) *Error {
	s := &yamlScan{max: max, blockParent: noBlock, blockIndent: noBlock, plainParent: noBlock}
	line := 1
	for start := 0; start <= len(src); line++ {
		end := start
		for end < len(src) && src[end] != '\n' && src[end] != '\r' {
			end++
		}
		if err := s.line(src[start:end], line); err != nil {
			return err
		}
		// A line ends at "\n", "\r\n" or, for goccy/go-yaml, a lone "\r".
		if start = end + 1; end+1 < len(src) && src[end] == '\r' && src[end+1] == '\n' {
			start++
		}
	}
	return nil
}

// noBlock marks blockParent and plainParent unset.
const noBlock = -2

// level is one open block collection: the column it starts at and whether
// it is a sequence.
type level struct {
	col int
	seq bool
}

// yamlScan is the state of a YAML scan between lines.
type yamlScan struct {
	max int
	// block holds the open block collections, outermost first.
	block []level
	// flow is the depth of open flow collections, opened their opening
	// brackets (or pairMark).
	flow   int
	opened []byte
	// quote is the quote character of a quoted scalar that goes on past
	// the end of the line, or 0.
	quote byte
	// atNode is whether the next character in a flow collection starts a
	// node (after "[", "{", "," or ": "), kept across lines.
	atNode bool
	// blockParent, when not noBlock, is the indentation of the parent of a
	// block scalar ("|" or ">") whose content lines are being skipped: the
	// lines indented deeper, and blank lines.
	blockParent int
	// blockIndent is the indentation of the block scalar's first line,
	// noBlock before it: a line indented less ends the scalar.
	blockIndent int
	// plainParent, when not noBlock, is the indentation of the parent of a
	// plain scalar that ended its line: a line indented deeper goes on
	// with it.
	plainParent int
	// pending is what the line before ended with when no node followed
	// it: a sequence entry's "-" (a mapping the next line starts at the
	// same column goes under it in goccy/go-yaml) or an anchor or a tag
	// (any collection the next line starts goes under it). After either,
	// the next line closes no collection, whatever its indentation.
	pending pending
	// nameNext is whether the line before ended with "&": goccy/go-yaml
	// takes the next line's first token for the anchor's name.
	nameNext bool
}

// pending is what a line ended with; see yamlScan.pending.
type pending int

const (
	noPending pending = iota
	pendingEntry
	pendingProps
)

// depth is the number of open collections.
func (s *yamlScan) depth() int { return len(s.block) + s.flow }

// line scans one line (without its newline) of line number n.
func (s *yamlScan) line(b []byte, n int) *Error {
	indent := skipSpace(b, 0)
	if s.blockParent != noBlock {
		switch {
		case indent == len(b):
			return nil // a blank line of the block scalar
		case s.blockIndent == noBlock && indent > s.blockParent && !docMarker(b):
			s.blockIndent = indent // its first line sets its indentation
			return nil
		case s.blockIndent != noBlock && indent >= s.blockIndent && !docMarker(b):
			return nil
		}
		s.blockParent, s.blockIndent = noBlock, noBlock
	}
	pos := 0
	if s.quote != 0 {
		if pos = s.closeQuote(b, 0); pos < 0 {
			return nil
		}
		s.atNode = false
	}
	if s.flow > 0 {
		var err *Error
		if pos, err = s.flowScan(b, pos, n); err != nil || pos >= len(b) {
			return err
		}
		// The flow collection ended on this line: what follows is block
		// context, after a node (": " may follow to make it a key).
		return s.blockScan(b, pos, n, -1, false)
	}
	if pos > 0 {
		// A multi-line quoted scalar in block context ended here.
		return s.blockScan(b, pos, n, -1, false)
	}
	if indent == len(b) || b[indent] == '#' {
		return nil
	}
	// A line indented under a plain scalar goes on with it: what starts it
	// is text, but indicators and keys on it still count, as the parser
	// may take them for structure.
	more := s.plainParent != noBlock && indent > s.plainParent
	s.plainParent = noBlock
	if indent == 0 && b[0] == '%' {
		return nil // a directive
	}
	if docMarker(b) {
		// What follows a marker on its line is read as a node, as
		// goccy/go-yaml reads it even without a space between.
		s.block = s.block[:0]
		return s.blockScan(b, skipSpace(b, 3), n, -1, true)
	}
	if s.nameNext {
		s.nameNext = false
		// The name is a word; what may open a collection still counts.
		indicator := strings.IndexByte("-?:", b[indent]) >= 0 && endsToken(b, indent+1)
		if pos = indent; !tokenStart(b[pos]) && !indicator {
			pos = skipSpace(b, skipToken(b, pos))
		}
		if pos == len(b) {
			return nil
		}
		return s.blockScan(b, pos, n, -1, true)
	}
	// A line opening with ": " closes nothing either: goccy/go-yaml may
	// make the scalar before it, however indented, a key.
	value := b[indent] == ':' && endsToken(b, indent+1)
	for s.pending == noPending && !value && len(s.block) > 0 && s.block[len(s.block)-1].col > indent {
		s.block = s.block[:len(s.block)-1]
	}
	if more {
		return s.blockScan(b, indent, n, indent, false)
	}
	return s.blockScan(b, indent, n, indent, true)
}

// blockScan scans b from pos in block context. first is the column of the
// line's first node, where a collection may continue one of the line
// before, or -1 when the line's first node is behind (a quoted scalar or
// flow collection begun on an earlier line); atNode is whether pos starts a
// node.
func (s *yamlScan) blockScan(b []byte, pos, n, first int, atNode bool) *Error {
	seg := pos // where the node that a ": " would make a key starts
	plain, ends, bare := false, noPending, false
	// fresh is whether a quoted scalar or flow collection has just ended:
	// goccy/go-yaml reads what follows it as a new token, so an
	// indicator, a bracket or a quote there opens what it opens.
	fresh := !atNode && first == -1
	for pos < len(b) {
		c := b[pos]
		if c == ' ' || c == '\t' || c == '\r' {
			pos++
			continue
		}
		if c == '#' && (pos == 0 || isSpace(b[pos-1])) {
			break
		}
		if !atNode {
			if (c == '-' || c == '?') && pos == first && endsToken(b, pos+1) {
				atNode = true // an indicator opening a line of a plain scalar
				continue
			}
			if c == ':' && endsToken(b, pos+1) {
				if err := s.open(seg, false, first, n); err != nil {
					return err
				}
				first = -1
				pos = skipSpace(b, pos+1)
				seg, atNode, plain, fresh = pos, true, false, false
				continue
			}
			if fresh && ((c == '-' || c == '?') && endsToken(b, pos+1) || c == '[' || c == '{' || c == '\'' || c == '"') {
				atNode, fresh = true, false
				continue
			}
			pos, fresh = pos+1, false
			continue
		}
		switch {
		case (c == '-' || c == '?' || c == ':') && endsToken(b, pos+1):
			if c == ':' {
				// A value with no key on its line: goccy/go-yaml may make
				// the scalar before it a key, so it counts as a level.
				first = -1
			}
			if err := s.open(pos, c == '-', first, n); err != nil {
				return err
			}
			first = -1
			pos = skipSpace(b, pos+1)
			seg, ends = pos, noPending
			if c == '-' {
				ends = pendingEntry
			}
		case c == '&' && pos+1 < len(b) && tokenStart(b[pos+1]):
			// goccy/go-yaml reads an anchor's name as the token after
			// "&": here a quoted scalar, a flow collection or a block
			// scalar's header, scanned as one.
			pos++
			ends = pendingProps
			continue
		case c == '&' || c == '!' || c == '*' && endsToken(b, pos+1):
			// Properties, or an alias without a name (goccy/go-yaml takes
			// one as a property). After an anchor without a name,
			// goccy/go-yaml may put the next line under the line's node.
			bare = bare || c == '&' && (pos+1 == len(b) || isSpace(b[pos+1]))
			pos = skipSpace(b, skipToken(b, pos))
			s.nameNext = c == '&' && bare && pos == len(b)
			ends = pendingProps
			continue
		case (c == '|' || c == '>') && blockHeader(b, pos+1):
			s.blockParent = -1
			if len(s.block) > 0 {
				s.blockParent = s.block[len(s.block)-1].col
			}
			return nil
		case c == '\'' || c == '"':
			s.quote = c
			if pos = s.closeQuote(b, pos+1); pos < 0 {
				return nil
			}
			atNode, fresh = false, true
		case c == '[' || c == '{':
			var err *Error
			if pos, err = s.flowScan(b, pos, n); err != nil || pos >= len(b) {
				return err
			}
			atNode, fresh = false, true
		default:
			atNode, plain = false, true
			pos++
		}
	}
	if s.pending = noPending; atNode || bare {
		s.pending = ends
	}
	if plain {
		s.plainParent = -1
		if len(s.block) > 0 {
			s.plainParent = s.block[len(s.block)-1].col
		}
	}
	return nil
}

// open records a block collection of the kind seq starting at col of line
// n. When col is first, the line's first node, it may be the collection of
// an earlier line going on: a sequence entry or mapping key at the column
// of one.
func (s *yamlScan) open(col int, seq bool, first, n int) *Error {
	if col == first && len(s.block) > 0 && s.pending != pendingProps {
		top := s.block[len(s.block)-1]
		if top.col == col && top.seq && !seq && s.pending != pendingEntry {
			// A key at the column of a sequence under a key of the
			// same mapping: the sequence has ended.
			s.block = s.block[:len(s.block)-1]
			if len(s.block) > 0 {
				top = s.block[len(s.block)-1]
			}
		}
		if top.col == col && top.seq == seq {
			s.pending = noPending
			return nil
		}
	}
	s.pending = noPending
	s.block = append(s.block, level{col: col, seq: seq})
	if s.depth() > s.max {
		return &Error{Line: n, Col: col + 1, Max: s.max}
	}
	return nil
}

// flowScan scans b from pos in a flow collection (pos at its "[" or "{"
// when it opens on this line) and returns where the outermost one ends, or
// len(b) when it goes on past the line.
func (s *yamlScan) flowScan(b []byte, pos, n int) (int, *Error) {
	afterValue := false // the last token was a quoted scalar or a collection's end (a JSON-like key)
	for pos < len(b) {
		c := b[pos]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			pos++
			continue
		case c == '#' && (pos == 0 || isSpace(b[pos-1])):
			return len(b), nil
		case c == '[' || c == '{':
			s.opened = append(s.opened, c)
			if s.flow++; s.depth() > s.max {
				return 0, &Error{Line: n, Col: pos + 1, Max: s.max}
			}
			s.atNode, afterValue = true, false
		case c == ']' || c == '}':
			// A bracket that closes no open collection of its kind
			// closes nothing, as in goccy/go-yaml.
			s.closePair()
			if s.flow > 0 && s.opened[s.flow-1] == c-2 {
				s.flow--
				s.opened = s.opened[:s.flow]
			}
			s.atNode, afterValue = false, true
			if s.flow == 0 {
				return pos + 1, nil
			}
		case c == ',':
			s.closePair()
			s.atNode, afterValue = true, false
		case c == ':' && (pos+1 >= len(b) || b[pos+1] != '/'), c == '?' && endsToken(b, pos+1):
			if s.opened[s.flow-1] == '[' {
				// "[a: b]": a mapping of one pair in a sequence. Any ":"
				// counts, as goccy/go-yaml reads "[a:[b]]" so too, but
				// not the one of "http://".
				s.opened = append(s.opened, pairMark)
				if s.flow++; s.depth() > s.max {
					return 0, &Error{Line: n, Col: pos + 1, Max: s.max}
				}
			}
			s.atNode = c == '?' || afterValue || endsToken(b, pos+1)
			afterValue = false
		case c == '-' && s.atNode && endsToken(b, pos+1):
			// goccy/go-yaml reads "[- a]" as a block sequence in the
			// flow one, to the entry's end.
			s.opened = append(s.opened, pairMark)
			if s.flow++; s.depth() > s.max {
				return 0, &Error{Line: n, Col: pos + 1, Max: s.max}
			}
		case (c == '\'' || c == '"') && s.atNode:
			s.quote = c
			if pos = s.closeQuote(b, pos+1); pos < 0 {
				return len(b), nil
			}
			s.atNode, afterValue = false, true
			continue
		default:
			s.atNode, afterValue = false, false
		}
		pos++
	}
	return pos, nil
}

// pairMark stands in yamlScan.opened for the collection that a ": " in a
// flow sequence (a mapping of one pair) or a "- " in a flow collection
// opens, until the entry ends.
const pairMark = 'p'

// closePair ends the collections that pairMark stands for in the entry of
// the innermost flow collection.
func (s *yamlScan) closePair() {
	for s.flow > 0 && s.opened[s.flow-1] == pairMark {
		s.flow--
		s.opened = s.opened[:s.flow]
	}
}

// closeQuote finds the end of the quoted scalar of s.quote in b from pos;
// it returns the position after it and clears s.quote, or -1 when the
// scalar goes on past the line.
func (s *yamlScan) closeQuote(b []byte, pos int) int {
	for pos < len(b) {
		c := b[pos]
		switch {
		case s.quote == '"' && c == '\\':
			pos++
		case c == s.quote && s.quote == '\'' && pos+1 < len(b) && b[pos+1] == '\'':
			pos++ // '' is a quote inside single quotes
		case c == s.quote:
			s.quote = 0
			return pos + 1
		}
		pos++
	}
	return -1
}

// docMarker reports whether b starts with a document marker, "---" or
// "...", taken to be one whatever follows it.
func docMarker(b []byte) bool {
	return len(b) >= 3 && (string(b[:3]) == "---" || string(b[:3]) == "...")
}

// blockHeader reports whether b from pos is the rest of a block scalar's
// header: indentation and chomping indicators, then space, a comment or the
// end of the line.
func blockHeader(b []byte, pos int) bool {
	for pos < len(b) && (b[pos] == '+' || b[pos] == '-' || (b[pos] >= '1' && b[pos] <= '9')) {
		pos++
	}
	pos = skipSpace(b, pos)
	return pos == len(b) || b[pos] == '#' || b[pos] == '\r'
}

// tokenStart reports whether c starts a token of its own where an anchor's
// name is read: a quoted scalar, a flow collection or a block scalar's
// header.
func tokenStart(c byte) bool { return strings.IndexByte(`'"[{|>`, c) >= 0 }

// endsToken reports whether a token ends before b[pos]: a space, the end
// or a NUL byte (goccy/go-yaml reads one as the end).
func endsToken(b []byte, pos int) bool { return pos >= len(b) || isSpace(b[pos]) || b[pos] == 0 }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }

// skipSpace returns the position of the first non-space byte from pos.
func skipSpace(b []byte, pos int) int {
	for pos < len(b) && isSpace(b[pos]) {
		pos++
	}
	return pos
}

// skipToken returns the position of the first space byte from pos.
func skipToken(b []byte, pos int) int {
	for pos < len(b) && !isSpace(b[pos]) {
		pos++
	}
	return pos
}
