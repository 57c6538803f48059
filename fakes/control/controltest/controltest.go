// Package controltest holds every exchange with the control API to its
// OpenAPI description (control.Spec), for tests: Validate wraps the API's
// handler, so whatever client a test uses (Go, curl, a Python or TypeScript
// program) is checked, and no test can bypass it. It takes the description
// as bytes, so that the control package's own tests can use it.
//
// It serves the replaycheck command and its tests; it is not an API and may
// change in any release (replaycheck's Go API is replaychecktest and the
// fakes it arms: fakes/upstream, fakes/ledger, fakes/fault).
package controltest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/goccy/go-yaml"

	"github.com/replaycheck/replaycheck/internal/nesting"
)

// Load returns src (control.Spec; the first one given is the one kept)
// loaded and validated as an OpenAPI 3.1 document, and a router over its
// operations on any server.
func Load(src []byte) (*openapi3.T, routers.Router, error) {
	loadOnce.Do(func() {
		for _, t := range []string{"application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"} {
			openapi3filter.RegisterBodyDecoder(t, decodeYAML)
		}
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(src)
		if err != nil {
			loadErr = fmt.Errorf("loading openapi.yaml: %w", err)
			return
		}
		if !doc.IsOpenAPI31OrLater() {
			loadErr = fmt.Errorf("openapi.yaml says openapi %s; want 3.1", doc.OpenAPI)
			return
		}
		if err := doc.Validate(context.Background()); err != nil {
			loadErr = fmt.Errorf("openapi.yaml is not a valid OpenAPI document: %w", err)
			return
		}
		// Route on the path alone: tests serve on ports of their own.
		routed := *doc
		routed.Servers = nil
		router, err := legacy.NewRouter(&routed)
		if err != nil {
			loadErr = fmt.Errorf("routing openapi.yaml: %w", err)
			return
		}
		spec, specRouter = doc, router
	})
	return spec, specRouter, loadErr
}

var (
	loadOnce   sync.Once
	spec       *openapi3.T
	specRouter routers.Router
	loadErr    error
)

// decodeYAML decodes a YAML request body as its JSON equivalent would be.
func decodeYAML(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	src, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSON(src)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(js, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// Validate wraps h, the control API's handler described by src
// (control.Spec), so that every exchange with
// it is checked against the description; a mismatch is a t.Errorf naming
// the exchange:
//   - an answer must be one the operation documents (status, headers, body);
//   - a request the description refuses must be refused (4xx);
//   - a path or method the description lacks must get a Problem (404, or
//     405 whose Allow lists exactly the path's documented methods).
func Validate(t testing.TB, src []byte, h http.Handler) http.Handler {
	t.Helper()
	doc, router, err := Load(src)
	if err != nil {
		t.Fatal(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())

		check := r.Clone(context.Background())
		check.Body = io.NopCloser(bytes.NewReader(body))
		if err := exchange(doc, router, check, body, rec.Result()); err != nil {
			t.Errorf("control API exchange %s %s (%.200s) → %d %.300s: against openapi.yaml: %v", r.Method, r.URL, body, rec.Code, rec.Body, err)
		}
	})
}

// exchange checks one request and its answer against the description.
func exchange(doc *openapi3.T, router routers.Router, req *http.Request, reqBody []byte, res *http.Response) error {
	resBody, _ := io.ReadAll(res.Body)
	route, params, err := router.FindRoute(req)
	if err != nil {
		return undocumented(doc, req, res, resBody, err)
	}
	opts := &openapi3filter.Options{
		IncludeResponseStatus: true,
		MultiError:            true,
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
	var reqErr error
	if deep := nesting.YAML(reqBody, nesting.Max); deep != nil {
		// Too deep to hand to a parser (as the API says too): the body
		// counts as refused, and the rest of the request is checked.
		reqErr = deep
		opts.ExcludeRequestBody = true
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			reqErr = errors.Join(reqErr, err)
		}
		opts.ExcludeRequestBody = false
	} else {
		reqErr = openapi3filter.ValidateRequest(context.Background(), in)
	}
	if reqErr != nil && (res.StatusCode < 400 || res.StatusCode >= 500) {
		return fmt.Errorf("the description refuses the request (%v), but the API answered %d", reqErr, res.StatusCode)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: res.StatusCode, Header: res.Header, Options: opts}
	out.SetBodyBytes(resBody)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return fmt.Errorf("answer: %w", err)
	}
	return nil
}

// pathItem returns the description's path that path matches, or nil.
func pathItem(doc *openapi3.T, path string) *openapi3.PathItem {
	for tmpl, item := range doc.Paths.Map() {
		re := "^" + regexp.MustCompile(`\\\{[^}]+\}`).ReplaceAllString(regexp.QuoteMeta(tmpl), "[^/]+") + "$"
		if regexp.MustCompile(re).MatchString(path) {
			return item
		}
	}
	return nil
}

// undocumented checks the answer to a request no operation describes: a
// Problem with 404 for an unknown path, 405 with Allow for a wrong method.
func undocumented(doc *openapi3.T, req *http.Request, res *http.Response, body []byte, routeErr error) error {
	var p struct {
		Error  string `json:"error"`
		Line   int    `json:"line"`
		Column int    `json:"column"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil || p.Error == "" {
		return fmt.Errorf("no operation for the request (%v), and the answer is not a Problem: %v", routeErr, err)
	}
	item := pathItem(doc, req.URL.Path)
	switch {
	case res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden:
		// refused before routing
	case item != nil:
		var want []string
		for m := range item.Operations() {
			want = append(want, m)
		}
		slices.Sort(want)
		if got := res.Header.Get("Allow"); res.StatusCode != http.StatusMethodNotAllowed || got != strings.Join(want, ", ") {
			return fmt.Errorf("a method the description lacks got %d with Allow %q; want 405 with Allow %q", res.StatusCode, got, strings.Join(want, ", "))
		}
	case res.StatusCode != http.StatusNotFound:
		return fmt.Errorf("a path the description lacks got %d; want 404", res.StatusCode)
	}
	return nil
}
