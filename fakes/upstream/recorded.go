package upstream

import (
	"github.com/tidwall/gjson"

	"github.com/replaycheck/replaycheck/fakes/upstream/cassette"
	api "github.com/replaycheck/replaycheck/internal/dialect"
)

// RecordedCalls returns the names of the tool calls a recorded answer
// makes, in order, as the provider named them (the names the client
// offered); nil for an answer without calls, an error answer, or a dialect
// the fake does not know.
func RecordedCalls(e *cassette.Entry) []string {
	_, calls := recordedAnswer(e.Request.Dialect, &e.Answer)
	return calls
}

// recordedAnswer reads a recorded answer of dialect: its response id (the
// first one a stream names) and the names of its tool calls, at the paths
// internal/dialect gives (Dialect.Recorded).
func recordedAnswer(dialect string, a *cassette.Answer) (id string, calls []string) {
	if a.Status != 200 {
		return "", nil
	}
	d, ok := api.ByName(dialect)
	if !ok {
		return "", nil
	}
	// Paths in one JSON document: the answer's id, and the names of its
	// calls (gjson queries giving an array, or one name).
	idPath, callsPath := d.Recorded.ID, d.Recorded.Calls
	if a.Stream() {
		idPath, callsPath = d.Recorded.StreamID, d.Recorded.StreamCalls
	}
	read := func(doc string) {
		if !gjson.Valid(doc) {
			return
		}
		if id == "" {
			id = gjson.Get(doc, idPath).String()
		}
		gjson.Get(doc, callsPath).ForEach(func(_, v gjson.Result) bool {
			if v.Str != "" {
				calls = append(calls, v.Str)
			}
			return true
		})
	}
	if !a.Stream() {
		read(a.Body)
		return id, calls
	}
	for _, ev := range a.Events {
		read(ev.Data)
	}
	return id, calls
}
