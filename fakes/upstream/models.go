package upstream

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	api "github.com/replaycheck/replaycheck/internal/dialect"
)

// FakeModel is the model id the fake lists.
const FakeModel = "replaycheck-fake"

// serveModels answers GET /v1/models and /v1/models/{id}: in Anthropic's
// shape when the request carries anthropic-version, else in OpenAI's. These
// ancillary calls are not model requests and are neither counted nor logged.
func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	anthropic := r.Header.Get("anthropic-version") != ""
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeJSON(w, http.StatusMethodNotAllowed, modelsError(anthropic, http.StatusMethodNotAllowed, r.URL.Path+" takes GET, not "+r.Method))
		return
	}
	id, one := strings.CutPrefix(r.URL.Path, "/v1/models/")
	if !one || id == "" {
		id = FakeModel
	}
	created := s.clock().Unix()
	model := func(b []byte) []byte {
		if anthropic {
			b = append(b, `{"type":"model","id":`...)
			b = appendJSONString(b, id)
			b = append(b, `,"display_name":`...)
			b = appendJSONString(b, id)
			b = append(b, `,"created_at":"2025-01-01T00:00:00Z"}`...)
			return b
		}
		b = append(b, `{"id":`...)
		b = appendJSONString(b, id)
		b = append(b, `,"object":"model","created":`...)
		b = strconv.AppendInt(b, created, 10)
		return append(b, `,"owned_by":"replaycheck"}`...)
	}
	var b []byte
	switch {
	case one:
		b = model(nil)
	case anthropic:
		b = append([]byte(`{"data":[`), model(nil)...)
		b = append(b, `],"has_more":false,"first_id":`...)
		b = appendJSONString(b, id)
		b = append(b, `,"last_id":`...)
		b = appendJSONString(b, id)
		b = append(b, '}')
	default:
		b = append([]byte(`{"object":"list","data":[`), model(nil)...)
		b = append(b, "]}"...)
	}
	writeJSON(w, http.StatusOK, b)
}

func modelsError(anthropic bool, status int, msg string) []byte {
	if anthropic {
		return api.AnthropicErrorBody(status, msg)
	}
	return openAIErrorBody(status, msg)
}

// serveCountTokens answers POST api.MessagesCountTokensPath with an estimate
// of a quarter token per body byte. It is neither counted nor logged.
func (s *Server) serveCountTokens(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, api.AnthropicErrorBody(http.StatusMethodNotAllowed, r.URL.Path+" takes POST, not "+r.Method))
		return
	}
	body, err := readBody(r, w, s.maxBody, nil)
	if err != nil {
		writeJSON(w, bodyStatus(err), api.AnthropicErrorBody(bodyStatus(err), err.Error()))
		return
	}
	if !json.Valid(body) {
		writeJSON(w, http.StatusBadRequest, api.AnthropicErrorBody(http.StatusBadRequest, r.URL.Path+": unparsable request body: not valid JSON"))
		return
	}
	b := append([]byte(`{"input_tokens":`), strconv.Itoa(len(body)/4+1)...)
	writeJSON(w, http.StatusOK, append(b, '}'))
}

// isGeminiModelRequest reports whether path is a Gemini model method the
// fake serves (generateContent, streamGenerateContent, countTokens).
func isGeminiModelRequest(path string) bool {
	_, _, ok := api.ParseGeminiPath(path)
	return ok
}

// isGeminiAncillary reports whether path is a Gemini call that is not a
// model request: the model list or one model (GET /v1beta/models,
// /v1beta/models/{model}), or :countTokens.
func isGeminiAncillary(path string) bool {
	if _, method, ok := api.ParseGeminiPath(path); ok {
		return method == api.GeminiCountTokens
	}
	id, found := strings.CutPrefix(path, api.GeminiModels)
	return found && (id == "" || id[0] == '/' && !strings.ContainsAny(id[1:], "/:"))
}

// serveGemini answers the Gemini model list (GET /v1beta/models), one model
// (GET /v1beta/models/{model}) and POST …:countTokens, in the Gemini API's
// shapes, with an estimate of a quarter token per body byte. These are not
// model requests: neither counted nor logged.
func (s *Server) serveGemini(w http.ResponseWriter, r *http.Request) {
	method := http.MethodGet
	_, _, count := api.ParseGeminiPath(r.URL.Path)
	if count {
		method = http.MethodPost
	}
	if r.Method != method {
		w.Header().Set("Allow", method)
		writeJSON(w, http.StatusMethodNotAllowed, api.GeminiErrorBody(http.StatusMethodNotAllowed, api.GeminiStatus(http.StatusMethodNotAllowed), r.URL.Path+" takes "+method+", not "+r.Method))
		return
	}
	if count {
		body, err := readBody(r, w, s.maxBody, nil)
		if err == nil && !json.Valid(body) {
			err = fmt.Errorf("%s: unparsable request body: not valid JSON", r.URL.Path)
		}
		if err != nil {
			writeJSON(w, bodyStatus(err), api.GeminiErrorBody(bodyStatus(err), api.GeminiStatus(bodyStatus(err)), err.Error()))
			return
		}
		n := strconv.Itoa(len(body)/4 + 1)
		writeJSON(w, http.StatusOK, []byte(`{"totalTokens":`+n+`,"promptTokensDetails":[{"modality":"TEXT","tokenCount":`+n+`}]}`))
		return
	}
	id := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, api.GeminiModels), "/")
	one := id != ""
	if !one {
		id = FakeModel
	}
	b := make([]byte, 0, 512)
	if !one {
		b = append(b, `{"models":[`...)
	}
	b = append(b, `{"name":`...)
	b = appendJSONString(b, "models/"+id)
	b = append(b, `,"version":"001","displayName":`...)
	b = appendJSONString(b, id)
	b = append(b, `,"description":"replaycheck's faulting fake model","inputTokenLimit":1048576,"outputTokenLimit":65536,"supportedGenerationMethods":["generateContent","countTokens"],"temperature":1,"topP":0.95,"topK":64,"maxTemperature":2,"thinking":false}`...)
	if !one {
		b = append(b, "]}"...)
	}
	writeJSON(w, http.StatusOK, b)
}
