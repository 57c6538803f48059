package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// event is an Event with strings, for comparing; HasData tells nil Data from
// empty Data.
type event struct {
	Name, Data, Raw string
	HasData         bool
	Partial         bool
}

// readAll reads every event of r and the error that ended the stream.
func readAll(r *Reader) ([]event, error) {
	var out []event
	for {
		ev, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, event{ev.Name, string(ev.Data), string(ev.Raw), ev.Data != nil, ev.Partial})
	}
}

func TestReader(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []event
		wantErr error
	}{
		{"one event", "event: a\ndata: {\"x\":1}\n\n",
			[]event{{"a", `{"x":1}`, "event: a\ndata: {\"x\":1}\n\n", true, false}}, io.EOF},
		{"crlf", "event: a\r\ndata: b\r\n\r\n",
			[]event{{"a", "b", "event: a\r\ndata: b\r\n\r\n", true, false}}, io.EOF},
		{"data lines join", "data: line1\ndata: line2\n\n",
			[]event{{"", "line1\nline2", "data: line1\ndata: line2\n\n", true, false}}, io.EOF},
		{"one space dropped", "data:  two\ndata:none\n\n",
			[]event{{"", " two\nnone", "data:  two\ndata:none\n\n", true, false}}, io.EOF},
		{"empty data is not nil", "data:\n\n",
			[]event{{"", "", "data:\n\n", true, false}}, io.EOF},
		{"field without colon", "data\ndata\n\n",
			[]event{{"", "\n", "data\ndata\n\n", true, false}}, io.EOF},
		{"comment block", ": ping\n\ndata: x\n\n",
			[]event{{"", "", ": ping\n\n", false, false}, {"", "x", "data: x\n\n", true, false}}, io.EOF},
		{"last name wins, other fields ignored", "event: a\nid: 7\nretry: 10\nevent: b\ndata: x\n\n",
			[]event{{"b", "x", "event: a\nid: 7\nretry: 10\nevent: b\ndata: x\n\n", true, false}}, io.EOF},
		{"blank lines between blocks", "\n\r\ndata: a\n\n\n\ndata: b\n\n",
			[]event{{"", "a", "data: a\n\n", true, false}, {"", "b", "data: b\n\n", true, false}}, io.EOF},
		{"unterminated last event", "data: a\n\nevent: last\ndata: tail",
			[]event{{"", "a", "data: a\n\n", true, false}, {"last", "tail", "event: last\ndata: tail", true, true}}, io.EOF},
		{"ends after a line, before the blank line", "data: a\n",
			[]event{{"", "a", "data: a\n", true, true}}, io.EOF},
		{"byte order mark", "\xEF\xBB\xBFevent: a\ndata: b\n\n",
			[]event{{"a", "b", "\xEF\xBB\xBFevent: a\ndata: b\n\n", true, false}}, io.EOF},
		{"lone CR is not a line break", "data: a\rdata: b\n\n",
			[]event{{"", "a\rdata: b", "data: a\rdata: b\n\n", true, false}}, io.EOF},
		{"empty stream", "", nil, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One byte at a time as well, so lines span reads.
			for _, in := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				got, err := readAll(NewReader(in, 0, 0))
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("err = %v, want %v", err, tt.wantErr)
				}
			}
		})
	}
}

// Lines and events over the bounds fail with ErrTooLong, also when a line
// is longer than the read buffer; a line of exactly the bound passes.
func TestReaderBounds(t *testing.T) {
	long := strings.Repeat("x", 40<<10) // over the 16 KiB read buffer
	tests := []struct {
		name              string
		in                string
		maxLine, maxEvent int
		wantEvents        int
		wantErr           error
	}{
		{"line at the bound", "data: " + long + "\r\n\r\n", len("data: " + long), 0, 1, io.EOF},
		{"line over the bound", "data: " + long + "\n\n", len("data: "+long) - 1, 0, 0, ErrTooLong},
		{"line over the bound after an event", "data: a\n\ndata: " + long + "\n\n", 1 << 10, 0, 1, ErrTooLong},
		{"unterminated line over the bound", "data: " + long, 1 << 10, 0, 0, ErrTooLong},
		{"event over the bound", strings.Repeat("data: "+long[:1000]+"\n", 100) + "\n", 0, 50 << 10, 0, ErrTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tt.in), tt.maxLine, tt.maxEvent)
			got, err := readAll(r)
			if len(got) != tt.wantEvents || !errors.Is(err, tt.wantErr) {
				t.Fatalf("%d events, err %v; want %d events, err %v", len(got), err, tt.wantEvents, tt.wantErr)
			}
			if _, again := r.Next(); !errors.Is(again, tt.wantErr) {
				t.Errorf("Next after the error = %v, want it again", again)
			}
		})
	}
}

// A stream that breaks mid-event gives the partial event, then the error.
func TestReaderBrokenStream(t *testing.T) {
	boom := errors.New("connection reset")
	in := io.MultiReader(strings.NewReader("data: a\n\ndata: {\"cut"), iotest.ErrReader(boom))
	got, err := readAll(NewReader(in, 0, 0))
	want := []event{{"", "a", "data: a\n\n", true, false}, {"", `{"cut`, `data: {"cut`, true, true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want %v", err, boom)
	}
}

// reference is a deliberately plain reading of the same format, for
// FuzzReader to compare with: split into lines, then walk them.
func reference(in []byte) []event {
	var out []event
	var cur event
	started := false
	lines := bytes.SplitAfter(in, []byte("\n"))
	for i, l := range lines {
		raw := string(l)
		line := strings.TrimSuffix(strings.TrimSuffix(raw, "\n"), "\r")
		if i == 0 {
			line = strings.TrimPrefix(line, "\xEF\xBB\xBF")
		}
		if line == "" && strings.HasSuffix(raw, "\n") {
			if started {
				cur.Raw += raw
				out = append(out, cur)
			}
			cur, started = event{}, false
			continue
		}
		if line == "" { // the empty piece after a final "\n", or a final "\r"
			if started || raw != "" {
				cur.Raw += raw
			}
			continue
		}
		started = true
		cur.Raw += raw
		field, value, found := strings.Cut(line, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch field {
		case "event":
			cur.Name = value
		case "data":
			if cur.HasData {
				cur.Data += "\n"
			}
			cur.Data += value
			cur.HasData = true
		}
	}
	if started {
		cur.Partial = true
		out = append(out, cur)
	}
	return out
}

// FuzzReader: any bytes, read whole or a byte at a time, give the events
// the reference reading gives, or ErrTooLong where a line or event is over
// the bounds; the Reader never panics and always ends.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"event: a\ndata: {\"x\":1}\n\n", "data: a\r\ndata: b\r\n\r\n: c\n\n", "data\n\ndata:\n\n",
		"\xEF\xBB\xBFdata: x\n\n", "data: a\rb\n\n", "\n\n\ndata: x", "event:x\nid:1\nretry:2\n\n",
		"data: " + strings.Repeat("y", 100) + "\n\n",
	} {
		f.Add([]byte(s))
	}
	const maxLine, maxEvent = 64, 256
	f.Fuzz(func(t *testing.T, in []byte) {
		want := reference(in)
		overBound := false
		for _, l := range bytes.SplitAfter(in, []byte("\n")) {
			if len(l) > maxLine+2 || len(bytes.TrimSuffix(bytes.TrimSuffix(l, []byte("\n")), []byte("\r"))) > maxLine {
				overBound = true
			}
		}
		for _, e := range want {
			overBound = overBound || len(e.Raw) > maxEvent
		}
		for _, rd := range []io.Reader{bytes.NewReader(in), iotest.OneByteReader(bytes.NewReader(in))} {
			got, err := readAll(NewReader(rd, maxLine, maxEvent))
			if errors.Is(err, ErrTooLong) {
				if !overBound {
					t.Fatalf("ErrTooLong (%v) for %q, which is within the bounds", err, in)
				}
				if diff := cmp.Diff(want[:min(len(got), len(want))], got, cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("events before the bound error differ for %q (-want +got):\n%s", in, diff)
				}
				continue
			}
			if err != io.EOF {
				t.Fatalf("err = %v, want io.EOF", err)
			}
			if overBound {
				t.Fatalf("no ErrTooLong for %q, which is over the bounds", in)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("events for %q (-want +got):\n%s", in, diff)
			}
		}
	})
}
