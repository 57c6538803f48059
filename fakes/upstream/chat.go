package upstream

import (
	"bytes"
	"slices"
	"strconv"

	"github.com/tidwall/gjson"
)

// chatDialect is OpenAI Chat Completions, POST /v1/chat/completions.
//
// A follow-up carries a message of role "tool" (or legacy "function"); its
// rounds are the runs of consecutive such messages. Tools are read from
// "tools" (type function or custom) and legacy "functions"; a legacy request
// is answered with message.function_call. A streamed answer with one tool
// call is exactly seven chunks — role, the call with id/type/name and empty
// arguments, four argument fragments, the finish_reason chunk — then the
// usage chunk when stream_options.include_usage is set, then [DONE].
type chatDialect struct{}

func (chatDialect) parse(body []byte) (request, error) {
	var req request
	var messages, tools, functions jval
	err := parseObject(body, &req, func(k string, v jval) {
		switch k {
		case "stream_options":
			req.includeUsage = v.field("include_usage").isTrue()
		case "messages":
			messages = v
		case "tools":
			tools = v
		case "functions":
			functions = v
		}
	})
	if err != nil {
		return req, err
	}
	if err := checkArray("messages", messages); err != nil {
		return req, err
	}
	inResult := false
	messages.eachElem(func(m jval) bool {
		var role, content, callID jval
		m.eachField(func(k string, v jval) bool {
			switch k {
			case "role":
				role = v
			case "content":
				content = v
			case "tool_call_id":
				callID = v
			}
			return true
		})
		switch {
		case role.is("tool") || role.is("function"):
			req.addToolResult(callID.str(), !inResult)
			inResult = true
			return true
		case role.is("user"):
			req.userText = appendText(req.userText, content)
		}
		inResult = false
		return true
	})
	tools.eachElem(func(t jval) bool {
		if t.field("type").is("custom") {
			if name := t.field("custom").field("name").str(); name != "" {
				req.tools = append(req.tools, tool{name: name, custom: true})
			}
			return true
		}
		if name := t.field("function").field("name").str(); name != "" {
			req.tools = append(req.tools, tool{name: name})
		}
		return true
	})
	if len(req.tools) == 0 {
		functions.eachElem(func(f jval) bool {
			if name := f.field("name").str(); name != "" {
				req.tools = append(req.tools, tool{name: name})
				req.legacy = true
			}
			return true
		})
	}
	return req, nil
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

func (chatDialect) answer(dst []byte, a *answer, req *request) reply {
	id := a.id("chatcmpl-", '-', -1)
	outTokens := a.outputTokens()
	usage := make([]byte, 0, 80)
	usage = append(usage, `{"prompt_tokens":`...)
	usage = strconv.AppendInt(usage, int64(a.inputTokens), 10)
	usage = append(usage, `,"completion_tokens":`...)
	usage = strconv.AppendInt(usage, int64(outTokens), 10)
	usage = append(usage, `,"total_tokens":`...)
	usage = strconv.AppendInt(usage, int64(a.inputTokens+outTokens), 10)
	usage = append(usage, '}')
	finish := "stop"
	if len(a.calls) > 0 {
		finish = "tool_calls"
		if req.legacy {
			finish = "function_call"
		}
	}
	if !req.stream {
		size := 512 + 2*len(a.text)
		for _, c := range a.calls {
			size += 96 + len(c.name) + 2*len(c.args)
		}
		b := slices.Grow(dst[:0], size)
		b = appendChatHead(b, id, "chat.completion", a)
		b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
		if len(a.calls) == 0 {
			b = appendJSONString(b, a.text)
		} else {
			b = append(b, "null"...)
		}
		b = append(b, `,"refusal":null,"annotations":[]`...)
		switch {
		case len(a.calls) > 0 && req.legacy:
			b = append(b, `,"function_call":{"name":`...)
			b = appendJSONString(b, a.calls[0].name)
			b = append(b, `,"arguments":`...)
			b = appendJSONString(b, a.calls[0].args)
			b = append(b, '}')
		case len(a.calls) > 0:
			b = append(b, `,"tool_calls":[`...)
			for i, c := range a.calls {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendChatToolCall(b, a.id("call_", '_', i), c, true)
			}
			b = append(b, ']')
		}
		b = append(b, `},"logprobs":null,"finish_reason":`...)
		b = appendJSONString(b, finish)
		b = append(b, `}],"usage":`...)
		b = append(b, usage...)
		b = append(b, `,"system_fingerprint":null}`...)
		return reply{id: id, callIDs: chatCallIDs(a, req), body: b}
	}

	prefix := make([]byte, 0, 128)
	prefix = appendChatHead(prefix, id, "chat.completion.chunk", a)
	prefix = append(prefix, `,"system_fingerprint":null,"choices":[`...)
	events := make([]sseEvent, 0, 2+6*len(a.calls)+4)
	chunk := func(delta []byte, finishReason string) {
		b := make([]byte, 0, len(prefix)+len(delta)+64)
		b = append(b, prefix...)
		b = append(b, `{"index":0,"delta":`...)
		b = append(b, delta...)
		b = append(b, `,"logprobs":null,"finish_reason":`...)
		if finishReason == "" {
			b = append(b, "null"...)
		} else {
			b = appendJSONString(b, finishReason)
		}
		b = append(b, "}]}"...)
		events = append(events, sseEvent{data: b})
	}
	chunk([]byte(`{"role":"assistant","content":null,"refusal":null}`), "")
	switch {
	case len(a.calls) > 0 && req.legacy:
		c := a.calls[0]
		d := append([]byte(`{"function_call":{"name":`), appendJSONString(nil, c.name)...)
		chunk(append(d, `,"arguments":""}}`...), "")
		for _, frag := range splitArgs(c.args, 4) {
			d := append([]byte(`{"function_call":{"arguments":`), appendJSONString(nil, frag)...)
			chunk(append(d, "}}"...), "")
		}
	case len(a.calls) > 0:
		for i, c := range a.calls {
			d := append([]byte(`{"tool_calls":[`), appendChatToolCallIndexed(nil, i, a.id("call_", '_', i), c)...)
			chunk(append(d, "]}"...), "")
			field := "function"
			key := "arguments"
			if c.custom {
				field, key = "custom", "input"
			}
			for _, frag := range splitArgs(c.args, 4) {
				d := make([]byte, 0, 64+len(frag))
				d = append(d, `{"tool_calls":[{"index":`...)
				d = strconv.AppendInt(d, int64(i), 10)
				d = append(d, `,"`...)
				d = append(d, field...)
				d = append(d, `":{"`...)
				d = append(d, key...)
				d = append(d, `":`...)
				d = appendJSONString(d, frag)
				d = append(d, "}}]}"...)
				chunk(d, "")
			}
		}
	default:
		for _, frag := range textFragments(a.text) {
			d := append([]byte(`{"content":`), appendJSONString(nil, frag)...)
			chunk(append(d, '}'), "")
		}
	}
	contentEnd := len(events)
	chunk([]byte(`{}`), finish)
	if req.includeUsage {
		b := make([]byte, 0, len(prefix)+len(usage)+16)
		b = append(b, prefix...)
		b = append(b, `],"usage":`...)
		b = append(b, usage...)
		b = append(b, '}')
		events = append(events, sseEvent{data: b})
	}
	events = append(events, sseEvent{data: []byte("[DONE]")})
	return reply{id: id, callIDs: chatCallIDs(a, req), events: events, contentEnd: contentEnd}
}

// chatCallIDs returns the ids of a's tool calls; nil for a legacy
// function_call, which has none.
func chatCallIDs(a *answer, req *request) []string {
	if req.legacy {
		return nil
	}
	return a.callIDs("call_")
}

// appendChatHead opens a chat completion (object "chat.completion") or a
// chunk of one ("chat.completion.chunk"): its id, object, created and model.
func appendChatHead(b []byte, id, object string, a *answer) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, id)
	b = append(b, `,"object":"`...)
	b = append(b, object...)
	b = append(b, `","created":`...)
	b = strconv.AppendInt(b, a.created, 10)
	b = append(b, `,"model":`...)
	return appendJSONString(b, a.model)
}

// appendChatToolCall appends a tool call object, with its arguments or,
// without, empty ones.
func appendChatToolCall(b []byte, id string, c toolCall, withArgs bool) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, id)
	if c.custom {
		b = append(b, `,"type":"custom","custom":{"name":`...)
		b = appendJSONString(b, c.name)
		b = append(b, `,"input":`...)
	} else {
		b = append(b, `,"type":"function","function":{"name":`...)
		b = appendJSONString(b, c.name)
		b = append(b, `,"arguments":`...)
	}
	if withArgs {
		b = c.appendQuotedArgs(b)
	} else {
		b = append(b, `""`...)
	}
	return append(b, "}}"...)
}

// appendChatToolCallIndexed appends the first streamed delta of a tool call:
// index, id, type, name and empty arguments.
func appendChatToolCallIndexed(b []byte, i int, id string, c toolCall) []byte {
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, ',')
	whole := appendChatToolCall(nil, id, c, false)
	return append(b, whole[1:]...)
}

// textFragments splits a text answer into up to four streamed fragments.
func textFragments(text string) []string {
	if text == "" {
		return []string{""}
	}
	n := min(len(text), 4)
	out := splitArgs(text, n)
	kept := out[:0]
	for _, f := range out {
		if f != "" {
			kept = append(kept, f)
		}
	}
	return kept
}

func (chatDialect) errorBody(status int, message string) []byte {
	return openAIErrorBody(status, message)
}

// terminal: the chunk carrying a non-null finish_reason, or [DONE].
func (chatDialect) terminal(ev sseEvent) bool {
	if bytes.HasPrefix(ev.data, []byte("[DONE]")) {
		return true
	}
	if !bytes.Contains(ev.data, []byte(`"finish_reason"`)) {
		return false // most chunks: no need to parse
	}
	done := false
	gjson.GetBytes(ev.data, "choices").ForEach(func(_, c gjson.Result) bool {
		done = c.Get("finish_reason").Type == gjson.String
		return !done
	})
	return done
}

// streamError: a chunk carrying only an error object, as OpenAI sends when a
// stream fails after it began: {"error":{"message","type","param","code"}}.
func (chatDialect) streamError(e *StreamError, _ streamErrorAt) sseEvent {
	typ := e.Type
	if typ == "" {
		typ = "server_error"
	}
	b := make([]byte, 0, 128)
	b = append(b, `{"error":{"message":`...)
	b = appendJSONString(b, e.message(typ))
	b = append(b, `,"type":`...)
	b = appendJSONString(b, typ)
	b = append(b, `,"param":null,"code":null}}`...)
	return sseEvent{data: b}
}
