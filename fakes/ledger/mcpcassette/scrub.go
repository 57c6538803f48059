package mcpcassette

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/upstream/cassette"
	"github.com/replaycheck/replaycheck/internal/jsonl"
	"github.com/replaycheck/replaycheck/internal/secret"
)

// keyArgument is the argument a forwarding ledger reads as a write's
// idempotency key: named like a secret, it is an identifier, and is kept.
const keyArgument = "idempotency_key"

// Arguments returns a call's arguments as a cassette keys them, and the
// secrets found in them: canonical JSON (object keys sorted, no
// whitespace, numbers as written; none or null is {}), with each string
// whose field's name says it holds a secret, at any depth (secret.Fields:
// token, password, api_key…, but not the idempotency_key argument) replaced
// by cassette.Redacted, the run token
// (when not "") written as cassette.TokenPlaceholder, and every secret of
// secrets and anything shaped like a provider API key scrubbed. Recording
// and replay key a call with it alike, so a replayed call matches its
// recording whatever token and credentials the run has.
func Arguments(args json.RawMessage, token string, secrets []string) (json.RawMessage, []string, error) {
	if t := bytes.TrimSpace(args); len(t) == 0 || string(t) == "null" {
		args = json.RawMessage("{}")
	}
	v, err := decode(args)
	if err != nil {
		return nil, nil, fmt.Errorf("arguments: %w", err)
	}
	m, _ := v.(map[string]any)
	key, hasKey := m[keyArgument]
	delete(m, keyArgument)
	v, found := secret.Fields(v, cassette.Redacted)
	if hasKey {
		m[keyArgument] = key
	}
	v = rewrite(v, scrubber(token, append(found, secrets...)))
	b, err := encode(v)
	return b, found, err
}

// NewCall returns the entry of a forwarded call, keyed by Arguments, the
// answer's strings scrubbed as the arguments are:
// name and args as sent, token the call's run token ("" for none; written
// as cassette.TokenPlaceholder wherever it occurs), secrets the credentials
// known for it, and the server's answer, res or rpcErr.
func NewCall(name string, args json.RawMessage, token string, secrets []string, res *mcp.CallToolResult, rpcErr *jsonrpc.Error) (Entry, error) {
	if (res == nil) == (rpcErr == nil) {
		return Entry{}, errors.New("mcp cassette: a call is recorded with its result or its error")
	}
	key, found, err := Arguments(args, token, secrets)
	if err != nil {
		return Entry{}, err
	}
	secrets = append(found, secrets...)
	c := &Call{Name: name, Arguments: key, Token: token}
	if res != nil {
		c.Result = &mcp.CallToolResult{}
		if err := copyScrubbed(c.Result, res, token, secrets); err != nil {
			return Entry{}, err
		}
	} else {
		c.Error = &jsonrpc.Error{}
		if err := copyScrubbed(c.Error, rpcErr, token, secrets); err != nil {
			return Entry{}, err
		}
	}
	return Entry{ToolsCall: c}, nil
}

// NewInitialize returns the entry of the server's initialize answer, its
// secrets scrubbed (see NewCall).
func NewInitialize(res *mcp.InitializeResult, secrets []string) (Entry, error) {
	out := &mcp.InitializeResult{}
	if err := copyScrubbed(out, res, "", secrets); err != nil {
		return Entry{}, err
	}
	return Entry{Initialize: out}, nil
}

// NewToolsList returns the entry of one listing of the server's tools, their
// secrets scrubbed.
func NewToolsList(tools []*mcp.Tool, secrets []string) (Entry, error) {
	out := &ToolsList{}
	if err := copyScrubbed(&out.Tools, tools, "", secrets); err != nil {
		return Entry{}, err
	}
	if out.Tools == nil {
		out.Tools = []*mcp.Tool{}
	}
	return Entry{ToolsList: out}, nil
}

// copyScrubbed sets dst, a pointer, to src scrubbed as a cassette keeps
// it, sharing nothing with src: its secret-named fields at any depth
// (secret.Fields) and its strings (see scrubber).
func copyScrubbed(dst, src any, token string, secrets []string) error {
	return copyRewritten(dst, src, func(v any) any {
		v, found := secret.Fields(v, cassette.Redacted)
		return rewrite(v, scrubber(token, append(found, secrets...)))
	})
}

// copyWithToken sets dst, a pointer, to src, recorded, as a run with token
// gets it: cassette.TokenPlaceholder replaced by token in every string
// (kept when token is "").
func copyWithToken(dst, src any, token string) error {
	return copyRewritten(dst, src, func(v any) any {
		if token == "" {
			return v
		}
		return rewrite(v, func(s string) string { return strings.ReplaceAll(s, cassette.TokenPlaceholder, token) })
	})
}

// copyRewritten sets dst, a pointer, to src as JSON decodes it, rewritten
// by f, sharing nothing with src.
func copyRewritten(dst, src any, f func(any) any) error {
	b, err := json.Marshal(src)
	if err != nil {
		return fmt.Errorf("mcp cassette: %w", err)
	}
	d, err := decode(b)
	if err != nil {
		return fmt.Errorf("mcp cassette: %w", err)
	}
	if b, err = encode(f(d)); err != nil {
		return fmt.Errorf("mcp cassette: %w", err)
	}
	if err := json.Unmarshal(b, dst); err != nil {
		return fmt.Errorf("mcp cassette: %w", err)
	}
	return nil
}

// scrubber returns the rewrite of one string a recording makes: the run
// token (when not "") written as cassette.TokenPlaceholder, the secrets and
// anything shaped like a provider API key scrubbed.
func scrubber(token string, secrets []string) func(string) string {
	return func(s string) string {
		if token != "" {
			s = strings.ReplaceAll(s, token, cassette.TokenPlaceholder)
		}
		return cassette.Scrub(s, secrets)
	}
}

// rewrite applies f to every string of a decoded JSON value, object keys
// included.
func rewrite(v any, f func(string) string) any {
	switch v := v.(type) {
	case string:
		return f(v)
	case []any:
		for i := range v {
			v[i] = rewrite(v[i], f)
		}
		return v
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, val := range v {
			out[f(k)] = rewrite(val, f)
		}
		return out
	}
	return v
}

// canonical re-encodes a JSON value with sorted object keys and no
// insignificant whitespace; numbers keep their text.
func canonical(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("{}"), nil
	}
	v, err := decode(raw)
	if err != nil {
		return nil, err
	}
	return encode(v)
}

// decode decodes one JSON value, numbers as json.Number.
func decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// encode encodes a decoded value compactly, object keys sorted, leaving <,
// > and & as they are.
func encode(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := jsonl.Encoder(&buf).Encode(v); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// Redacted replaces a secret in a recording (the model side's mark).
const Redacted = cassette.Redacted
