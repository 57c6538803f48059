package upstream

import (
	"strconv"

	api "github.com/replaycheck/replaycheck/internal/dialect"
)

// responsesDialect writes OpenAI Responses answers (api.Responses).
type responsesDialect struct{}

// Responses is the fake model's part of api.Responses.
func (answerers) Responses() answerer { return responsesDialect{} }

func (responsesDialect) answer(dst []byte, a *answer, req *api.Request) reply {
	respID := a.id("resp_", '_', -1)
	type item struct {
		id   string
		done []byte // the completed item
	}
	items := make([]item, 0, max(len(a.calls), 1))
	for i, c := range a.calls {
		it := item{id: a.id("fc_", '_', i)}
		if c.custom {
			it.id = a.id("ctc_", '_', i)
		}
		it.done = appendResponsesCall(nil, it.id, a.id(api.ResponsesCallID, '_', i), c, true, "completed")
		items = append(items, it)
	}
	msgID := a.id("msg_", '_', -1)
	if len(a.calls) == 0 {
		items = append(items, item{id: msgID, done: appendResponsesMessage(nil, msgID, a.text, "completed")})
	}
	outTokens := a.outputTokens()
	response := func(dst []byte, status string, withOutput bool) []byte {
		b := dst
		b = append(b, `{"id":`...)
		b = appendJSONString(b, respID)
		b = append(b, `,"object":"response","created_at":`...)
		b = strconv.AppendInt(b, a.created, 10)
		b = append(b, `,"status":`...)
		b = appendJSONString(b, status)
		b = append(b, `,"background":false,"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":`...)
		b = appendJSONString(b, a.model)
		b = append(b, `,"output":[`...)
		if withOutput {
			for i, it := range items {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, it.done...)
			}
		}
		b = append(b, `],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"store":false,"temperature":1.0,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":`...)
		if withOutput {
			b = append(b, `{"input_tokens":`...)
			b = strconv.AppendInt(b, int64(a.inputTokens), 10)
			b = append(b, `,"input_tokens_details":{"cached_tokens":0},"output_tokens":`...)
			b = strconv.AppendInt(b, int64(outTokens), 10)
			b = append(b, `,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":`...)
			b = strconv.AppendInt(b, int64(a.inputTokens+outTokens), 10)
			b = append(b, '}')
		} else {
			b = append(b, "null"...)
		}
		return append(b, `,"user":null,"metadata":{}}`...)
	}
	if !req.Stream {
		return reply{id: respID, callIDs: a.callIDs(api.ResponsesCallID), body: response(dst[:0], "completed", true)}
	}

	events := make([]sseEvent, 0, 4+8*len(items))
	seq := 0
	emit := func(typ string, fill func(b []byte) []byte) {
		b := make([]byte, 0, 256)
		b = append(b, `{"type":`...)
		b = appendJSONString(b, typ)
		b = append(b, `,"sequence_number":`...)
		b = strconv.AppendInt(b, int64(seq), 10)
		b = fill(b)
		b = append(b, '}')
		seq++
		events = append(events, sseEvent{name: typ, data: b})
	}
	withResponse := func(r []byte) func([]byte) []byte {
		return func(b []byte) []byte { return append(append(b, `,"response":`...), r...) }
	}
	inProgress := response(make([]byte, 0, 768), "in_progress", false)
	emit(api.ResponseCreated, withResponse(inProgress))
	emit(api.ResponseInProgress, withResponse(inProgress))
	itemRef := func(b []byte, id string, out int) []byte {
		b = append(b, `,"item_id":`...)
		b = appendJSONString(b, id)
		b = append(b, `,"output_index":`...)
		return strconv.AppendInt(b, int64(out), 10)
	}
	for i, it := range items {
		var added []byte
		if len(a.calls) > 0 {
			c := a.calls[i]
			added = appendResponsesCall(nil, it.id, a.id(api.ResponsesCallID, '_', i), c, false, "in_progress")
		} else {
			added = appendResponsesMessage(nil, it.id, "", "in_progress")
		}
		emit(api.OutputItemAdded, func(b []byte) []byte {
			b = append(b, `,"output_index":`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, `,"item":`...)
			return append(b, added...)
		})
		if len(a.calls) > 0 {
			c := a.calls[i]
			deltaType, doneType, doneKey := api.FunctionArgumentsDelta, api.FunctionArgumentsDone, "arguments"
			if c.custom {
				deltaType, doneType, doneKey = api.CustomToolInputDelta, api.CustomToolInputDone, "input"
			}
			for _, frag := range splitArgs(c.args, 4) {
				emit(deltaType, func(b []byte) []byte {
					b = itemRef(b, it.id, i)
					b = append(b, `,"delta":`...)
					return appendJSONString(b, frag)
				})
			}
			emit(doneType, func(b []byte) []byte {
				b = itemRef(b, it.id, i)
				if !c.custom {
					b = append(b, `,"name":`...)
					b = appendJSONString(b, c.name)
				}
				b = append(b, `,"`...)
				b = append(b, doneKey...)
				b = append(b, `":`...)
				return appendJSONString(b, c.args)
			})
		} else {
			part := func(b []byte, text string) []byte {
				b = itemRef(b, it.id, i)
				b = append(b, `,"content_index":0,"part":{"type":"output_text","text":`...)
				b = appendJSONString(b, text)
				return append(b, `,"annotations":[],"logprobs":[]}`...)
			}
			emit(api.ContentPartAdded, func(b []byte) []byte { return part(b, "") })
			for _, frag := range textFragments(a.text) {
				emit(api.OutputTextDelta, func(b []byte) []byte {
					b = itemRef(b, it.id, i)
					b = append(b, `,"content_index":0,"delta":`...)
					b = appendJSONString(b, frag)
					return append(b, `,"logprobs":[]`...)
				})
			}
			emit(api.OutputTextDone, func(b []byte) []byte {
				b = itemRef(b, it.id, i)
				b = append(b, `,"content_index":0,"text":`...)
				b = appendJSONString(b, a.text)
				return append(b, `,"logprobs":[]`...)
			})
			emit(api.ContentPartDone, func(b []byte) []byte { return part(b, a.text) })
		}
		emit(api.OutputItemDone, func(b []byte) []byte {
			b = append(b, `,"output_index":`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, `,"item":`...)
			return append(b, it.done...)
		})
	}
	contentEnd := len(events)
	emit(api.ResponseCompleted, withResponse(response(make([]byte, 0, 1024), "completed", true)))
	return reply{id: respID, callIDs: a.callIDs(api.ResponsesCallID), events: events, contentEnd: contentEnd}
}

// appendResponsesCall appends a function_call or custom_tool_call item.
// Without withArgs its arguments (input) are empty.
func appendResponsesCall(b []byte, id, callID string, c toolCall, withArgs bool, status string) []byte {
	args := func(b []byte) []byte {
		if withArgs {
			return c.appendQuotedArgs(b)
		}
		return append(b, `""`...)
	}
	b = append(b, `{"id":`...)
	b = appendJSONString(b, id)
	if c.custom {
		b = append(b, `,"type":"custom_tool_call","call_id":`...)
		b = appendJSONString(b, callID)
		b = append(b, `,"name":`...)
		b = appendJSONString(b, c.name)
		b = append(b, `,"input":`...)
		b = args(b)
	} else {
		b = append(b, `,"type":"function_call","status":`...)
		b = appendJSONString(b, status)
		b = append(b, `,"call_id":`...)
		b = appendJSONString(b, callID)
		b = append(b, `,"name":`...)
		b = appendJSONString(b, c.name)
		b = append(b, `,"arguments":`...)
		b = args(b)
	}
	if c.namespace != "" {
		b = append(b, `,"namespace":`...)
		b = appendJSONString(b, c.namespace)
	}
	return append(b, '}')
}

// appendResponsesMessage appends an assistant message item.
func appendResponsesMessage(b []byte, id, text, status string) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, id)
	b = append(b, `,"type":"message","status":`...)
	b = appendJSONString(b, status)
	b = append(b, `,"role":"assistant","content":[`...)
	if status == "completed" {
		b = append(b, `{"type":"output_text","text":`...)
		b = appendJSONString(b, text)
		b = append(b, `,"annotations":[],"logprobs":[]}`...)
	}
	return append(b, "]}"...)
}
