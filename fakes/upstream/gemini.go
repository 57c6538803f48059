package upstream

import (
	"strconv"

	"github.com/tidwall/gjson"

	api "github.com/replaycheck/replaycheck/internal/dialect"
)

// geminiDialect writes Gemini API answers (api.Gemini): a
// GenerateContentResponse whose candidates[0].content.parts hold one
// functionCall part per call (with an id the fake mints, containing the run
// token) or the text, with finishReason STOP, usageMetadata, modelVersion
// and responseId. Streamed, it is one SSE data chunk per call or text
// fragment, then a terminal chunk carrying the finishReason and the whole
// usage, as the API ends its streams (an empty text part).
type geminiDialect struct{}

// Gemini is the fake model's part of api.Gemini.
func (answerers) Gemini() answerer { return geminiDialect{} }

func (geminiDialect) answer(dst []byte, a *answer, req *api.Request) reply {
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
			b = appendJSONString(b, a.id(api.GeminiCallID, '_', i))
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
	if !req.Stream {
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
		return reply{id: id, callIDs: a.callIDs(api.GeminiCallID), body: response(dst[:0], parts, true)}
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
	return reply{id: id, callIDs: a.callIDs(api.GeminiCallID), events: events, contentEnd: contentEnd}
}

// geminiArgs returns a call's arguments as the JSON object a functionCall
// carries: args when it is one, else {}.
func geminiArgs(args string) string {
	if gjson.Valid(args) && gjson.Parse(args).IsObject() {
		return args
	}
	return "{}"
}
