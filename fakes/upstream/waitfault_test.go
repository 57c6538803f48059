package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// waitBound bounds every wait of these tests.
const waitBound = time.Minute

// WaitFault wakes when a stream reached its fault's point, every event
// before it flushed: the first event of a stream stalled after one is at
// the client by then. It fails for a context that ends first and for a
// fault no longer armed.
func TestWaitFaultReachedPoint(t *testing.T) {
	s, srv, tok, _ := serveArmed(t, "{stall: {after: events, events: 1, forever: true}}")
	id := s.FaultReports(tok)[0].ID
	reached := func(p FaultProgress) bool { return p.Reached >= 1 }
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	if p, err := s.WaitFault(done, tok, id, reached); err == nil || p != (FaultProgress{}) {
		t.Fatalf("before any request: %+v, %v; want nothing reached and the context's error", p, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"model": "m", "stream": true,
		"messages": []map[string]string{{"role": "user", "content": prompt(tok)}}})
	req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/chat/completions", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	type answer struct {
		resp *http.Response
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		answered <- answer{resp, err}
	}()
	p, err := s.WaitFault(ctx, tok, id, reached)
	if err != nil || p != (FaultProgress{Matched: 1, Fired: 1, Reached: 1}) {
		t.Fatalf("WaitFault = %+v, %v; want matched, fired (a stall forever is recorded first) and reached once", p, err)
	}
	a := <-answered // the headers came before the first event
	if a.err != nil {
		t.Fatal(a.err)
	}
	defer a.resp.Body.Close()
	line, err := bufio.NewReader(a.resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: {") {
		t.Fatalf("first line %q, %v; want the first event, flushed before the point", line, err)
	}

	s.RemoveFault(id)
	if _, err := s.WaitFault(ctx, tok, id, reached); err == nil || !strings.Contains(err.Error(), "not armed") {
		t.Errorf("a removed fault: %v, want not armed", err)
	}
}

// WaitFault wakes as a request matches: a follow-up held by a delay is
// matched (and the hold has begun) while the client still waits.
func TestWaitFaultMatched(t *testing.T) {
	s, srv, tok, _ := serveArmed(t, "{delay: 10m}")
	id := s.FaultReports(tok)[0].ID
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"model": "m", "messages": []map[string]string{{"role": "user", "content": prompt(tok)}}})
	req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/chat/completions", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	answered := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	p, err := s.WaitFault(ctx, tok, id, func(p FaultProgress) bool { return p.Matched >= 1 })
	if err != nil || p.Matched != 1 || p.Reached != 0 {
		t.Fatalf("WaitFault = %+v, %v; want matched once, no stream point", p, err)
	}
	select {
	case err := <-answered:
		t.Fatalf("the held request was answered (%v) before the wait ended", err)
	default:
	}
	cancel() // the client leaves; the delay ends with it
	<-answered
}
