package dialect

import (
	"net/http"
	"strings"
)

// MessagesPath is the path of Anthropic Messages requests.
const MessagesPath = "/v1/messages"

// The events of an Anthropic Messages stream, in the order an answer sends
// them, and its error event.
const (
	MessageStart      = "message_start"
	ContentBlockStart = "content_block_start"
	ContentBlockDelta = "content_block_delta"
	ContentBlockStop  = "content_block_stop"
	MessageDelta      = "message_delta"
	MessageStop       = "message_stop"
	MessagesError     = "error"
)

// MessagesCallID begins the ids of its answers' tool calls.
const MessagesCallID = "toolu_"

// Messages is Anthropic Messages, POST /v1/messages.
//
// A follow-up carries a user content block of type tool_result, naming its
// call in tool_use_id; its rounds are the user messages carrying one. The
// stream flag is the body's "stream". Tools are the client tools of the
// request: custom tools (no type, or "custom") and the Anthropic-defined
// client tools (bash_*, text_editor_*, computer_*, memory_*); server tools
// such as web_search are not callable. A tool call is a content block
// {"type":"tool_use","id":"toolu_…","name","input"}. A stream is named
// events, message_start to message_stop, the stop_reason in message_delta.
// Errors are {"type":"error","error":{"type","message"}}, in a body or,
// mid-stream, as `event: error`.
func Messages() Dialect {
	return Dialect{
		Name:  "messages",
		Title: "Anthropic Messages",
		Path:  MessagesPath,
		Route: fixedRoute(MessagesPath),
		Parse: parseMessages,
		SetPrompt: func(body map[string]any, prompt string) {
			body["max_tokens"] = 1024
			userMessage(body, prompt)
		},
		Conversation: []string{"system", "messages"},
		Tools:        []string{"tools"},
		CallIDPrefix: MessagesCallID,
		Recorded: Recorded{
			ID: "id", Model: "model", Calls: `content.#(type=="tool_use")#.name`,
			StreamID: "message.id", StreamModel: "message.model", StreamCalls: `[content_block]|#(type=="tool_use")#.name`,
		},
		ErrorBody:   AnthropicErrorBody,
		StreamError: messagesStreamError,
		// message_delta carries the stop_reason, message_stop ends.
		Terminal: func(ev Event) bool { return ev.Name == MessageDelta || ev.Name == MessageStop },
		Ends:     func(chunk map[string]any) bool { return chunk["type"] == MessageStop },
		Failed: func(event string, chunk map[string]any) bool {
			typ, _ := chunk["type"].(string)
			return typ == MessagesError || event == MessagesError
		},
	}
}

// MessagesCountTokensPath is Anthropic's token counting endpoint, which
// the upstream fake answers (not a model request).
const MessagesCountTokensPath = MessagesPath + "/count_tokens"

func parseMessages(body []byte) (Request, error) {
	var req Request
	var messages, tools jval
	err := parseObject(body, &req, func(k string, v jval) {
		switch k {
		case "messages":
			messages = v
		case "tools":
			tools = v
		}
	})
	if err != nil {
		return req, err
	}
	if err := checkArray("messages", messages); err != nil {
		return req, err
	}
	messages.eachElem(func(m jval) bool {
		if !m.field("role").is("user") {
			return true
		}
		content := m.field("content")
		if s := content.str(); s != "" {
			req.UserText = append(req.UserText, s)
			return true
		}
		inResult := false
		content.eachElem(func(block jval) bool {
			typ := block.field("type")
			switch {
			case typ.is("tool_result"):
				req.addToolResult(ToolResult{
					CallID: block.field("tool_use_id").str(),
					Error:  block.field("is_error").isTrue(),
					Text:   contentText(block.field("content")),
				}, !inResult)
				inResult = true
			case typ.is("text"):
				if s := block.field("text").str(); s != "" {
					req.UserText = append(req.UserText, s)
				}
			}
			return true
		})
		return true
	})
	tools.eachElem(func(t jval) bool {
		name := t.field("name").str()
		if name != "" && isClientTool(t.field("type").str()) {
			req.Tools = append(req.Tools, Tool{Name: name})
		}
		return true
	})
	return req, nil
}

// isClientTool reports whether a tool of this type is executed by the client.
func isClientTool(typ string) bool {
	if typ == "" || typ == "custom" {
		return true
	}
	for _, p := range []string{"bash_", "text_editor_", "computer_", "memory_"} {
		if strings.HasPrefix(typ, p) {
			return true
		}
	}
	return false
}

// messagesStreamError: Anthropic's `event: error` with
// {"type":"error","error":{"type","message"}}, as sent after HTTP 200 when
// the API is overloaded mid-stream; type "" = overloaded_error.
func messagesStreamError(e StreamError) Event {
	typ := errorType(e.Type, "overloaded_error")
	b := make([]byte, 0, 128)
	b = append(b, `{"type":"error","error":{"type":`...)
	b = appendJSONString(b, typ)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, e.Message(typ))
	b = append(b, "}}"...)
	return Event{Name: MessagesError, Data: b}
}

// AnthropicErrorBody is the Anthropic error shape
// {"type":"error","error":{"type","message"}}.
func AnthropicErrorBody(status int, message string) []byte {
	typ := "api_error"
	switch status {
	case http.StatusBadRequest, http.StatusMethodNotAllowed, http.StatusUnprocessableEntity:
		typ = "invalid_request_error"
	case http.StatusUnauthorized:
		typ = "authentication_error"
	case http.StatusForbidden:
		typ = "permission_error"
	case http.StatusNotFound:
		typ = "not_found_error"
	case http.StatusRequestEntityTooLarge:
		typ = "request_too_large"
	case http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case http.StatusServiceUnavailable, 529:
		typ = "overloaded_error"
	}
	b := make([]byte, 0, 80+len(message))
	b = append(b, `{"type":"error","error":{"type":`...)
	b = appendJSONString(b, typ)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, message)
	return append(b, "}}"...)
}
