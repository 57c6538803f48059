package upstream

import "github.com/tidwall/gjson"

// Request bodies are read by internal/dialect. Answers are appended to
// byte slices, their strings quoted by gjson.AppendJSONString.

// appendJSONString appends s to dst as a JSON string (invalid UTF-8 becomes
// U+FFFD; <, > and & are escaped, as encoding/json does).
func appendJSONString(dst []byte, s string) []byte { return gjson.AppendJSONString(dst, s) }
