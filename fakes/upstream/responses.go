package upstream

import (
	"bytes"
	"strconv"
	"strings"
)

// responsesDialect is the OpenAI Responses API, POST /v1/responses.
//
// A follow-up carries an input item of type function_call_output,
// custom_tool_call_output or any other *_call_output, or an mcp_call item
// with its output; its rounds are the runs of consecutive such items (a
// request with previous_response_id carries only the latest round: the
// server then knows the round from the call ids it minted). Tools are read from function and custom tools and from the tools
// grouped under a namespace tool, whose calls carry the namespace back.
type responsesDialect struct{}

func (responsesDialect) parse(body []byte) (request, error) {
	var req request
	var input, tools jval
	err := parseObject(body, &req, func(k string, v jval) {
		switch k {
		case "input":
			input = v
		case "tools":
			tools = v
		}
	})
	if err != nil {
		return req, err
	}
	if s := input.str(); s != "" {
		req.userText = append(req.userText, s)
	}
	inResult := false
	input.eachElem(func(item jval) bool {
		var typ, role, content, output, callID jval
		item.eachField(func(k string, v jval) bool {
			switch k {
			case "type":
				typ = v
			case "role":
				role = v
			case "content":
				content = v
			case "output":
				output = v
			case "call_id":
				callID = v
			}
			return true
		})
		if isToolOutputItem(typ.str(), output) {
			req.addToolResult(callID.str(), !inResult)
			inResult = true
			return true
		}
		inResult = false
		if (!typ.exists() || typ.is("message")) && role.is("user") {
			req.userText = appendText(req.userText, content)
		}
		return true
	})
	tools.eachElem(func(t jval) bool {
		req.tools = appendResponsesTool(req.tools, t, "")
		return true
	})
	return req, nil
}

// isToolOutputItem reports whether an input item of type typ, with this
// output field, carries a tool result.
func isToolOutputItem(typ string, output jval) bool {
	switch {
	case strings.HasSuffix(typ, "_call_output"), typ == "tool_search_output":
		return true
	case typ == "mcp_call":
		return !output.isNull()
	}
	return false
}

// appendResponsesTool appends the callable tools of one tool entry.
func appendResponsesTool(dst []tool, t jval, namespace string) []tool {
	var typ, name, inner jval
	t.eachField(func(k string, v jval) bool {
		switch k {
		case "type":
			typ = v
		case "name":
			name = v
		case "tools":
			inner = v
		}
		return true
	})
	n := name.str()
	switch {
	case n == "":
	case typ.is("function"):
		dst = append(dst, tool{name: n, namespace: namespace})
	case typ.is("custom"):
		dst = append(dst, tool{name: n, namespace: namespace, custom: true})
	case typ.is("namespace") && namespace == "":
		inner.eachElem(func(it jval) bool {
			dst = appendResponsesTool(dst, it, n)
			return true
		})
	}
	return dst
}

func (responsesDialect) answer(dst []byte, a *answer, req *request) reply {
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
		it.done = appendResponsesCall(nil, it.id, a.id("call_", '_', i), c, true, "completed")
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
	if !req.stream {
		return reply{id: respID, callIDs: a.callIDs("call_"), body: response(dst[:0], "completed", true)}
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
	emit("response.created", withResponse(inProgress))
	emit("response.in_progress", withResponse(inProgress))
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
			added = appendResponsesCall(nil, it.id, a.id("call_", '_', i), c, false, "in_progress")
		} else {
			added = appendResponsesMessage(nil, it.id, "", "in_progress")
		}
		emit("response.output_item.added", func(b []byte) []byte {
			b = append(b, `,"output_index":`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, `,"item":`...)
			return append(b, added...)
		})
		if len(a.calls) > 0 {
			c := a.calls[i]
			deltaType, doneType, doneKey := "response.function_call_arguments.delta", "response.function_call_arguments.done", "arguments"
			if c.custom {
				deltaType, doneType, doneKey = "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done", "input"
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
			emit("response.content_part.added", func(b []byte) []byte { return part(b, "") })
			for _, frag := range textFragments(a.text) {
				emit("response.output_text.delta", func(b []byte) []byte {
					b = itemRef(b, it.id, i)
					b = append(b, `,"content_index":0,"delta":`...)
					b = appendJSONString(b, frag)
					return append(b, `,"logprobs":[]`...)
				})
			}
			emit("response.output_text.done", func(b []byte) []byte {
				b = itemRef(b, it.id, i)
				b = append(b, `,"content_index":0,"text":`...)
				b = appendJSONString(b, a.text)
				return append(b, `,"logprobs":[]`...)
			})
			emit("response.content_part.done", func(b []byte) []byte { return part(b, a.text) })
		}
		emit("response.output_item.done", func(b []byte) []byte {
			b = append(b, `,"output_index":`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, `,"item":`...)
			return append(b, it.done...)
		})
	}
	contentEnd := len(events)
	emit("response.completed", withResponse(response(make([]byte, 0, 1024), "completed", true)))
	return reply{id: respID, callIDs: a.callIDs("call_"), events: events, contentEnd: contentEnd}
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

func (responsesDialect) errorBody(status int, message string) []byte {
	return openAIErrorBody(status, message)
}

// terminal: response.completed, response.incomplete or response.failed.
func (responsesDialect) terminal(ev sseEvent) bool {
	switch ev.name {
	case "response.completed", "response.incomplete", "response.failed":
		return true
	case "":
		return bytes.Contains(ev.data, []byte(`"response.completed"`)) ||
			bytes.Contains(ev.data, []byte(`"response.incomplete"`)) ||
			bytes.Contains(ev.data, []byte(`"response.failed"`))
	}
	return false
}

// streamError: response.failed, whose response has status failed and an
// error {"code","message"}; or (Event error) the bare error event
// {"type":"error","code","message","param"}. Each carries the stream's next
// sequence_number.
func (responsesDialect) streamError(e *StreamError, p streamErrorAt) sseEvent {
	code := e.Type
	if code == "" {
		code = "server_error"
	}
	b := make([]byte, 0, 768)
	if e.Event == StreamErrorEvent {
		b = append(b, `{"type":"error","sequence_number":`...)
		b = strconv.AppendInt(b, int64(p.seq), 10)
		b = append(b, `,"code":`...)
		b = appendJSONString(b, code)
		b = append(b, `,"message":`...)
		b = appendJSONString(b, e.message(code))
		b = append(b, `,"param":null}`...)
		return sseEvent{name: StreamErrorEvent, data: b}
	}
	id := p.id
	if id == "" {
		id = "resp_failed"
	}
	b = append(b, `{"type":"response.failed","sequence_number":`...)
	b = strconv.AppendInt(b, int64(p.seq), 10)
	b = append(b, `,"response":{"id":`...)
	b = appendJSONString(b, id)
	b = append(b, `,"object":"response","created_at":`...)
	b = strconv.AppendInt(b, p.created, 10)
	b = append(b, `,"status":"failed","background":false,"error":{"code":`...)
	b = appendJSONString(b, code)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, e.message(code))
	b = append(b, `},"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":`...)
	b = appendJSONString(b, p.model)
	b = append(b, `,"output":[],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"store":false,"temperature":1.0,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":null,"user":null,"metadata":{}}}`...)
	return sseEvent{name: StreamErrorFailed, data: b}
}
