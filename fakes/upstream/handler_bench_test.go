package upstream

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

// discardWriter is a minimal ResponseWriter for handler benchmarks.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

// BenchmarkHandler measures the fake's own work per scripted chat request,
// without the network.
func BenchmarkHandler(b *testing.B) {
	s, err := New(Config{Script: benchScript, Log: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(benchBody)
	req, _ := http.NewRequest("POST", "/v1/chat/completions", nil)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		clear(w.h)
		s.ServeHTTP(w, req)
	}
}
