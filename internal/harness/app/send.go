package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/replaycheck/replaycheck/internal/dialect"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/sse"
)

// Bounds of what the harness reads of an answer.
const (
	maxAnswerBytes = 16 << 20 // the whole answer
	maxLineBytes   = 1 << 20  // one SSE line
	excerptBytes   = 2 << 10  // kept in the history
)

// seedTools is the seed's tools entry: the ledger MCP server, auto-approved.
var seedTools = []any{map[string]any{"type": "mcp", "server_label": "ledger", "server_url": "litellm_proxy", "require_approval": "never"}}

// seedBody builds the seed's request body for the endpoint, with the extra
// body fields of the request on top.
func seedBody(r scenario.Request) map[string]any {
	model := requestModel(r)
	body := map[string]any{}
	if !r.Endpoint.InPath() { // gemini names them in the path; the seed's MCP tools entry is LiteLLM's, for OpenAI bodies
		body["model"], body["tools"] = model, seedTools
		if r.Stream {
			body["stream"] = true
		}
	}
	r.Endpoint.SetPrompt(body, r.Prompt)
	maps.Copy(body, r.Body)
	return body
}

// requestModel is the model an app request names.
func requestModel(r scenario.Request) string {
	if r.Model == "" {
		return scenario.DefaultModelGroup
	}
	return r.Model
}

// Client posts app requests to a base URL and reads their answers. It is
// safe for concurrent use.
type Client struct {
	base   string
	client *http.Client
	// header is sent with every request; its values are never recorded.
	header http.Header
	body   func(scenario.Request) map[string]any
}

// Endpoint returns the base URL requests go to and the headers they carry.
func (s *Client) Endpoint() (string, http.Header) { return s.base, s.header }

// Send posts req and reads the whole answer into an Exchange. It returns
// when the answer ended or ctx is done; Start and End are left to the
// caller.
func (s *Client) Send(ctx context.Context, req scenario.Request) history.Exchange {
	x := history.Exchange{Endpoint: string(req.Endpoint), Path: req.Endpoint.Path(requestModel(req), req.Stream), Stream: req.Stream}
	b, err := json.Marshal(s.body(req))
	if err != nil {
		x.TransportError = fmt.Sprintf("encoding the request body: %v", err)
		return x
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+x.Path, bytes.NewReader(b))
	if err != nil {
		x.TransportError = err.Error()
		return x
	}
	hr.Header.Set("Content-Type", "application/json")
	for k, vs := range s.header {
		hr.Header[k] = vs
	}
	for k, v := range req.Headers {
		hr.Header.Set(k, v)
	}
	resp, err := s.client.Do(hr)
	if err != nil {
		x.TransportError = describeTransport(err)
		x.TimedOut = ctx.Err() != nil
		return x
	}
	defer resp.Body.Close()
	x.Status = resp.StatusCode
	body := io.LimitReader(resp.Body, maxAnswerBytes)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		readStream(body, &x)
	} else {
		all, err := io.ReadAll(body)
		x.Body = excerpt(all)
		if json.Valid(all) && gjson.ParseBytes(all).IsObject() {
			noteModel(all, &x)
		}
		if err != nil {
			x.TransportError = describeTransport(err)
		} else {
			x.CleanEnd = true
		}
	}
	if x.TransportError != "" && ctx.Err() != nil {
		x.TimedOut = true
	}
	return x
}

// readStream reads SSE events until the body ends: it counts data chunks and
// error events, notes the terminal event and the response ids. An event the
// stream broke in the middle of counts as far as it came.
func readStream(body io.Reader, x *history.Exchange) {
	events := sse.NewReader(body, maxLineBytes, maxAnswerBytes)
	var kept bytes.Buffer
	seen := map[string]bool{}
	for {
		ev, err := events.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				x.TransportError = describeTransport(err)
			} else {
				x.CleanEnd = true
			}
			break
		}
		for line := range bytes.Lines(ev.Raw) {
			line = bytes.TrimRight(line, "\r\n")
			if len(line) > 0 && kept.Len() < excerptBytes {
				kept.Write(line)
				kept.WriteByte('\n')
			}
		}
		switch {
		case ev.Data != nil:
			classifyData(bytes.TrimSpace(ev.Data), ev.Name, x, seen)
		case isErrorObject(ev.Raw):
			x.ErrorEvents++ // Gemini sends a mid-stream error outside the format
		}
	}
	x.Body = excerpt(kept.Bytes())
}

// classifyData counts one SSE data payload.
func classifyData(data []byte, event string, x *history.Exchange, seen map[string]bool) {
	dialects := dialect.All()
	for _, d := range dialects {
		if d.Sentinel != "" && string(data) == d.Sentinel {
			x.Done = true
			return
		}
	}
	var v map[string]any
	if json.Unmarshal(data, &v) != nil {
		x.DataChunks++
		return
	}
	for _, d := range dialects {
		if d.Failed(event, v) {
			x.ErrorEvents++
			return
		}
	}
	for _, d := range dialects {
		if d.Ends(v) {
			x.Done = true
		}
	}
	x.DataChunks++
	noteModel(data, x)
	if id := recordedString(data, answerIDs); id != "" && !seen[id] {
		seen[id] = true
		x.ResponseIDs = append(x.ResponseIDs, id)
	}
}

// isErrorObject reports whether a block without data is a JSON object
// holding "error": the Gemini API's error in the middle of a stream.
func isErrorObject(raw []byte) bool {
	var v map[string]json.RawMessage
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	_, ok := v["error"]
	return ok
}

// noteModel adds the model an answer or chunk names (answerModels) to
// x.Models, unless already there.
func noteModel(data []byte, x *history.Exchange) {
	if m := recordedString(data, answerModels); m != "" && !slices.Contains(x.Models, m) {
		x.Models = append(x.Models, m)
	}
}

// answerIDs and answerModels are the paths at which an answer or a stream
// event names its id and its model, in every dialect's shape
// (dialect.Recorded), in table order: the app reads an answer in whichever
// shape it has.
var answerIDs, answerModels = recordedPaths()

// recordedPaths returns the paths of dialect.Recorded, each once: the ids'
// and the models'.
func recordedPaths() (ids, models []string) {
	for _, d := range dialect.All() {
		r := d.Recorded
		for _, p := range []string{r.ID, r.StreamID} {
			if !slices.Contains(ids, p) {
				ids = append(ids, p)
			}
		}
		for _, p := range []string{r.Model, r.StreamModel} {
			if !slices.Contains(models, p) {
				models = append(models, p)
			}
		}
	}
	return ids, models
}

// recordedString returns the first non-empty string the JSON object data
// holds at one of paths.
func recordedString(data []byte, paths []string) string {
	for _, p := range paths {
		if r := gjson.GetBytes(data, p); r.Type == gjson.String && r.Str != "" {
			return r.Str
		}
	}
	return ""
}

func excerpt(b []byte) string {
	if len(b) > excerptBytes {
		b = b[:excerptBytes]
	}
	return strings.ToValidUTF8(string(b), "?")
}

func describeTransport(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline exceeded"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected EOF: the answer was cut"
	case errors.As(err, &ne):
		return ne.Error()
	}
	return err.Error()
}
