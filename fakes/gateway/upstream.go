package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Read limits.
const (
	maxAppBody      = 4 << 20  // one app request
	maxUpstreamBody = 16 << 20 // one non-streamed model answer
	maxErrorBody    = 64 << 10 // the part of an error body the gateway keeps
	maxSSELine      = 4 << 20  // one server-sent event line
)

// upstreamError is a failed model API call: an HTTP error status, a transport
// failure (Status 0) or a stream that ended early.
type upstreamError struct {
	// Status is the upstream's HTTP status, or 0 when no status arrived or a
	// stream broke after its status.
	Status int
	// Header is the error response's header (Retry-After, x-should-retry).
	Header http.Header
	// Body is the start of the error body.
	Body []byte
	// Message is error.message of a JSON error body, or a description of
	// the transport failure.
	Message string
	// Type is error.type of a JSON error body.
	Type string
	// Err is the transport error, if any.
	Err error
}

func (e *upstreamError) Error() string {
	if e.Status == 0 {
		return "model API connection failed: " + e.Message
	}
	return fmt.Sprintf("model API answered %d: %s", e.Status, e.Message)
}

func (e *upstreamError) Unwrap() error { return e.Err }

// connectionFailure wraps a transport error of a model API call.
func connectionFailure(what string, err error) *upstreamError {
	return &upstreamError{Message: what + ": " + err.Error(), Err: err}
}

// postUpstream sends one model API call and returns the open response on a
// 2xx status; anything else is an *upstreamError. The caller closes the body.
func (g *Gateway) postUpstream(ctx context.Context, path string, body []byte, stream bool) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.cfg.Upstream+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("building model API request %s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	resp, err := g.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, connectionFailure("POST "+path, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	errBody, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	ue := &upstreamError{Status: resp.StatusCode, Header: resp.Header.Clone(), Body: bytes.TrimSpace(errBody)}
	var shape struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	if json.Unmarshal(errBody, &shape) == nil && shape.Error.Message != "" {
		ue.Message, ue.Type = shape.Error.Message, shape.Error.Type
	} else {
		ue.Message = strings.TrimSpace(string(ue.Body))
		if ue.Message == "" {
			ue.Message = http.StatusText(resp.StatusCode)
		}
	}
	return nil, ue
}

// callModel sends one non-streamed model API call and returns its body.
func (g *Gateway) callModel(ctx context.Context, path string, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.UpstreamTimeout)
	defer cancel()
	resp, err := g.postUpstream(ctx, path, body, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxUpstreamBody+1))
	if err != nil {
		return nil, connectionFailure("reading the answer of POST "+path, err)
	}
	if len(out) > maxUpstreamBody {
		return nil, &upstreamError{Status: http.StatusBadGateway, Message: fmt.Sprintf("the answer of POST %s exceeds %d bytes", path, maxUpstreamBody)}
	}
	return out, nil
}

// badAnswer is a 2xx model answer the gateway cannot use.
func badAnswer(path string, err error) *upstreamError {
	return &upstreamError{Status: http.StatusBadGateway, Message: fmt.Sprintf("the answer of POST %s is not usable: %v", path, err), Err: err}
}

// isContextErr reports whether err is a context cancellation or deadline.
func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
