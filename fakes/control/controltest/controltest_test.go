package controltest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/fakes/control"
)

// recorder is a testing.TB that keeps what Validate reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestValidateCatches: an answer outside the description, an accepted
// request the description refuses, and a wrong method without 405 and Allow
// are each reported; a documented exchange is not.
func TestValidateCatches(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		status                   int
		answer                   string
		header                   map[string]string
		want                     string // "" = no report
	}{
		{name: "documented", method: "GET", path: "health", status: 200, answer: `{"status":"ok"}`},
		{name: "a field the description lacks", method: "GET", path: "health", status: 200, answer: `{"status":"ok","extra":1}`, want: "answer"},
		{name: "a status the description lacks", method: "GET", path: "counts", status: 418, answer: `{"error":"teapot"}`, want: "answer"},
		{name: "a wrong type", method: "GET", path: "faults", status: 200, answer: `{"faults":[{"id":"upstream-1","run":"","upstream":{},"matched":"one","fired":0,"runs":[]}]}`, want: "answer"},
		{name: "a bad body accepted", method: "POST", path: "faults", body: `{"upstream":[{"on":"later"}]}`, status: 201, answer: `{"faults":[]}`, want: "refuses the request"},
		{name: "a bad body refused", method: "POST", path: "faults", body: `{"upstream":[{"on":"later"}]}`, status: 400, answer: `{"error":"on: later"}`},
		{name: "a wrong method without Allow", method: "PATCH", path: "faults", status: 405, answer: `{"error":"no"}`, want: "Allow"},
		{name: "a wrong method with Allow", method: "PATCH", path: "faults", status: 405, answer: `{"error":"no"}`, header: map[string]string{"Allow": "DELETE, GET, POST, PUT"}},
		{name: "an unknown path", method: "GET", path: "nope", status: 404, answer: `{"error":"no"}`},
		{name: "an unknown path answered 200", method: "GET", path: "nope", status: 200, answer: `{"error":"no"}`, want: "want 404"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			h := Validate(rec, control.Spec, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.answer)
			}))
			req := httptest.NewRequest(tt.method, control.Prefix+tt.path, strings.NewReader(tt.body))
			if tt.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			h.ServeHTTP(httptest.NewRecorder(), req)
			got := strings.Join(rec.errs, "\n")
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("reported %q, want %q", got, tt.want)
			}
		})
	}
}
