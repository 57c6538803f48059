package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/replaycheck/replaycheck/internal/nesting"
	"github.com/replaycheck/replaycheck/internal/runtoken"
)

// GuardrailBlockMCP is the one guardrail the gateway knows: it rejects every
// MCP tool call before it runs and tells the model so.
const GuardrailBlockMCP = "block-mcp"

// appRequest is an app's request to the gateway, decoded and checked.
type appRequest struct {
	// Model is the model group the router starts with.
	Model  string
	Stream bool
	// BlockMCP is set when the request selected the block-mcp guardrail.
	BlockMCP bool
	// UseMCP is set when the app offered the gateway's MCP server as a tool.
	UseMCP bool
	// FuncTools are the app's own function tools in the upstream API's shape,
	// passed through untouched.
	FuncTools []json.RawMessage
	// Messages is the chat conversation (chat endpoint).
	Messages []json.RawMessage
	// Input is the Responses input items (responses and messages endpoints).
	Input []json.RawMessage
	// Extra holds other top-level fields forwarded upstream as they are.
	Extra map[string]json.RawMessage
	// Token is the run token found in the body, or "".
	Token string
}

// requestError is an app error the gateway answers with 400.
type requestError struct{ msg string }

func (e *requestError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &requestError{msg: fmt.Sprintf(format, args...)}
}

// parseAppRequest decodes body as a request to the endpoint d, for a gateway
// whose MCP server is labelled label. Every problem is a *requestError.
func parseAppRequest(d dialect, label string, body []byte) (*appRequest, error) {
	if err := nesting.CheckJSON("request body", body); err != nil {
		return nil, err
	}
	top, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	req := &appRequest{Extra: map[string]json.RawMessage{}, Token: runtoken.Find(body)}
	if err := decodeField(top, "model", &req.Model, true); err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Model) == "" {
		return nil, badRequest("model must name a model group")
	}
	if err := decodeField(top, "stream", &req.Stream, false); err != nil {
		return nil, err
	}
	var guardrails []string
	if err := decodeField(top, "guardrails", &guardrails, false); err != nil {
		return nil, err
	}
	for _, gname := range guardrails {
		if gname != GuardrailBlockMCP {
			return nil, badRequest("unknown guardrail %q: the gateway knows %q", gname, GuardrailBlockMCP)
		}
		req.BlockMCP = true
	}
	if err := req.parseTools(d, top["tools"], label); err != nil {
		return nil, err
	}
	if err := d.parse(req, top); err != nil {
		return nil, err
	}
	return req, nil
}

func decodeField(top map[string]json.RawMessage, name string, into any, required bool) error {
	raw, ok := top[name]
	if !ok || isNull(raw) {
		if required {
			return badRequest("%s is required", name)
		}
		return nil
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return badRequest("%s: %v", name, err)
	}
	return nil
}

// decodeObject returns the members of the JSON object body, each value as it
// is written there; of a name given twice the last wins, as with
// encoding/json. The body is checked once by json.Valid (the standard
// library's grammar and nesting bound) and split by gjson, which reads the
// checked bytes without validating them again or decoding the values: less
// than half the cost of a json.Decoder into a map (BenchmarkParseAppRequest).
func decodeObject(body []byte) (map[string]json.RawMessage, error) {
	v := gjson.ParseBytes(body)
	if !json.Valid(body) || !v.IsObject() {
		return nil, notAnObject(body)
	}
	top := map[string]json.RawMessage{}
	v.ForEach(func(name, value gjson.Result) bool {
		top[name.String()] = json.RawMessage(value.Raw)
		return true
	})
	return top, nil
}

// notAnObject says, as encoding/json finds it, why body is not one JSON
// object.
func notAnObject(body []byte) error {
	var top map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&top); err != nil {
		return badRequest("request body is not a JSON object: %v", err)
	}
	if top == nil {
		return badRequest("request body is not a JSON object")
	}
	return badRequest("request body holds more than one JSON value")
}

// decodeItems is decodeField for an array field, read by arrayItems.
func decodeItems(top map[string]json.RawMessage, name string, required bool) ([]json.RawMessage, error) {
	raw, ok := top[name]
	if !ok || isNull(raw) {
		if required {
			return nil, badRequest("%s is required", name)
		}
		return nil, nil
	}
	items, err := arrayItems(raw)
	if err != nil {
		return nil, badRequest("%s: %v", name, err)
	}
	return items, nil
}

// arrayItems is json.Unmarshal of raw into a []json.RawMessage for a value
// decodeObject split off, which json.Valid has checked: gjson splits it
// without checking it again. The error, when raw is not an array, is
// encoding/json's.
func arrayItems(raw json.RawMessage) ([]json.RawMessage, error) {
	v := gjson.Parse(string(raw))
	if !v.IsArray() {
		var items []json.RawMessage
		err := json.Unmarshal(raw, &items)
		return items, err
	}
	items := []json.RawMessage{}
	v.ForEach(func(_, item gjson.Result) bool {
		items = append(items, json.RawMessage(item.Raw))
		return true
	})
	return items, nil
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" }

// toolHead is what the gateway reads of one tool of an app request.
type toolHead struct {
	Type            string          `json:"type"`
	ServerLabel     string          `json:"server_label"`
	RequireApproval json.RawMessage `json:"require_approval"`
	// Anthropic tools have no type but a name and input_schema.
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// parseTools splits the app's tools into the gateway's MCP server and the
// app's own function tools, which the endpoint d renders for upstream.
func (req *appRequest) parseTools(d dialect, raw json.RawMessage, label string) error {
	if isNull(raw) {
		return nil
	}
	tools, err := arrayItems(raw)
	if err != nil {
		return badRequest("tools: want an array: %v", err)
	}
	for i, t := range tools {
		var head toolHead
		if err := json.Unmarshal(t, &head); err != nil {
			return badRequest("tools[%d]: want an object: %v", i, err)
		}
		if head.Type != "mcp" {
			ft, err := d.tool(i, head, t)
			if err != nil {
				return err
			}
			req.FuncTools = append(req.FuncTools, ft)
			continue
		}
		if head.ServerLabel != label {
			return badRequest("tools[%d]: unknown MCP server_label %q: the gateway serves %q", i, head.ServerLabel, label)
		}
		if !isNull(head.RequireApproval) && string(head.RequireApproval) != `"never"` {
			return badRequest("tools[%d]: require_approval must be \"never\": the gateway runs auto-approved MCP tools only", i)
		}
		req.UseMCP = true
	}
	return nil
}

// functionTool is the tool method of an endpoint whose app tools are
// OpenAI function tools, passed upstream as they came.
func functionTool(i int, t toolHead, raw json.RawMessage) (json.RawMessage, error) {
	if t.Type != "function" {
		return nil, badRequest("tools[%d]: unsupported tool type %q", i, t.Type)
	}
	return raw, nil
}

// forwardExcept copies every top-level field not in skip into req.Extra.
func (req *appRequest) forwardExcept(top map[string]json.RawMessage, skip ...string) {
	for k, v := range top {
		if !containsString(skip, k) {
			req.Extra[k] = v
		}
	}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("gateway: marshalling %T: %v", v, err))
	}
	return b
}
