package upstream

import "encoding/binary"

// maxJSONDepth is encoding/json's nesting limit, which validJSON shares.
const maxJSONDepth = 10000

// validJSON reports whether b is one valid JSON value, exactly as json.Valid
// does (FuzzValidJSON checks the two agree), but several times faster: it is
// on the hot path of every request.
func validJSON(b []byte) bool {
	i, ok := validValue(b, skipWS(b, 0), 0, nil)
	return ok && skipWS(b, i) == len(b)
}

// validValue validates the value at b[i] and returns the index after it.
// With a tape (len(ends) == len(b)) it records where each string, object
// and array ends.
func validValue(b []byte, i, depth int, ends []int32) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	start := i
	switch c := b[i]; c {
	case '{':
		if depth >= maxJSONDepth {
			return i, false
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == '}' {
			return tape(ends, start, i+1), true
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			var ok bool
			if i, ok = validString(b, i, ends); !ok {
				return i, false
			}
			i = skipWS(b, i)
			if i >= len(b) || b[i] != ':' {
				return i, false
			}
			if i, ok = validValue(b, skipWS(b, i+1), depth+1, ends); !ok {
				return i, false
			}
			var closed bool
			if i, closed, ok = afterElem(b, i, '}'); !ok {
				return i, false
			}
			if closed {
				return tape(ends, start, i), true
			}
		}
	case '[':
		if depth >= maxJSONDepth {
			return i, false
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return tape(ends, start, i+1), true
		}
		for {
			var ok bool
			if i, ok = validValue(b, i, depth+1, ends); !ok {
				return i, false
			}
			var closed bool
			if i, closed, ok = afterElem(b, i, ']'); !ok {
				return i, false
			}
			if closed {
				return tape(ends, start, i), true
			}
		}
	case '"':
		return validString(b, i, ends)
	case 't':
		return validLiteral(b, i, "true")
	case 'f':
		return validLiteral(b, i, "false")
	case 'n':
		return validLiteral(b, i, "null")
	default:
		return validNumber(b, i)
	}
}

// afterElem reads what follows an element of an object or array closed by
// closer: after a comma it returns the index of the next element, after
// the closer the index just past it with closed set; anything else is not ok.
func afterElem(b []byte, i int, closer byte) (next int, closed, ok bool) {
	i = skipWS(b, i)
	if i >= len(b) {
		return i, false, false
	}
	switch b[i] {
	case ',':
		return skipWS(b, i+1), false, true
	case closer:
		return i + 1, true, true
	}
	return i, false, false
}

func validLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// stringPlain8 reports whether none of the eight bytes in w is a control
// byte, '"' or '\\' (SWAR test).
func stringPlain8(w uint64) bool {
	const lsb, msb = 0x0101010101010101, 0x8080808080808080
	lt := (w - lsb*0x20) &^ w
	q := w ^ (lsb * '"')
	q = (q - lsb) &^ q
	bs := w ^ (lsb * '\\')
	bs = (bs - lsb) &^ bs
	return (lt|q|bs)&msb == 0
}

// tape records end as the end of the value starting at start.
func tape(ends []int32, start, end int) int {
	if len(ends) > start {
		ends[start] = int32(end)
	}
	return end
}

func validString(b []byte, i int, ends []int32) (int, bool) {
	start := i
	for i++; i < len(b); i++ {
		// Skip eight plain bytes at a time.
		for i+8 <= len(b) && stringPlain8(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return tape(ends, start, i+1), true
		case c < 0x20:
			return i, false
		case c == '\\':
			i++
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i <= 4 {
					return i, false
				}
				for _, h := range b[i+1 : i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return i, false
					}
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

func validNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return i, false
	}
	switch {
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == start {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == start {
			return i, false
		}
	}
	return i, true
}
