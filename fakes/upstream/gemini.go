package upstream

import (
	"bytes"
	"net/url"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// geminiDialect is the Gemini API (Google AI), POST
// /v1beta/models/{model}:generateContent and
// :streamGenerateContent?alt=sse (also under /v1/). The model and the
// stream flag are named by the path, not the body.
//
// A follow-up carries a content with a functionResponse part; its rounds
// are the runs of consecutive such contents. Tools are the
// functionDeclarations of the request's tools (googleSearch, codeExecution
// and the other built-in tools run at Google, so the fake does not call
// them). The REST API takes camelCase and snake_case field names alike, and
// so does the parser.
//
// An answer is a GenerateContentResponse: candidates[0].content.parts hold
// one functionCall part per call (with an id the fake mints, containing
// the run token) or the text, with finishReason STOP, usageMetadata,
// modelVersion and responseId. Streamed, it is one SSE data chunk per call
// or text fragment, then a terminal chunk carrying the finishReason and the
// whole usage, as the API ends its streams (an empty text part).
type geminiDialect struct{}

// geminiCall is what a Gemini model path names.
type geminiCall struct {
	model  string
	method string // generateContent, streamGenerateContent, countTokens, …
}

// geminiPrefixes are the path prefixes of Gemini model resources.
var geminiPrefixes = [...]string{"/v1beta/models/", "/v1/models/"}

// geminiMethods are the methods of a Gemini model the fake serves.
var geminiMethods = [...]string{"generateContent", "streamGenerateContent", "countTokens"}

// parseGeminiPath reads /v1beta/models/{model}:{method} (or /v1/…) for a
// method the fake serves; ok is false for any other path.
func parseGeminiPath(path string) (geminiCall, bool) {
	for _, p := range geminiPrefixes {
		rest, found := strings.CutPrefix(path, p)
		if !found {
			continue
		}
		model, method, found := strings.Cut(rest, ":")
		if !found || model == "" || strings.ContainsAny(model, "/:") {
			return geminiCall{}, false
		}
		for _, m := range geminiMethods {
			if method == m {
				return geminiCall{model: model, method: method}, true
			}
		}
	}
	return geminiCall{}, false
}

// route reads a model request's path: generateContent, or
// streamGenerateContent, which must ask for server-sent events (alt=sse,
// as the Google SDKs do); the JSON-array stream the API sends without it
// is not served, and such a request is refused (pathCall.bad).
func (geminiDialect) route(u *url.URL) (pathCall, bool) {
	c, ok := parseGeminiPath(u.Path)
	switch {
	case !ok:
	case c.method == "generateContent":
		return pathCall{model: c.model}, true
	case c.method == "streamGenerateContent" && u.Query().Get("alt") != "sse":
		return pathCall{model: c.model, stream: true, bad: u.Path + ": this fake streams only server-sent events; add ?alt=sse, as the Google SDKs do"}, true
	case c.method == "streamGenerateContent":
		return pathCall{model: c.model, stream: true}, true
	}
	return pathCall{}, false
}

func (geminiDialect) parse(body []byte) (request, error) {
	var req request
	var contents, tools jval
	err := parseObject(body, &req, func(k string, v jval) {
		switch k {
		case "contents":
			contents = v
		case "tools":
			tools = v
		}
	})
	if err != nil {
		return req, err
	}
	if err := checkArray("contents", contents); err != nil {
		return req, err
	}
	inResult := false
	contents.eachElem(func(c jval) bool {
		role := c.field("role")
		result := false
		var text []string
		c.field("parts").eachElem(func(p jval) bool {
			if fr := fieldEither(p, "functionResponse", "function_response"); fr.exists() && !fr.isNull() {
				req.addToolResult(fr.field("id").str(), !inResult && !result)
				result = true
			} else if s := p.field("text").str(); s != "" {
				text = append(text, s)
			}
			return true
		})
		if !role.is("model") {
			req.userText = append(req.userText, text...)
		}
		inResult = result
		return true
	})
	tools.eachElem(func(t jval) bool {
		fieldEither(t, "functionDeclarations", "function_declarations").eachElem(func(f jval) bool {
			if name := f.field("name").str(); name != "" {
				req.tools = append(req.tools, tool{name: name})
			}
			return true
		})
		return true
	})
	return req, nil
}

// fieldEither returns the field camel of v, else snake.
func fieldEither(v jval, camel, snake string) jval {
	if f := v.field(camel); f.exists() {
		return f
	}
	return v.field(snake)
}

func (geminiDialect) answer(dst []byte, a *answer, req *request) reply {
	id := a.id("resp-", '-', -1)
	outTokens := a.outputTokens()
	// tail closes a response: usage (whole or the prompt's only), model and id.
	tail := func(b []byte, whole bool) []byte {
		b = append(b, `,"usageMetadata":{"promptTokenCount":`...)
		b = strconv.AppendInt(b, int64(a.inputTokens), 10)
		total := a.inputTokens
		if whole {
			b = append(b, `,"candidatesTokenCount":`...)
			b = strconv.AppendInt(b, int64(outTokens), 10)
			total += outTokens
		}
		b = append(b, `,"totalTokenCount":`...)
		b = strconv.AppendInt(b, int64(total), 10)
		b = append(b, `,"promptTokensDetails":[{"modality":"TEXT","tokenCount":`...)
		b = strconv.AppendInt(b, int64(a.inputTokens), 10)
		b = append(b, `}]},"modelVersion":`...)
		b = appendJSONString(b, a.model)
		b = append(b, `,"responseId":`...)
		b = appendJSONString(b, id)
		return append(b, '}')
	}
	// response renders a response whose parts are written by parts.
	response := func(b []byte, parts func([]byte) []byte, finish bool) []byte {
		b = append(b, `{"candidates":[{"content":{"parts":[`...)
		b = parts(b)
		b = append(b, `],"role":"model"}`...)
		if finish {
			b = append(b, `,"finishReason":"STOP"`...)
		}
		b = append(b, `,"index":0}]`...)
		return tail(b, finish)
	}
	call := func(i int) func([]byte) []byte {
		return func(b []byte) []byte {
			c := a.calls[i]
			b = append(b, `{"functionCall":{"id":`...)
			b = appendJSONString(b, a.id("fc_", '_', i))
			b = append(b, `,"name":`...)
			b = appendJSONString(b, c.name)
			b = append(b, `,"args":`...)
			b = append(b, geminiArgs(c.args)...)
			return append(b, "}}"...)
		}
	}
	text := func(s string) func([]byte) []byte {
		return func(b []byte) []byte {
			b = append(b, `{"text":`...)
			b = appendJSONString(b, s)
			return append(b, '}')
		}
	}
	if !req.stream {
		parts := func(b []byte) []byte {
			for i := range a.calls {
				if i > 0 {
					b = append(b, ',')
				}
				b = call(i)(b)
			}
			if len(a.calls) == 0 {
				b = text(a.text)(b)
			}
			return b
		}
		return reply{id: id, callIDs: a.callIDs("fc_"), body: response(dst[:0], parts, true)}
	}
	events := make([]sseEvent, 0, 5+len(a.calls))
	emit := func(parts func([]byte) []byte, finish bool) {
		events = append(events, sseEvent{data: response(make([]byte, 0, 384), parts, finish)})
	}
	for i := range a.calls {
		emit(call(i), false)
	}
	if len(a.calls) == 0 {
		for _, frag := range textFragments(a.text) {
			emit(text(frag), false)
		}
	}
	contentEnd := len(events)
	emit(text(""), true)
	return reply{id: id, callIDs: a.callIDs("fc_"), events: events, contentEnd: contentEnd}
}

// geminiArgs returns a call's arguments as the JSON object a functionCall
// carries: args when it is one, else {}.
func geminiArgs(args string) string {
	if gjson.Valid(args) && gjson.Parse(args).IsObject() {
		return args
	}
	return "{}"
}

// geminiStatuses are the google.rpc status names of HTTP statuses, as the
// Gemini API's errors name them.
var geminiStatuses = []struct {
	code   int
	status string
}{
	{400, "INVALID_ARGUMENT"}, {401, "UNAUTHENTICATED"}, {403, "PERMISSION_DENIED"},
	{404, "NOT_FOUND"}, {409, "ABORTED"}, {429, "RESOURCE_EXHAUSTED"}, {499, "CANCELLED"},
	{500, "INTERNAL"}, {501, "UNIMPLEMENTED"}, {503, "UNAVAILABLE"}, {504, "DEADLINE_EXCEEDED"},
}

// geminiStatus names an HTTP status as google.rpc does; one without a name
// of its own is FAILED_PRECONDITION (4xx) or UNKNOWN.
func geminiStatus(code int) string {
	for _, s := range geminiStatuses {
		if s.code == code {
			return s.status
		}
	}
	if code < 500 {
		return "FAILED_PRECONDITION"
	}
	return "UNKNOWN"
}

// geminiErrorBody is the Google API error shape
// {"error":{"code","message","status"}}.
func geminiErrorBody(code int, status, message string) []byte {
	b := make([]byte, 0, 80+len(message))
	b = append(b, `{"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, message)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, status)
	return append(b, "}}"...)
}

func (geminiDialect) errorBody(status int, message string) []byte {
	return geminiErrorBody(status, geminiStatus(status), message)
}

// terminal: a chunk whose candidate carries a finishReason.
func (geminiDialect) terminal(ev sseEvent) bool {
	if !bytes.Contains(ev.data, []byte(`"finishReason"`)) {
		return false // most chunks: no need to parse
	}
	return gjson.GetBytes(ev.data, "candidates.0.finishReason").Type == gjson.String
}

// streamError: the Google error object, pretty-printed and outside the
// event-stream format (no "data:"), as the Gemini API sends it when a
// stream fails after HTTP 200 and some chunks:
//
//	{
//	  "error": {
//	    "code": 503,
//	    "message": "The model is overloaded. Please try again later.",
//	    "status": "UNAVAILABLE"
//	  }
//	}
//
// (an alt=sse stream captured in vercel/ai issue 5217, "breaking the SSE
// format"; googleapis/js-genai issue 461). Google's SDKs read it as the
// API's error: @google/genai (JS) a network read that parses as an error
// object, google.golang.org/genai a block between blank lines that does
// (iterateResponseStream), each as an API error with the code. Type is
// the status in lower case (unavailable, resource_exhausted, internal, …);
// "" = unavailable, code 503.
func (geminiDialect) streamError(e *StreamError, _ streamErrorAt) sseEvent {
	typ := e.Type
	if typ == "" {
		typ = "unavailable"
	}
	status := strings.ToUpper(typ)
	code := 500
	for _, s := range geminiStatuses {
		if s.status == status {
			code = s.code
		}
	}
	b := make([]byte, 0, 128)
	b = append(b, "{\n  \"error\": {\n    \"code\": "...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, ",\n    \"message\": "...)
	b = appendJSONString(b, e.message(typ))
	b = append(b, ",\n    \"status\": "...)
	b = appendJSONString(b, status)
	b = append(b, "\n  }\n}"...)
	return sseEvent{data: b, raw: true}
}
