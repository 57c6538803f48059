package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// KeyArgument is the argument a keyed write tool takes its idempotency key
// in (the ledger's commit_write_keyed, and a forwarded server's tool that
// takes one).
const KeyArgument = "idempotency_key"

// MaxArgs bounds the rendering CallArgs returns, in bytes: longer
// arguments are stood for by their digest.
const MaxArgs = 1024

// CanonicalJSON re-encodes a JSON value with sorted object keys and no
// insignificant whitespace, numbers keeping their text, so equal values
// render equally; bytes that are not one JSON value are returned as they
// came.
func CanonicalJSON(raw []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}

// CallArgs renders a tool call's arguments for telling calls apart: the
// canonical JSON (see CanonicalJSON) of the arguments object without its
// idempotency key (KeyArgument), and that key apart ("" when there is none
// or it is not a string). A rendering longer than MaxArgs is replaced by
// "sha256:" and its hex digest; arguments that are not a JSON object render
// canonically as they are, with no key; none at all render as "{}". Equal
// arguments, whatever their key order and spacing, render equally.
func CallArgs(raw []byte) (args, key string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "{}", ""
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err == nil && obj != nil {
		if k, ok := obj[KeyArgument]; ok {
			if json.Unmarshal(k, &key) == nil {
				delete(obj, KeyArgument)
			}
		}
		if b, err := json.Marshal(obj); err == nil {
			raw = b
		}
	}
	b := CanonicalJSON(raw)
	if len(b) > MaxArgs {
		sum := sha256.Sum256(b)
		return "sha256:" + hex.EncodeToString(sum[:]), key
	}
	return string(b), key
}
