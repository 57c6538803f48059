// Package mcpcassette is the file format of recorded MCP exchanges — what a
// forwarding ledger (ledger.Forward) saw of a real MCP server — and the
// player that answers tools/call from them offline. It is the MCP side's
// counterpart of the model side's fakes/upstream/cassette, with the same
// shape: one file per recorded session, in JSON Lines, one exchange per
// line in the order the answers came, written whole or not at all.
//
// It serves the replaycheck command and its tests; it is not an API and may
// change in any release (replaycheck's Go API is replaychecktest and the
// fakes it arms: fakes/upstream, fakes/ledger, fakes/fault).
//
// A line is one of:
//
//	{"initialize": InitializeResult}  the server's answer to initialize
//	{"tools/list": {"tools": [Tool]}} its tools (annotations and schemas), all pages
//	{"tools/call": {"name", "arguments", "token", "result" | "error"}}
//
// A tools/call keeps the call's arguments as the matcher keys them (see
// Arguments: canonical JSON, the run token written as {{token}}, secrets
// scrubbed) and the server's answer: its result (content,
// structuredContent, isError) or its JSON-RPC error. A call whose answer
// never came back is not recorded. Nothing a secret could hide in is kept
// unscrubbed: the credentials the client's request carried (its
// Authorization and key headers), those in the server's URL, the string
// arguments whose name says they are secrets, and anything shaped like a
// provider API key are replaced by [REDACTED] in the arguments, the result
// and the listings.
package mcpcassette

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/upstream/cassette"
	"github.com/replaycheck/replaycheck/internal/inputfile"
	"github.com/replaycheck/replaycheck/internal/jsonl"
	"github.com/replaycheck/replaycheck/internal/nesting"
)

// Entry is one recorded exchange: exactly one field is set.
type Entry struct {
	// Initialize is the server's answer to initialize.
	Initialize *mcp.InitializeResult `json:"initialize,omitempty"`
	// ToolsList is the server's tools, every page of one listing.
	ToolsList *ToolsList `json:"tools/list,omitempty"`
	// ToolsCall is one forwarded tools/call and its answer.
	ToolsCall *Call `json:"tools/call,omitempty"`
}

// ToolsList is one listing of the server's tools.
type ToolsList struct {
	Tools []*mcp.Tool `json:"tools"`
}

// Call is one forwarded tools/call and the server's answer: Result, or
// Error when the server refused the call with a JSON-RPC error.
type Call struct {
	// Name is the tool's name as the server lists it.
	Name string `json:"name"`
	// Arguments are the call's arguments as Arguments keys them.
	Arguments json.RawMessage `json:"arguments"`
	// Token is the run token of the recorded call, written as
	// cassette.TokenPlaceholder in the arguments and the answer; "" for none.
	// Matching ignores it; a replay writes its run's token in its place.
	Token string `json:"token,omitempty"`
	// Result is the server's result.
	Result *mcp.CallToolResult `json:"result,omitempty"`
	// Error is the server's JSON-RPC error.
	Error *jsonrpc.Error `json:"error,omitempty"`
}

// Source names where an entry was read or written: file and line (from 1).
type Source = cassette.Source

// Cassette is what a replay needs of one or more recorded sessions.
type Cassette struct {
	// Path is the file or directory it was read from.
	Path string
	// Initialize is the first recorded initialize answer; nil for none.
	Initialize *mcp.InitializeResult
	// Tools are every tool the server listed, each as last listed, in the
	// order first listed.
	Tools []*mcp.Tool
	// Calls are the recorded tools/call exchanges, in cassette order, and
	// Sources where each was read.
	Calls   []Call
	Sources []Source
}

// Load reads a cassette file, or every *.jsonl file in a directory in name
// order. A line that is not an entry is an error naming file:line:col, one
// longer than jsonl.MaxLine an error naming file:line and the limit; a
// cassette without a tools/list is an error (the tools to offer are
// unknown).
func Load(path string) (*Cassette, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("mcp cassette: %w", err)
	}
	files := []string{path}
	if st.IsDir() {
		if files, err = filepath.Glob(filepath.Join(path, "*.jsonl")); err != nil {
			return nil, fmt.Errorf("mcp cassette %s: %w", path, err)
		}
		slices.Sort(files)
	}
	c := &Cassette{Path: path}
	listed := map[string]int{} // tool name → index in c.Tools
	lists := 0
	for _, file := range files {
		err := readFile(file, func(e *Entry, src Source) {
			switch {
			case e.Initialize != nil:
				if c.Initialize == nil {
					c.Initialize = e.Initialize
				}
			case e.ToolsList != nil:
				lists++
				for _, t := range e.ToolsList.Tools {
					if i, ok := listed[t.Name]; ok {
						c.Tools[i] = t
						continue
					}
					listed[t.Name] = len(c.Tools)
					c.Tools = append(c.Tools, t)
				}
			default:
				c.Calls = append(c.Calls, *e.ToolsCall)
				c.Sources = append(c.Sources, src)
			}
		})
		if err != nil {
			return nil, err
		}
	}
	if lists == 0 {
		return nil, fmt.Errorf("mcp cassette %s: no tools/list recorded in it, so the tools to offer are unknown", path)
	}
	return c, nil
}

// readFile reads the entries of one file, calling add with each.
func readFile(file string, add func(*Entry, Source)) error {
	f, err := inputfile.Open(file)
	if err != nil {
		return fmt.Errorf("mcp cassette: %w", err)
	}
	defer f.Close()
	sc := jsonl.NewScanner(f, file)
	for sc.Scan() {
		n, raw := sc.Line()
		line := bytes.TrimSpace(raw)
		if len(line) == 0 {
			continue
		}
		indent := bytes.Index(raw, line)
		if ne := nesting.JSON(line, nesting.Max); ne != nil {
			return fmt.Errorf("mcp cassette %s:%d:%d: %w", file, n, indent+ne.Col, ne)
		}
		e, err := decodeEntry(line)
		if err != nil {
			return fmt.Errorf("mcp cassette %s:%d:%d: %w", file, n, indent+errorColumn(line, err), err)
		}
		if err := e.validate(); err != nil {
			return fmt.Errorf("mcp cassette %s:%d:%d: %w", file, n, indent+1, err)
		}
		add(e, Source{File: file, Line: n})
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("mcp cassette %w", err)
	}
	return nil
}

// decodeEntry decodes one line strictly: unknown fields of the entry and of
// a call are errors.
func decodeEntry(line []byte) (*Entry, error) {
	var e Entry
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value on the line")
	}
	return &e, nil
}

// unknownField finds the field name in encoding/json's unknown-field error.
var unknownField = regexp.MustCompile(`unknown field ("(?:[^"\\]|\\.)*")`)

// errorColumn is the column (from 1) in line where err, a decoding error,
// was found: the offset of a syntax or type error, the key of an unknown
// field; 1 when it is not known.
func errorColumn(line []byte, err error) int {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return max(int(se.Offset), 1)
	case errors.As(err, &te) && te.Offset > 0:
		return int(te.Offset)
	}
	if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
		if i := bytes.Index(line, []byte(m[1])); i >= 0 {
			return i + 1
		}
	}
	return 1
}

// validate reports an entry no replay could serve.
func (e *Entry) validate() error {
	set := 0
	for _, ok := range []bool{e.Initialize != nil, e.ToolsList != nil, e.ToolsCall != nil} {
		if ok {
			set++
		}
	}
	if set != 1 {
		return errors.New(`want exactly one of "initialize", "tools/list" and "tools/call"`)
	}
	if e.ToolsList != nil {
		for i, t := range e.ToolsList.Tools {
			if err := checkTool(t); err != nil {
				return fmt.Errorf("tools/list: tools[%d]: %w", i, err)
			}
		}
	}
	if c := e.ToolsCall; c != nil {
		switch {
		case c.Name == "":
			return errors.New("tools/call: name: missing")
		case (c.Result == nil) == (c.Error == nil):
			return errors.New(`tools/call: want exactly one of "result" and "error"`)
		}
		args, err := canonical(c.Arguments)
		if err != nil || args[0] != '{' {
			return errors.New("tools/call: arguments: want a JSON object")
		}
		c.Arguments = args
	}
	return nil
}

// checkTool reports a tool an MCP server cannot offer: no name, or an
// input schema that is not an object schema of type "object".
func checkTool(t *mcp.Tool) error {
	if t == nil || t.Name == "" {
		return errors.New("name: missing")
	}
	if m, ok := t.InputSchema.(map[string]any); !ok || m["type"] != "object" {
		return fmt.Errorf(`tool %q: inputSchema: want a JSON Schema with "type": "object"`, t.Name)
	}
	return nil
}

// Recorder appends entries to one cassette file, each whole or not at all
// (see jsonl.Writer); its Add returns the entry's line. It is safe for
// concurrent use; File().Loss() counts the entries lost.
type Recorder = jsonl.Writer[Entry]

// Create creates a new cassette file (it must not exist) and its directory.
func Create(path string) (*Recorder, error) {
	r, err := jsonl.Create[Entry](path)
	if err != nil {
		return nil, fmt.Errorf("mcp cassette: %w", err)
	}
	return r, nil
}
