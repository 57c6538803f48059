package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/replaycheck/replaycheck/internal/nesting"
	"github.com/replaycheck/replaycheck/internal/runtoken"

	api "github.com/replaycheck/replaycheck/internal/dialect"
)

// GuardrailBlockMCP is the one guardrail the gateway knows: it rejects every
// MCP tool call before it runs and tells the model so.
const GuardrailBlockMCP = "block-mcp"

// The app-facing endpoints, named as in a scenario's request.endpoint.
const (
	EndpointChat      = "chat"
	EndpointResponses = "responses"
	EndpointMessages  = "messages"
)

// appRequest is an app's request to the gateway, decoded and checked.
type appRequest struct {
	// Endpoint is EndpointChat, EndpointResponses or EndpointMessages.
	Endpoint string
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

// parseAppRequest decodes body as a request to endpoint, for a gateway whose
// MCP server is labelled label. Every problem is a *requestError.
func parseAppRequest(endpoint, label string, body []byte) (*appRequest, error) {
	if err := nesting.CheckJSON("request body", body); err != nil {
		return nil, err
	}
	top, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	req := &appRequest{Endpoint: endpoint, Extra: map[string]json.RawMessage{}, Token: runtoken.Find(body)}
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
	if err := req.parseTools(top["tools"], label); err != nil {
		return nil, err
	}
	switch endpoint {
	case EndpointChat:
		err = req.parseChat(top)
	case EndpointResponses:
		err = req.parseResponses(top)
	case EndpointMessages:
		err = req.parseMessages(top)
	default:
		err = badRequest("unknown endpoint %q", endpoint)
	}
	if err != nil {
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

// parseTools splits the app's tools into the gateway's MCP server and the
// app's own function tools.
func (req *appRequest) parseTools(raw json.RawMessage, label string) error {
	if isNull(raw) {
		return nil
	}
	tools, err := arrayItems(raw)
	if err != nil {
		return badRequest("tools: want an array: %v", err)
	}
	for i, t := range tools {
		var head struct {
			Type            string          `json:"type"`
			ServerLabel     string          `json:"server_label"`
			RequireApproval json.RawMessage `json:"require_approval"`
			// Anthropic tools have no type but a name and input_schema.
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if err := json.Unmarshal(t, &head); err != nil {
			return badRequest("tools[%d]: want an object: %v", i, err)
		}
		switch {
		case head.Type == "mcp":
			if head.ServerLabel != label {
				return badRequest("tools[%d]: unknown MCP server_label %q: the gateway serves %q", i, head.ServerLabel, label)
			}
			if !isNull(head.RequireApproval) && string(head.RequireApproval) != `"never"` {
				return badRequest("tools[%d]: require_approval must be \"never\": the gateway runs auto-approved MCP tools only", i)
			}
			req.UseMCP = true
		case head.Type == "function":
			if req.Endpoint == EndpointMessages {
				return badRequest("tools[%d]: %s takes Anthropic tools {name, description, input_schema}", i, api.MessagesPath)
			}
			req.FuncTools = append(req.FuncTools, t)
		case req.Endpoint == EndpointMessages && (head.Type == "" || head.Type == "custom") && head.Name != "":
			schema := head.InputSchema
			if isNull(schema) {
				schema = json.RawMessage(`{"type":"object"}`)
			}
			ft, err := json.Marshal(map[string]any{"type": "function", "name": head.Name, "description": head.Description, "parameters": schema})
			if err != nil {
				return badRequest("tools[%d]: %v", i, err)
			}
			req.FuncTools = append(req.FuncTools, ft)
		default:
			return badRequest("tools[%d]: unsupported tool type %q", i, head.Type)
		}
	}
	return nil
}

// forwardExcept copies every top-level field not in skip into req.Extra.
func (req *appRequest) forwardExcept(top map[string]json.RawMessage, skip ...string) {
	for k, v := range top {
		if !containsString(skip, k) {
			req.Extra[k] = v
		}
	}
}

func (req *appRequest) parseChat(top map[string]json.RawMessage) error {
	var err error
	if req.Messages, err = decodeItems(top, "messages", true); err != nil {
		return err
	}
	if len(req.Messages) == 0 {
		return badRequest("messages must not be empty")
	}
	for i, m := range req.Messages {
		var head struct {
			Role string `json:"role"`
		}
		if err := json.Unmarshal(m, &head); err != nil || head.Role == "" {
			return badRequest("messages[%d]: want an object with a role", i)
		}
	}
	req.forwardExcept(top, "model", "messages", "tools", "guardrails", "stream", "stream_options")
	return nil
}

func (req *appRequest) parseResponses(top map[string]json.RawMessage) error {
	raw, ok := top["input"]
	if !ok || isNull(raw) {
		return badRequest("input is required")
	}
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		item, err := json.Marshal(map[string]string{"role": "user", "content": text})
		if err != nil {
			return badRequest("input: %v", err)
		}
		req.Input = []json.RawMessage{item}
	} else if req.Input, err = arrayItems(raw); err != nil {
		return badRequest("input: want a string or an array of items")
	}
	if len(req.Input) == 0 {
		return badRequest("input must not be empty")
	}
	for i, item := range req.Input {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(item, &obj); err != nil || obj == nil {
			return badRequest("input[%d]: want an object", i)
		}
	}
	req.forwardExcept(top, "model", "input", "tools", "guardrails", "stream")
	return nil
}

// parseMessages converts an Anthropic Messages request to Responses input:
// text content becomes input messages, system becomes instructions and
// max_tokens becomes max_output_tokens.
func (req *appRequest) parseMessages(top map[string]json.RawMessage) error {
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := decodeField(top, "messages", &msgs, true); err != nil {
		return err
	}
	if len(msgs) == 0 {
		return badRequest("messages must not be empty")
	}
	for i, m := range msgs {
		if m.Role != "user" && m.Role != "assistant" {
			return badRequest("messages[%d]: role must be user or assistant, got %q", i, m.Role)
		}
		text, err := anthropicText(m.Content)
		if err != nil {
			return badRequest("messages[%d].content: %v", i, err)
		}
		item, err := json.Marshal(map[string]string{"role": m.Role, "content": text})
		if err != nil {
			return badRequest("messages[%d]: %v", i, err)
		}
		req.Input = append(req.Input, item)
	}
	if raw, ok := top["system"]; ok && !isNull(raw) {
		text, err := anthropicText(raw)
		if err != nil {
			return badRequest("system: %v", err)
		}
		req.Extra["instructions"] = mustJSON(text)
	}
	if raw, ok := top["max_tokens"]; ok && !isNull(raw) {
		var n int
		if err := json.Unmarshal(raw, &n); err != nil || n < 1 {
			return badRequest("max_tokens: want a whole number of at least 1")
		}
		req.Extra["max_output_tokens"] = raw
	}
	for _, k := range []string{"temperature", "top_p", "metadata"} {
		if raw, ok := top[k]; ok {
			req.Extra[k] = raw
		}
	}
	return nil
}

// anthropicText returns the text of an Anthropic content value: a string or
// an array of text blocks.
func anthropicText(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", errors.New("want a string or an array of content blocks")
	}
	var b strings.Builder
	for i, bl := range blocks {
		if bl.Type != "text" {
			return "", fmt.Errorf("block %d: content block type %q is not supported", i, bl.Type)
		}
		b.WriteString(bl.Text)
	}
	return b.String(), nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("gateway: marshalling %T: %v", v, err))
	}
	return b
}
