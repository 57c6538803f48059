package upstream

import (
	"strconv"
	"strings"
)

// messagesDialect is Anthropic Messages, POST /v1/messages.
//
// A follow-up carries a user content block of type tool_result; its rounds
// are the user messages carrying one. Tools are the client tools of the
// request: custom tools (no type, or "custom") and the Anthropic-defined
// client tools (bash_*, text_editor_*, computer_*, memory_*); server tools
// such as web_search are not callable by the fake.
type messagesDialect struct{}

func (messagesDialect) parse(body []byte) (request, error) {
	var req request
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
			req.userText = append(req.userText, s)
			return true
		}
		inResult := false
		content.eachElem(func(block jval) bool {
			typ := block.field("type")
			switch {
			case typ.is("tool_result"):
				req.addToolResult(block.field("tool_use_id").str(), !inResult)
				inResult = true
			case typ.is("text"):
				if s := block.field("text").str(); s != "" {
					req.userText = append(req.userText, s)
				}
			}
			return true
		})
		return true
	})
	tools.eachElem(func(t jval) bool {
		name := t.field("name").str()
		if name != "" && isClientTool(t.field("type").str()) {
			req.tools = append(req.tools, tool{name: name})
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

func (messagesDialect) answer(dst []byte, a *answer, req *request) reply {
	id := a.id("msg_", '_', -1)
	outTokens := a.outputTokens()
	stop := "end_turn"
	if len(a.calls) > 0 {
		stop = "tool_use"
	}
	message := func(b []byte, withContent bool) []byte {
		b = append(b, `{"id":`...)
		b = appendJSONString(b, id)
		b = append(b, `,"type":"message","role":"assistant","model":`...)
		b = appendJSONString(b, a.model)
		b = append(b, `,"content":[`...)
		if withContent {
			for i, c := range a.calls {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendToolUse(b, a.id("toolu_", '_', i), c.name, c.args)
			}
			if len(a.calls) == 0 {
				b = append(b, `{"type":"text","text":`...)
				b = appendJSONString(b, a.text)
				b = append(b, '}')
			}
			b = append(b, `],"stop_reason":`...)
			b = appendJSONString(b, stop)
		} else {
			b = append(b, `],"stop_reason":null`...)
		}
		b = append(b, `,"stop_sequence":null,"usage":{"input_tokens":`...)
		b = strconv.AppendInt(b, int64(a.inputTokens), 10)
		b = append(b, `,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":`...)
		if withContent {
			b = strconv.AppendInt(b, int64(outTokens), 10)
		} else {
			b = append(b, '1')
		}
		return append(b, "}}"...)
	}
	if !req.stream {
		return reply{id: id, callIDs: a.callIDs("toolu_"), body: message(dst[:0], true)}
	}
	events := make([]sseEvent, 0, 4+7*len(a.calls))
	emit := func(typ string, data []byte) { events = append(events, sseEvent{name: typ, data: data}) }
	emit("message_start", append(message([]byte(`{"type":"message_start","message":`), false), '}'))
	blockHead := func(typ string, i int) []byte {
		b := make([]byte, 0, 128)
		b = append(b, `{"type":`...)
		b = appendJSONString(b, typ)
		b = append(b, `,"index":`...)
		return strconv.AppendInt(b, int64(i), 10)
	}
	delta := func(i int, kind, key, val string) {
		b := blockHead("content_block_delta", i)
		b = append(b, `,"delta":{"type":`...)
		b = appendJSONString(b, kind)
		b = append(b, `,"`...)
		b = append(b, key...)
		b = append(b, `":`...)
		b = appendJSONString(b, val)
		emit("content_block_delta", append(b, "}}"...))
	}
	for i, c := range a.calls {
		b := blockHead("content_block_start", i)
		b = append(b, `,"content_block":`...)
		b = appendToolUse(b, a.id("toolu_", '_', i), c.name, "{}")
		emit("content_block_start", append(b, '}'))
		for _, frag := range splitArgs(c.args, 4) {
			delta(i, "input_json_delta", "partial_json", frag)
		}
		emit("content_block_stop", append(blockHead("content_block_stop", i), '}'))
	}
	if len(a.calls) == 0 {
		emit("content_block_start", append(blockHead("content_block_start", 0), `,"content_block":{"type":"text","text":""}}`...))
		for _, frag := range textFragments(a.text) {
			delta(0, "text_delta", "text", frag)
		}
		emit("content_block_stop", append(blockHead("content_block_stop", 0), '}'))
	}
	contentEnd := len(events)
	b := make([]byte, 0, 128)
	b = append(b, `{"type":"message_delta","delta":{"stop_reason":`...)
	b = appendJSONString(b, stop)
	b = append(b, `,"stop_sequence":null},"usage":{"output_tokens":`...)
	b = strconv.AppendInt(b, int64(outTokens), 10)
	emit("message_delta", append(b, "}}"...))
	emit("message_stop", []byte(`{"type":"message_stop"}`))
	return reply{id: id, callIDs: a.callIDs("toolu_"), events: events, contentEnd: contentEnd}
}

// appendToolUse appends a tool_use block whose input is the JSON object args.
func appendToolUse(b []byte, id, name, args string) []byte {
	b = append(b, `{"type":"tool_use","id":`...)
	b = appendJSONString(b, id)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, name)
	b = append(b, `,"input":`...)
	b = append(b, args...)
	return append(b, '}')
}

func (messagesDialect) errorBody(status int, message string) []byte {
	return anthropicErrorBody(status, message)
}

// terminal: message_delta (carrying stop_reason) and message_stop.
func (messagesDialect) terminal(ev sseEvent) bool {
	return ev.name == "message_delta" || ev.name == "message_stop"
}

// streamError: Anthropic's `event: error` with
// {"type":"error","error":{"type","message"}}, as sent after HTTP 200 when
// the API is overloaded mid-stream.
func (messagesDialect) streamError(e *StreamError, _ streamErrorAt) sseEvent {
	typ := e.Type
	if typ == "" {
		typ = "overloaded_error"
	}
	b := make([]byte, 0, 128)
	b = append(b, `{"type":"error","error":{"type":`...)
	b = appendJSONString(b, typ)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, e.message(typ))
	b = append(b, "}}"...)
	return sseEvent{name: "error", data: b}
}
