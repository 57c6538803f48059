package upstream

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// This file holds a small allocation-free reader for request bodies that
// encoding/json has already checked with json.Valid: the dialect parsers pick
// out the few fields they need without decoding whole documents. Every
// function tolerates any input (it never indexes out of range), so fuzzing a
// parser never panics even if validation were skipped.

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

// valueEnd returns the index just after the JSON value starting at b[i].
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
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return len(b)
	}
}

// stringEnd returns the index just after the string whose opening quote is b[i].
func stringEnd(b []byte, i int) int {
	i++
	// Short strings (keys, names) end within a few bytes: a plain loop beats
	// IndexByte's setup there.
	for end := min(i+16, len(b)); i < end; i++ {
		switch b[i] {
		case '"':
			return i + 1
		case '\\':
			i++
		}
	}
	for i < len(b) {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return len(b)
		}
		i += q
		// The quote ends the string unless an odd number of backslashes precede it.
		bs := 0
		for j := i - 1; j >= 0 && b[j] == '\\'; j-- {
			bs++
		}
		if bs%2 == 0 {
			return i + 1
		}
		i++
	}
	return len(b)
}

// eachField calls fn with each key (raw, unquoted only if it has no escapes)
// and raw value of the object obj, until fn returns false. A non-object is
// treated as empty.
func eachField(obj []byte, fn func(key, val []byte) bool) {
	i := skipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	i++
	for {
		i = skipWS(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return
		}
		ke := stringEnd(obj, i)
		key := obj[i:ke]
		i = skipWS(obj, ke)
		if i >= len(obj) || obj[i] != ':' {
			return
		}
		i = skipWS(obj, i+1)
		ve := valueEnd(obj, i)
		if !fn(keyText(key), obj[i:ve]) {
			return
		}
		i = skipWS(obj, ve)
		if i >= len(obj) || obj[i] != ',' {
			return
		}
		i++
	}
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

// eachElem calls fn with each raw element of the array arr until fn returns
// false. A non-array is treated as empty.
func eachElem(arr []byte, fn func(val []byte) bool) {
	i := skipWS(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return
	}
	i++
	for {
		i = skipWS(arr, i)
		if i >= len(arr) || arr[i] == ']' {
			return
		}
		ve := valueEnd(arr, i)
		if ve <= i {
			return
		}
		if !fn(arr[i:ve]) {
			return
		}
		i = skipWS(arr, ve)
		if i >= len(arr) || arr[i] != ',' {
			return
		}
		i++
	}
}

// field returns the raw value of key in obj, or nil.
func field(obj []byte, key string) []byte {
	var out []byte
	eachField(obj, func(k, v []byte) bool {
		if string(k) == key {
			out = v
			return false
		}
		return true
	})
	return out
}

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

// isTrue reports whether v is the JSON literal true.
func isTrue(v []byte) bool { return string(v) == "true" }

// isNull reports whether v is absent or the JSON literal null.
func isNull(v []byte) bool { return len(v) == 0 || string(v) == "null" }

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
