package dialect

import (
	"bytes"
	"net/url"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// The methods of a Gemini model the fakes serve.
const (
	GeminiGenerate       = "generateContent"
	GeminiStreamGenerate = "streamGenerateContent"
	GeminiCountTokens    = "countTokens"
)

// GeminiModels is the path of the Gemini model list; a model's methods are
// below it, /v1beta/models/{model}:{method}.
const GeminiModels = "/v1beta/models"

// geminiPrefixes are the path prefixes of Gemini model resources.
var geminiPrefixes = [...]string{GeminiModels + "/", "/v1/models/"}

// GeminiCallID begins the ids of its answers' tool calls.
const GeminiCallID = "fc_"

// Gemini is the Gemini API (Google AI), POST
// /v1beta/models/{model}:generateContent and
// :streamGenerateContent?alt=sse (also under /v1/). The model and the
// stream flag are named by the path, not the body.
//
// A follow-up carries a content with a functionResponse part (its id names
// the call); its rounds are the runs of consecutive such contents. Tools are
// the functionDeclarations of the request's tools (googleSearch,
// codeExecution and the other built-in tools run at Google). The REST API
// takes camelCase and snake_case field names alike, and so does the parser.
// A tool call is a part {"functionCall":{"id","name","args"}} of
// candidates[0].content. A stream is data-only chunks, each a whole
// GenerateContentResponse, the last one carrying a finishReason. Errors are
// Google's {"error":{"code","message","status"}}, in a body or, mid-stream,
// pretty-printed outside the event-stream format.
func Gemini() Dialect {
	return Dialect{
		Name:   "gemini",
		Title:  "Gemini generateContent",
		Path:   GeminiModels + "/{model}:{method}",
		InPath: true,
		Route:  geminiRoute,
		Parse:  parseGemini,
		SetPrompt: func(body map[string]any, prompt string) {
			body["contents"] = []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": prompt}}}}
		},
		Conversation: []string{"systemInstruction", "system_instruction", "contents"},
		Tools:        []string{"tools"},
		CallIDPrefix: GeminiCallID,
		// Each streamed chunk is a whole response: its calls are its own.
		Recorded: Recorded{
			ID: "responseId", Model: "modelVersion", Calls: "candidates.0.content.parts.#.functionCall.name",
			StreamID: "responseId", StreamModel: "modelVersion", StreamCalls: "candidates.0.content.parts.#.functionCall.name",
		},
		ErrorBody: func(status int, message string) []byte {
			return GeminiErrorBody(status, GeminiStatus(status), message)
		},
		StreamError: geminiStreamError,
		Terminal:    geminiTerminal,
		Ends:        geminiFinished,
		Failed:      func(string, map[string]any) bool { return false },
	}
}

// ParseGeminiPath reads /v1beta/models/{model}:{method} (or /v1/…) for a
// method the fakes serve; ok is false for any other path.
func ParseGeminiPath(path string) (model, method string, ok bool) {
	for _, p := range geminiPrefixes {
		rest, found := strings.CutPrefix(path, p)
		if !found {
			continue
		}
		model, method, found := strings.Cut(rest, ":")
		if !found || model == "" || strings.ContainsAny(model, "/:") {
			return "", "", false
		}
		switch method {
		case GeminiGenerate, GeminiStreamGenerate, GeminiCountTokens:
			return model, method, true
		}
	}
	return "", "", false
}

// geminiRoute reads a model request's path: generateContent, or
// streamGenerateContent, which must ask for server-sent events (alt=sse,
// as the Google SDKs do); the JSON-array stream the API sends without it
// is not served, and such a request is refused (Call.Bad).
func geminiRoute(u *url.URL) (Call, bool) {
	model, method, ok := ParseGeminiPath(u.Path)
	switch {
	case !ok:
	case method == GeminiGenerate:
		return Call{Model: model}, true
	case method == GeminiStreamGenerate && u.Query().Get("alt") != "sse":
		return Call{Model: model, Stream: true, Bad: u.Path + ": this fake streams only server-sent events; add ?alt=sse, as the Google SDKs do"}, true
	case method == GeminiStreamGenerate:
		return Call{Model: model, Stream: true}, true
	}
	return Call{}, false
}

func parseGemini(body []byte) (Request, error) {
	var req Request
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
				req.addToolResult(geminiResult(fr), !inResult && !result)
				result = true
			} else if s := p.field("text").str(); s != "" {
				text = append(text, s)
			}
			return true
		})
		if !role.is("model") {
			req.UserText = append(req.UserText, text...)
		}
		inResult = result
		return true
	})
	tools.eachElem(func(t jval) bool {
		fieldEither(t, "functionDeclarations", "function_declarations").eachElem(func(f jval) bool {
			if name := f.field("name").str(); name != "" {
				req.Tools = append(req.Tools, Tool{Name: name})
			}
			return true
		})
		return true
	})
	return req, nil
}

// geminiResult reads a functionResponse: its id, and its response object's
// error (the flag, and its text), else its output, result or content
// string, else the object's JSON.
func geminiResult(fr jval) ToolResult {
	res := ToolResult{CallID: fr.field("id").str()}
	resp := fr.field("response")
	if e := resp.field("error"); !e.isNull() {
		res.Error = true
		if s := e.str(); s != "" {
			res.Text = s
			return res
		}
		res.Text = e.r.Raw
		return res
	}
	for _, k := range [...]string{"output", "result", "content"} {
		if s := resp.field(k).str(); s != "" {
			res.Text = s
			return res
		}
	}
	if resp.exists() && !resp.isNull() {
		res.Text = resp.r.Raw
	}
	return res
}

// geminiTerminal: a chunk whose candidate carries a finishReason.
func geminiTerminal(ev Event) bool {
	if !bytes.Contains(ev.Data, []byte(`"finishReason"`)) {
		return false // most chunks: no need to parse
	}
	return gjson.GetBytes(ev.Data, "candidates.0.finishReason").Type == gjson.String
}

// geminiFinished reports whether a decoded Gemini chunk is its stream's
// terminal one: its candidate carries a finishReason.
func geminiFinished(v map[string]any) bool {
	c, _ := v["candidates"].([]any)
	if len(c) == 0 {
		return false
	}
	first, _ := c[0].(map[string]any)
	reason, _ := first["finishReason"].(string)
	return reason != ""
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

// GeminiStatus names an HTTP status as google.rpc does; one without a name
// of its own is FAILED_PRECONDITION (4xx) or UNKNOWN.
func GeminiStatus(code int) string {
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

// GeminiErrorBody is the Google API error shape
// {"error":{"code","message","status"}}.
func GeminiErrorBody(code int, status, message string) []byte {
	b := make([]byte, 0, 80+len(message))
	b = append(b, `{"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, message)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, status)
	return append(b, "}}"...)
}

// geminiStreamError: the Google error object, pretty-printed and outside
// the event-stream format (no "data:"), as the Gemini API sends it when a
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
func geminiStreamError(e StreamError) Event {
	typ := errorType(e.Type, "unavailable")
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
	b = appendJSONString(b, e.Message(typ))
	b = append(b, ",\n    \"status\": "...)
	b = appendJSONString(b, status)
	b = append(b, "\n  }\n}"...)
	return Event{Data: b, Raw: true}
}
