package dialect

import (
	"bytes"
	"strconv"
	"strings"
)

// ResponsesPath is the path of OpenAI Responses requests.
const ResponsesPath = "/v1/responses"

// The events of a Responses stream, in the order an answer sends them, and
// its terminal and error events.
const (
	ResponseCreated        = "response.created"
	ResponseInProgress     = "response.in_progress"
	OutputItemAdded        = "response.output_item.added"
	FunctionArgumentsDelta = "response.function_call_arguments.delta"
	FunctionArgumentsDone  = "response.function_call_arguments.done"
	CustomToolInputDelta   = "response.custom_tool_call_input.delta"
	CustomToolInputDone    = "response.custom_tool_call_input.done"
	ContentPartAdded       = "response.content_part.added"
	OutputTextDelta        = "response.output_text.delta"
	OutputTextDone         = "response.output_text.done"
	ContentPartDone        = "response.content_part.done"
	OutputItemDone         = "response.output_item.done"
	ResponseCompleted      = "response.completed"
	ResponseIncomplete     = "response.incomplete"
	ResponseFailed         = "response.failed"
	ResponsesErrorEvent    = "error"
)

// FunctionCallOutput is the type of the input item carrying a function
// call's result.
const FunctionCallOutput = "function_call_output"

// ResponsesCallID begins the ids of its answers' tool calls.
const ResponsesCallID = "call_"

// Responses is the OpenAI Responses API, POST /v1/responses.
//
// A follow-up carries an input item of type function_call_output,
// custom_tool_call_output or any other *_call_output (tool_search_output
// too), or an mcp_call item with its output, naming its call in call_id;
// its rounds are the runs of consecutive such items (a request with
// previous_response_id carries only the latest round). The stream flag is
// the body's "stream". Tools are function and custom tools and the tools
// grouped under a namespace tool, whose calls carry the namespace back. A
// tool call is an output item {"type":"function_call","call_id","name",
// "arguments"} (or custom_tool_call with "input"). A stream is named events,
// each with a sequence_number, ending with response.completed (or
// response.incomplete, response.failed). Errors are OpenAI's in a body;
// mid-stream, response.failed (its response's error {"code","message"}) or
// the bare error event {"type":"error","code","message","param"}.
func Responses() Dialect {
	return Dialect{
		Name:         "responses",
		Title:        "OpenAI Responses",
		Path:         ResponsesPath,
		Route:        fixedRoute(ResponsesPath),
		Parse:        parseResponses,
		SetPrompt:    func(body map[string]any, prompt string) { body["input"] = prompt },
		Conversation: []string{"instructions", "previous_response_id", "input"},
		Tools:        []string{"tools"},
		CallIDPrefix: ResponsesCallID,
		Recorded: Recorded{
			ID: "id", Model: "model", Calls: `output.#(type=="function_call")#.name`,
			// The id and model in response.created and the calls in
			// response.completed; other events have no "response".
			StreamID: "response.id", StreamModel: "response.model", StreamCalls: `response.output.#(type=="function_call")#.name`,
		},
		ErrorBody:   OpenAIErrorBody,
		StreamError: responsesStreamError,
		Terminal:    responsesTerminal,
		Ends:        func(chunk map[string]any) bool { return chunk["type"] == ResponseCompleted },
		Failed: func(_ string, chunk map[string]any) bool {
			typ, _ := chunk["type"].(string)
			return typ == ResponsesErrorEvent || typ == ResponseFailed
		},
	}
}

func parseResponses(body []byte) (Request, error) {
	var req Request
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
		req.UserText = append(req.UserText, s)
	}
	inResult := false
	input.eachElem(func(item jval) bool {
		var typ, role, content, output, callID, errv jval
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
			case "error":
				errv = v
			}
			return true
		})
		if isToolOutputItem(typ.str(), output) {
			res := ToolResult{CallID: callID.str(), Text: contentText(output)}
			if typ.is("mcp_call") && !errv.isNull() {
				res.Error = true
				if e := errv.str(); e != "" {
					res.Text = e
				}
			}
			req.addToolResult(res, !inResult)
			inResult = true
			return true
		}
		inResult = false
		if (!typ.exists() || typ.is("message")) && role.is("user") {
			req.UserText = appendText(req.UserText, content)
		}
		return true
	})
	tools.eachElem(func(t jval) bool {
		req.Tools = appendResponsesTool(req.Tools, t, "")
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
func appendResponsesTool(dst []Tool, t jval, namespace string) []Tool {
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
		dst = append(dst, Tool{Name: n, Namespace: namespace})
	case typ.is("custom"):
		dst = append(dst, Tool{Name: n, Namespace: namespace, Custom: true})
	case typ.is("namespace") && namespace == "":
		inner.eachElem(func(it jval) bool {
			dst = appendResponsesTool(dst, it, n)
			return true
		})
	}
	return dst
}

// responsesTerminal: response.completed, response.incomplete or
// response.failed, named or (an event without a name) in its data.
func responsesTerminal(ev Event) bool {
	switch ev.Name {
	case ResponseCompleted, ResponseIncomplete, ResponseFailed:
		return true
	case "":
		return bytes.Contains(ev.Data, []byte(`"`+ResponseCompleted+`"`)) ||
			bytes.Contains(ev.Data, []byte(`"`+ResponseIncomplete+`"`)) ||
			bytes.Contains(ev.Data, []byte(`"`+ResponseFailed+`"`))
	}
	return false
}

// responsesStreamError: response.failed, whose response has status failed
// and an error {"code","message"}; or (Event ResponsesErrorEvent) the bare
// error event {"type":"error","code","message","param"}. Each carries the
// stream's next sequence_number; code "" = server_error.
func responsesStreamError(e StreamError) Event {
	code := errorType(e.Type, "server_error")
	b := make([]byte, 0, 768)
	if e.Event == ResponsesErrorEvent {
		b = append(b, `{"type":"error","sequence_number":`...)
		b = strconv.AppendInt(b, int64(e.Seq), 10)
		b = append(b, `,"code":`...)
		b = appendJSONString(b, code)
		b = append(b, `,"message":`...)
		b = appendJSONString(b, e.Message(code))
		b = append(b, `,"param":null}`...)
		return Event{Name: ResponsesErrorEvent, Data: b}
	}
	id := e.ID
	if id == "" {
		id = "resp_failed"
	}
	b = append(b, `{"type":"response.failed","sequence_number":`...)
	b = strconv.AppendInt(b, int64(e.Seq), 10)
	b = append(b, `,"response":{"id":`...)
	b = appendJSONString(b, id)
	b = append(b, `,"object":"response","created_at":`...)
	b = strconv.AppendInt(b, e.Created, 10)
	b = append(b, `,"status":"failed","background":false,"error":{"code":`...)
	b = appendJSONString(b, code)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, e.Message(code))
	b = append(b, `},"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":`...)
	b = appendJSONString(b, e.Model)
	b = append(b, `,"output":[],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"store":false,"temperature":1.0,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":null,"user":null,"metadata":{}}}`...)
	return Event{Name: ResponseFailed, Data: b}
}
