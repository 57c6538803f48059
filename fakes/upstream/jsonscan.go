package upstream

import (
	"encoding/json"
	"unicode/utf8"
)

// This file holds a small allocation-free reader for request bodies that
// validJSON has already checked: the dialect parsers pick out the few fields
// they need without decoding whole documents. Validation records where each
// string, object and array ends (the tape), so skipping a value is one
// lookup. Every function tolerates any input (it never indexes out of
// range), so fuzzing a parser never panics.

// maxTaped is the largest body validated with a tape; larger bodies are
// skipped through by scanning.
const maxTaped = 256 << 10

// jdoc is a validated JSON document and its tape: ends[i] is the index just
// after the string, object or array that starts at b[i] (nil = no tape).
type jdoc struct {
	b    []byte
	ends []int32
}

// parseDoc validates b and returns its root value. The tape is kept in
// ends when it has room for len(b) entries; else values are skipped by
// scanning.
func parseDoc(b []byte, ends []int32) (jval, bool) {
	d := &jdoc{b: b}
	if cap(ends) >= len(b) {
		d.ends = ends[:len(b)]
	}
	i, ok := validValue(b, skipWS(b, 0), 0, d.ends)
	if !ok || skipWS(b, i) != len(b) {
		return jval{}, false
	}
	start := skipWS(b, 0)
	return jval{d: d, s: start, e: i}, true
}

// jval is one value of a jdoc: b[s:e]. The zero jval is absent.
type jval struct {
	d    *jdoc
	s, e int
}

func (v jval) raw() []byte {
	if v.d == nil {
		return nil
	}
	return v.d.b[v.s:v.e]
}

func (v jval) kind() byte {
	if v.d == nil || v.s >= v.e {
		return 0
	}
	return v.d.b[v.s]
}

// skipWS returns the index of the first non-space byte at or after i.
func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// end returns the index just after the value starting at b[i].
func (d *jdoc) end(i int) int {
	b := d.b
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"', '{', '[':
		if d.ends != nil {
			return int(d.ends[i])
		}
		return valueEnd(b, i)
	default:
		return scalarEnd(b, i)
	}
}

// valueEnd returns the index just after the JSON value starting at b[i],
// by scanning.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = stringEnd(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(b)
	default:
		return scalarEnd(b, i)
	}
}

// scalarEnd returns the index just after the number or literal starting at
// b[i]: the first delimiter or space, or len(b).
func scalarEnd(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return len(b)
}

// stringEnd returns the index just after the string whose opening quote is b[i].
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '"':
			return i + 1
		case '\\':
			i++
		}
	}
	return len(b)
}

// eachField calls fn with each key (unquoted when it has escapes) and value
// of the object v, until fn returns false. A non-object is treated as empty.
func (v jval) eachField(fn func(key []byte, val jval) bool) {
	if v.kind() != '{' {
		return
	}
	d, b := v.d, v.d.b[:v.e]
	i := v.s + 1
	for {
		i = skipWS(b, i)
		if i >= len(b) || b[i] != '"' {
			return
		}
		ke := min(d.end(i), len(b))
		key := keyText(b[i:ke])
		i = skipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return
		}
		i = skipWS(b, i+1)
		ve := min(d.end(i), len(b))
		if !fn(key, jval{d: d, s: i, e: ve}) {
			return
		}
		i = skipWS(b, ve)
		if i >= len(b) || b[i] != ',' {
			return
		}
		i++
	}
}

// eachElem calls fn with each element of the array v until fn returns
// false. A non-array is treated as empty.
func (v jval) eachElem(fn func(val jval) bool) {
	if v.kind() != '[' {
		return
	}
	d, b := v.d, v.d.b[:v.e]
	i := v.s + 1
	for {
		i = skipWS(b, i)
		if i >= len(b) || b[i] == ']' {
			return
		}
		ve := min(d.end(i), len(b))
		if ve <= i {
			return
		}
		if !fn(jval{d: d, s: i, e: ve}) {
			return
		}
		i = skipWS(b, ve)
		if i >= len(b) || b[i] != ',' {
			return
		}
		i++
	}
}

// field returns the value of key in the object v, or the zero jval.
func (v jval) field(key string) jval {
	var out jval
	v.eachField(func(k []byte, val jval) bool {
		if string(k) == key {
			out = val
			return false
		}
		return true
	})
	return out
}

// keyText returns a quoted key's text; keys with escapes are unquoted.
func keyText(q []byte) []byte {
	if len(q) < 2 {
		return nil
	}
	inner := q[1 : len(q)-1]
	for _, c := range inner {
		if c == '\\' {
			var s string
			if json.Unmarshal(q, &s) != nil {
				return inner
			}
			return []byte(s)
		}
	}
	return inner
}

// str returns the text of a JSON string value, or "" for any other value.
func (v jval) str() string { return jsonString(v.raw()) }

// is reports whether v is a JSON string equal to s.
func (v jval) is(s string) bool { return isString(v.raw(), s) }

// isTrue reports whether v is the JSON literal true.
func (v jval) isTrue() bool { return string(v.raw()) == "true" }

// isNull reports whether v is absent or the JSON literal null.
func (v jval) isNull() bool { r := v.raw(); return len(r) == 0 || string(r) == "null" }

// jsonString returns the text of a JSON string value, or "" for any other value.
func jsonString(v []byte) string {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return ""
	}
	inner := v[1 : len(v)-1]
	for _, c := range inner {
		if c == '\\' {
			var s string
			if json.Unmarshal(v, &s) != nil {
				return ""
			}
			return s
		}
	}
	return string(inner)
}

// isString reports whether v is a JSON string equal to s.
func isString(v []byte, s string) bool {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return false
	}
	inner := v[1 : len(v)-1]
	for _, c := range inner {
		if c == '\\' {
			return jsonString(v) == s
		}
	}
	return string(inner) == s
}

// jsonSafe marks the ASCII bytes a JSON string may hold unescaped.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// plain8 reports whether the eight bytes of s need no escaping: none is a
// control byte, '"', '\\' or non-ASCII (SWAR test on one 64-bit word).
func plain8(s string) bool {
	const lsb, msb = 0x0101010101010101, 0x8080808080808080
	w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	lt := (w - lsb*0x20) &^ w
	q := w ^ (lsb * '"')
	q = (q - lsb) &^ q
	bs := w ^ (lsb * '\\')
	bs = (bs - lsb) &^ bs
	return (lt|q|bs|w)&msb == 0
}

// appendJSONString appends s to dst as a JSON string.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Skip eight plain bytes at a time.
		for i+8 <= len(s) && plain8(s[i:i+8]) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"':
				dst = append(dst, '\\', '"')
			case '\\':
				dst = append(dst, '\\', '\\')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			switch r {
			case '\u2028':
				dst = append(dst, `\u2028`...)
			case '\u2029':
				dst = append(dst, `\u2029`...)
			default:
				dst = append(dst, `\ufffd`...)
			}
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
