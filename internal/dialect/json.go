package dialect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// Request bodies are read with github.com/tidwall/gjson: validated whole,
// then only the fields a dialect needs (model, stream, messages or input,
// tools) are picked out, without decoding the documents into maps or
// structs. BenchmarkParse (fakes/upstream) compares this with encoding/json
// on a chat request.

// Errors of Parse for a body that is not a JSON object.
var (
	ErrNotJSON   = errors.New("not valid JSON")
	ErrNotObject = errors.New("want a JSON object")
)

// maxJSONDepth is encoding/json's nesting limit, which validJSON keeps.
const maxJSONDepth = 10000

// validJSON reports whether b is one valid JSON value, as json.Valid does
// (FuzzValidJSON checks that they agree). gjson's validator takes about
// half json.Valid's time but recurses without a depth limit, so it only
// gets bodies with at most maxJSONDepth opening brackets — which bounds
// their nesting; json.Valid takes the others.
func validJSON(b []byte) bool {
	if bytes.Count(b, []byte("{"))+bytes.Count(b, []byte("[")) <= maxJSONDepth {
		return gjson.ValidBytes(b)
	}
	return json.Valid(b)
}

// jval is one value of a request body that validJSON accepted. The zero
// jval is absent; every method treats a value of the wrong type as absent
// or empty.
type jval struct{ r gjson.Result }

// exists reports whether the value is present (null included).
func (v jval) exists() bool { return v.r.Exists() }

// str returns the text of a JSON string value, or "" for any other value.
func (v jval) str() string {
	if v.r.Type != gjson.String {
		return ""
	}
	return v.r.Str
}

// is reports whether v is a JSON string equal to s.
func (v jval) is(s string) bool { return v.r.Type == gjson.String && v.r.Str == s }

// isTrue reports whether v is the JSON literal true.
func (v jval) isTrue() bool { return v.r.Type == gjson.True }

// isNull reports whether v is absent or the JSON literal null.
func (v jval) isNull() bool { return v.r.Type == gjson.Null }

// isArray reports whether v is a JSON array.
func (v jval) isArray() bool { return v.r.IsArray() }

// field returns the value of key (a plain name, no gjson path syntax) in
// the object v; absent when v is not an object or has no such key.
func (v jval) field(key string) jval {
	if !v.r.IsObject() {
		return jval{}
	}
	return jval{v.r.Get(key)}
}

// eachField calls fn with each key (unescaped) and value of the object v,
// until fn returns false. A non-object is treated as empty.
func (v jval) eachField(fn func(key string, val jval) bool) {
	if !v.r.IsObject() {
		return
	}
	v.r.ForEach(func(k, val gjson.Result) bool { return fn(k.Str, jval{val}) })
}

// eachElem calls fn with each element of the array v until fn returns
// false. A non-array is treated as empty.
func (v jval) eachElem(fn func(val jval) bool) {
	if !v.r.IsArray() {
		return
	}
	v.r.ForEach(func(_, val gjson.Result) bool { return fn(jval{val}) })
}

// fieldEither returns the field camel of v, else snake.
func fieldEither(v jval, camel, snake string) jval {
	if f := v.field(camel); f.exists() {
		return f
	}
	return v.field(snake)
}

// parseObject parses body as the JSON object of a model request, reading
// "model" and "stream" into req and handing every other top-level field to
// field.
func parseObject(body []byte, req *Request, field func(key string, v jval)) error {
	if !validJSON(body) {
		return ErrNotJSON
	}
	root := jval{gjson.ParseBytes(body)}
	if !root.r.IsObject() {
		return ErrNotObject
	}
	root.eachField(func(k string, v jval) bool {
		switch k {
		case "model":
			req.Model = v.str()
		case "stream":
			req.Stream = v.isTrue()
		default:
			field(k, v)
		}
		return true
	})
	return nil
}

// checkArray reports an error when v, the field name, is present, not null
// and not an array.
func checkArray(name string, v jval) error {
	if !v.isNull() && !v.isArray() {
		return fmt.Errorf("%s: want an array", name)
	}
	return nil
}

// addToolResult records one tool result the request carries, res naming
// its call (CallID "" when it names none), its flag and text; newRound
// starts a new round of results.
func (r *Request) addToolResult(res ToolResult, newRound bool) {
	if res.CallID != "" {
		r.ResultIDs = append(r.ResultIDs, res.CallID)
	}
	r.FollowUp = true
	if newRound {
		r.Rounds++
	}
	res.Round = r.Rounds
	res.Text = boundText(res.Text)
	r.Results = append(r.Results, res)
}

// boundText cuts s to at most MaxResultText bytes on a rune boundary.
func boundText(s string) string {
	if len(s) <= MaxResultText {
		return s
	}
	i := MaxResultText
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i]
}

// contentText is the text of a result's content: a string, or the "text"
// fields of an array of parts, joined by newlines.
func contentText(content jval) string {
	if s := content.str(); s != "" {
		return s
	}
	var parts []string
	content.eachElem(func(p jval) bool {
		if s := p.field("text").str(); s != "" {
			parts = append(parts, s)
		}
		return true
	})
	return strings.Join(parts, "\n")
}

// appendText appends the text of a content value: a string, or an array of
// parts whose "text" fields are read.
func appendText(dst []string, content jval) []string {
	if s := content.str(); s != "" {
		return append(dst, s)
	}
	content.eachElem(func(p jval) bool {
		if s := p.field("text").str(); s != "" {
			dst = append(dst, s)
		}
		return true
	})
	return dst
}

// appendJSONString appends s to dst as a JSON string (invalid UTF-8 becomes
// U+FFFD; <, > and & are escaped, as encoding/json does).
func appendJSONString(dst []byte, s string) []byte { return gjson.AppendJSONString(dst, s) }
