package dialect

import (
	"bytes"
	"net/http"

	"github.com/tidwall/gjson"
)

// ChatPath is the path of OpenAI Chat Completions requests.
const ChatPath = "/v1/chat/completions"

// Done is the data of chat's last stream event, after the finish_reason
// chunk (and the usage chunk).
const Done = "[DONE]"

// ChatCallID begins the ids of its answers' tool calls.
const ChatCallID = "call_"

// Chat is OpenAI Chat Completions, POST /v1/chat/completions.
//
// A follow-up carries a message of role "tool" (or legacy "function"),
// naming its call in tool_call_id; its rounds are the runs of consecutive
// such messages. The stream flag is the body's "stream". Tools are read
// from "tools" (type function or custom) and legacy "functions". A tool
// call is {"id":"call_…","type":"function","function":{"name","arguments"}}
// (or type custom, {"custom":{"name","input"}}; a legacy request gets
// message.function_call). A stream is data-only chunks ending with the
// chunk carrying a finish_reason, the usage chunk when
// stream_options.include_usage is set, then [DONE]. Errors are OpenAI's
// {"error":{"message","type","param","code"}}, in a body or, mid-stream, as
// a chunk of their own.
func Chat() Dialect {
	return Dialect{
		Name:         "chat",
		Title:        "OpenAI Chat Completions",
		Path:         ChatPath,
		Route:        fixedRoute(ChatPath),
		Parse:        parseChat,
		SetPrompt:    userMessage,
		Conversation: []string{"messages"},
		Tools:        []string{"tools", "functions"},
		CallIDPrefix: ChatCallID,
		Recorded: Recorded{
			ID: "id", Model: "model", Calls: "choices.0.message.tool_calls.#.function.name",
			// A call's name arrives with its first chunk only.
			StreamID: "id", StreamModel: "model", StreamCalls: "choices.0.delta.tool_calls.#.function.name",
		},
		ErrorBody:   OpenAIErrorBody,
		StreamError: chatStreamError,
		Terminal:    chatTerminal,
		Ends:        func(map[string]any) bool { return false },
		Sentinel:    Done,
		Failed: func(_ string, chunk map[string]any) bool {
			_, isErr := chunk["error"]
			typ, _ := chunk["type"].(string)
			return isErr && typ == ""
		},
	}
}

func parseChat(body []byte) (Request, error) {
	var req Request
	var messages, tools, functions jval
	err := parseObject(body, &req, func(k string, v jval) {
		switch k {
		case "stream_options":
			req.IncludeUsage = v.field("include_usage").isTrue()
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
			req.addToolResult(ToolResult{CallID: callID.str(), Text: contentText(content)}, !inResult)
			inResult = true
			return true
		case role.is("user"):
			req.UserText = appendText(req.UserText, content)
		}
		inResult = false
		return true
	})
	tools.eachElem(func(t jval) bool {
		if t.field("type").is("custom") {
			if name := t.field("custom").field("name").str(); name != "" {
				req.Tools = append(req.Tools, Tool{Name: name, Custom: true})
			}
			return true
		}
		if name := t.field("function").field("name").str(); name != "" {
			req.Tools = append(req.Tools, Tool{Name: name})
		}
		return true
	})
	if len(req.Tools) == 0 {
		functions.eachElem(func(f jval) bool {
			if name := f.field("name").str(); name != "" {
				req.Tools = append(req.Tools, Tool{Name: name})
				req.Legacy = true
			}
			return true
		})
	}
	return req, nil
}

// userMessage sets messages to one user message holding prompt.
func userMessage(body map[string]any, prompt string) {
	body["messages"] = []any{map[string]any{"role": "user", "content": prompt}}
}

// chatTerminal: the chunk carrying a non-null finish_reason, or [DONE].
func chatTerminal(ev Event) bool {
	if bytes.HasPrefix(ev.Data, []byte(Done)) {
		return true
	}
	if !bytes.Contains(ev.Data, []byte(`"finish_reason"`)) {
		return false // most chunks: no need to parse
	}
	done := false
	gjson.GetBytes(ev.Data, "choices").ForEach(func(_, c gjson.Result) bool {
		done = c.Get("finish_reason").Type == gjson.String
		return !done
	})
	return done
}

// chatStreamError: a chunk carrying only an error object, as OpenAI sends
// when a stream fails after it began:
// {"error":{"message","type","param","code"}}; type "" = server_error.
func chatStreamError(e StreamError) Event {
	typ := errorType(e.Type, "server_error")
	b := make([]byte, 0, 128)
	b = append(b, `{"error":{"message":`...)
	b = appendJSONString(b, e.Message(typ))
	b = append(b, `,"type":`...)
	b = appendJSONString(b, typ)
	b = append(b, `,"param":null,"code":null}}`...)
	return Event{Data: b}
}

// OpenAIErrorBody is the OpenAI error shape
// {"error":{"message","type","param","code"}}, of chat and responses.
func OpenAIErrorBody(status int, message string) []byte {
	typ, code := "server_error", ""
	switch status {
	case http.StatusBadRequest, http.StatusMethodNotAllowed, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		typ = "invalid_request_error"
	case http.StatusUnauthorized:
		typ, code = "invalid_request_error", "invalid_api_key"
	case http.StatusForbidden:
		typ = "permission_error"
	case http.StatusNotFound:
		typ, code = "invalid_request_error", "not_found"
	case http.StatusTooManyRequests:
		typ, code = "rate_limit_error", "rate_limit_exceeded"
	}
	b := make([]byte, 0, 96+len(message))
	b = append(b, `{"error":{"message":`...)
	b = appendJSONString(b, message)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, typ)
	b = append(b, `,"param":null,"code":`...)
	if code == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, code)
	}
	return append(b, "}}"...)
}
