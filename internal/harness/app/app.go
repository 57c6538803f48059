// Package app is the app's side of a scenario run: a Client posts a
// scenario's app request (the seed's body for its endpoint, a target's own
// body fields on top) to a target's base URL and reads the answer, plain or
// streamed, into a history.Exchange. The target model (package target)
// holds one per instance that apps reach over HTTP.
package app

import (
	"maps"
	"net/http"

	"github.com/replaycheck/replaycheck/internal/harness/scenario"
)

// New returns a Client that posts to base (without /v1) with header on
// every request; nil header sends none. fields are, per endpoint, top-level
// fields set on the seed's body (a nil value removes the field); the
// request's own body fields go on top. The caller closes the Client.
func New(base string, header http.Header, fields map[scenario.Endpoint]map[string]any) *Client {
	return &Client{
		base:   base,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		header: header,
		body: func(r scenario.Request) map[string]any {
			b := seedBody(r)
			for k, v := range fields[r.Endpoint] {
				if v == nil {
					delete(b, k)
				} else {
					b[k] = v
				}
			}
			maps.Copy(b, r.Body)
			return b
		},
	}
}

// Close closes the Client's idle connections.
func (s *Client) Close() { s.client.CloseIdleConnections() }

// ExcerptEnd returns the end of s, as much as a history keeps of an answer
// body: a client run's stdout is its answer.
func ExcerptEnd(s string) string {
	if len(s) > excerptBytes {
		s = s[len(s)-excerptBytes:]
	}
	return excerpt([]byte(s))
}
