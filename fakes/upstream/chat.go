package upstream

import (
	"slices"
	"strconv"

	api "github.com/replaycheck/replaycheck/internal/dialect"
)

// chatDialect writes OpenAI Chat Completions answers (api.Chat). A legacy
// request is answered with message.function_call. A streamed answer with one tool
// call is exactly seven chunks — role, the call with id/type/name and empty
// arguments, four argument fragments, the finish_reason chunk — then the
// usage chunk when stream_options.include_usage is set, then api.Done.
type chatDialect struct{}

// Chat is the fake model's part of api.Chat.
func (answerers) Chat() answerer { return chatDialect{} }

func (chatDialect) answer(dst []byte, a *answer, req *api.Request) reply {
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
		if req.Legacy {
			finish = "function_call"
		}
	}
	if !req.Stream {
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
		case len(a.calls) > 0 && req.Legacy:
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
				b = appendChatToolCall(b, a.id(api.ChatCallID, '_', i), c, true)
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
	case len(a.calls) > 0 && req.Legacy:
		c := a.calls[0]
		d := append([]byte(`{"function_call":{"name":`), appendJSONString(nil, c.name)...)
		chunk(append(d, `,"arguments":""}}`...), "")
		for _, frag := range splitArgs(c.args, 4) {
			d := append([]byte(`{"function_call":{"arguments":`), appendJSONString(nil, frag)...)
			chunk(append(d, "}}"...), "")
		}
	case len(a.calls) > 0:
		for i, c := range a.calls {
			d := append([]byte(`{"tool_calls":[`), appendChatToolCallIndexed(nil, i, a.id(api.ChatCallID, '_', i), c)...)
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
	if req.IncludeUsage {
		b := make([]byte, 0, len(prefix)+len(usage)+16)
		b = append(b, prefix...)
		b = append(b, `],"usage":`...)
		b = append(b, usage...)
		b = append(b, '}')
		events = append(events, sseEvent{data: b})
	}
	events = append(events, sseEvent{data: []byte(api.Done)})
	return reply{id: id, callIDs: chatCallIDs(a, req), events: events, contentEnd: contentEnd}
}

// chatCallIDs returns the ids of a's tool calls; nil for a legacy
// function_call, which has none.
func chatCallIDs(a *answer, req *api.Request) []string {
	if req.Legacy {
		return nil
	}
	return a.callIDs(api.ChatCallID)
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
