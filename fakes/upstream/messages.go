package upstream

import (
	"strconv"

	api "github.com/replaycheck/replaycheck/internal/dialect"
)

// messagesDialect writes Anthropic Messages answers (api.Messages).
type messagesDialect struct{}

// Messages is the fake model's part of api.Messages.
func (answerers) Messages() answerer { return messagesDialect{} }

func (messagesDialect) answer(dst []byte, a *answer, req *api.Request) reply {
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
				b = appendToolUse(b, a.id(api.MessagesCallID, '_', i), c.name, c.args)
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
	if !req.Stream {
		return reply{id: id, callIDs: a.callIDs(api.MessagesCallID), body: message(dst[:0], true)}
	}
	events := make([]sseEvent, 0, 4+7*len(a.calls))
	emit := func(typ string, data []byte) { events = append(events, sseEvent{name: typ, data: data}) }
	emit(api.MessageStart, append(message([]byte(`{"type":"message_start","message":`), false), '}'))
	blockHead := func(typ string, i int) []byte {
		b := make([]byte, 0, 128)
		b = append(b, `{"type":`...)
		b = appendJSONString(b, typ)
		b = append(b, `,"index":`...)
		return strconv.AppendInt(b, int64(i), 10)
	}
	delta := func(i int, kind, key, val string) {
		b := blockHead(api.ContentBlockDelta, i)
		b = append(b, `,"delta":{"type":`...)
		b = appendJSONString(b, kind)
		b = append(b, `,"`...)
		b = append(b, key...)
		b = append(b, `":`...)
		b = appendJSONString(b, val)
		emit(api.ContentBlockDelta, append(b, "}}"...))
	}
	for i, c := range a.calls {
		b := blockHead(api.ContentBlockStart, i)
		b = append(b, `,"content_block":`...)
		b = appendToolUse(b, a.id(api.MessagesCallID, '_', i), c.name, "{}")
		emit(api.ContentBlockStart, append(b, '}'))
		for _, frag := range splitArgs(c.args, 4) {
			delta(i, "input_json_delta", "partial_json", frag)
		}
		emit(api.ContentBlockStop, append(blockHead(api.ContentBlockStop, i), '}'))
	}
	if len(a.calls) == 0 {
		emit(api.ContentBlockStart, append(blockHead(api.ContentBlockStart, 0), `,"content_block":{"type":"text","text":""}}`...))
		for _, frag := range textFragments(a.text) {
			delta(0, "text_delta", "text", frag)
		}
		emit(api.ContentBlockStop, append(blockHead(api.ContentBlockStop, 0), '}'))
	}
	contentEnd := len(events)
	b := make([]byte, 0, 128)
	b = append(b, `{"type":"`+api.MessageDelta+`","delta":{"stop_reason":`...)
	b = appendJSONString(b, stop)
	b = append(b, `,"stop_sequence":null},"usage":{"output_tokens":`...)
	b = strconv.AppendInt(b, int64(outTokens), 10)
	emit(api.MessageDelta, append(b, "}}"...))
	emit(api.MessageStop, []byte(`{"type":"`+api.MessageStop+`"}`))
	return reply{id: id, callIDs: a.callIDs(api.MessagesCallID), events: events, contentEnd: contentEnd}
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
