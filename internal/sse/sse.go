// Package sse reads server-sent event streams (text/event-stream) as the
// harness and the upstream fake's relay consume them: one event at a time,
// with its name, its data and the bytes it came as, so a proxy can pass an
// event on verbatim while it judges it.
//
// It follows the WHATWG event-stream format for what it reads: a line is
// "field: value" (one space after the colon is dropped) or "field" alone;
// "event" sets the name (the last one wins), "data" lines join with "\n";
// lines starting with ":" are comments; other fields (id, retry) are left
// in Raw; a UTF-8 byte order mark before the first line is ignored. Lines
// end in LF or CRLF; a lone CR, which the format allows but no model API
// sends, is not a line break. Unlike a browser it also hands back blocks
// without data (comments, keep-alives) and an event the stream ended or
// broke in the middle of (Partial): a proxy must pass both on, and a
// harness counts what a client actually received.
//
// The fakes' gateway keeps its own reader on purpose: it is a target under
// test, and must not share this parser's bugs.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Bounds used when NewReader is given 0.
const (
	DefaultMaxLine  = 1 << 20 // one line, without its line ending
	DefaultMaxEvent = 4 << 20 // one event's raw bytes
)

// ErrTooLong is wrapped by the error Next returns for a line or event over
// the Reader's bounds.
var ErrTooLong = errors.New("sse: over the size limit")

// Event is one block of a stream: the lines up to a blank line.
type Event struct {
	// Name is the value of the last "event" field; "" when there was none
	// (a browser calls that "message").
	Name string
	// Data is the values of the "data" fields joined with "\n"; nil when
	// the block had no data field, empty (not nil) for an empty data field.
	Data []byte
	// Raw is the block as it came, its lines with their line endings, up to
	// and including the blank line that ends it (none when Partial). Blank
	// lines between blocks belong to no block.
	Raw []byte
	// Partial reports that the stream ended, or broke, before the blank
	// line that would have ended the block.
	Partial bool
}

// Reader reads Events from a stream. It is not safe for concurrent use.
type Reader struct {
	br       *bufio.Reader
	maxLine  int
	maxEvent int
	raw      []byte
	data     []byte
	first    bool  // no line read yet: a byte order mark may come
	err      error // sticky: returned by every later Next
}

// NewReader returns a Reader of r that fails on a line longer than maxLine
// bytes or an event longer than maxEvent raw bytes; 0 means DefaultMaxLine
// and DefaultMaxEvent. The caller keeps r and closes it.
func NewReader(r io.Reader, maxLine, maxEvent int) *Reader {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	if maxEvent <= 0 {
		maxEvent = DefaultMaxEvent
	}
	return &Reader{br: bufio.NewReaderSize(r, 16<<10), maxLine: maxLine, maxEvent: maxEvent, first: true, data: make([]byte, 0, 512)}
}

// Next returns the next event, or an error and no event: io.EOF where the
// stream ended, an error wrapping ErrTooLong for a line or event over the
// bounds, or the stream's read error. An event the stream ended or broke in
// the middle of comes first, with Partial set, and the error with the next
// call. Once Next has returned an error it returns it again. The event's
// slices are valid until the next call.
func (r *Reader) Next() (Event, error) {
	if r.err != nil {
		return Event{}, r.err
	}
	r.raw = r.raw[:0]
	r.data = r.data[:0]
	ev := Event{}
	hasData, started := false, false
	for {
		line, err := r.readLine()
		if err != nil && errors.Is(err, ErrTooLong) {
			r.err = err
			return Event{}, err
		}
		if r.first {
			r.first = false
			line = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF"))
		}
		if len(line) == 0 && err == nil {
			if !started { // a blank line between blocks
				r.raw = r.raw[:0]
				continue
			}
			break
		}
		if len(line) > 0 {
			started = true
			field, value := splitField(line)
			switch string(field) {
			case "event":
				ev.Name = string(value)
			case "data":
				if hasData {
					r.data = append(r.data, '\n')
				}
				r.data = append(r.data, value...)
				hasData = true
			}
		}
		if err != nil {
			r.err = err
			if !started {
				return Event{}, err
			}
			ev.Partial = true
			break
		}
	}
	if hasData {
		ev.Data = r.data
	}
	ev.Raw = r.raw
	return ev, nil
}

// splitField splits a non-empty line into its field name and value; a
// comment line has an empty field name.
func splitField(line []byte) (field, value []byte) {
	i := bytes.IndexByte(line, ':')
	if i < 0 {
		return line, nil
	}
	value = line[i+1:]
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	return line[:i], value
}

// readLine reads one line onto r.raw and returns it without its line
// ending. err is io.EOF (or the read error) when the stream ended before a
// line ending; the line read so far comes with it.
func (r *Reader) readLine() ([]byte, error) {
	start := len(r.raw)
	for {
		chunk, err := r.br.ReadSlice('\n')
		r.raw = append(r.raw, chunk...)
		// +2 leaves room for the CRLF a line of exactly maxLine may end in.
		if len(r.raw)-start > r.maxLine+2 {
			return nil, fmt.Errorf("a line longer than %d bytes: %w", r.maxLine, ErrTooLong)
		}
		if len(r.raw) > r.maxEvent {
			return nil, fmt.Errorf("an event longer than %d bytes: %w", r.maxEvent, ErrTooLong)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		line := r.raw[start:]
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > r.maxLine {
			return nil, fmt.Errorf("a line longer than %d bytes: %w", r.maxLine, ErrTooLong)
		}
		return line, err
	}
}
