package upstream

import (
	"context"
	"testing"
)

func TestServeModelFault(t *testing.T) {
	const served = "gpt-fallback-mini"
	f := mustFault(t, `{on: initial, serve_model: `+served+`}`)
	tests := []struct {
		name string
		// call makes one request and returns the model ids the SDK read
		// from the answer.
		call func(ctx context.Context, url, tok string) ([]string, error)
		want []string
	}{
		{"chat", func(ctx context.Context, url, tok string) ([]string, error) {
			c, err := openaiClient(url).Chat.Completions.New(ctx, chatParams(tok, "commit_write"))
			if err != nil {
				return nil, err
			}
			return []string{c.Model}, nil
		}, []string{served}},
		{"chat stream", func(ctx context.Context, url, tok string) ([]string, error) {
			s := openaiClient(url).Chat.Completions.NewStreaming(ctx, chatParams(tok, "commit_write"))
			var got []string
			for s.Next() {
				got = appendNew(got, s.Current().Model)
			}
			return got, s.Err()
		}, []string{served}},
		{"responses", func(ctx context.Context, url, tok string) ([]string, error) {
			r, err := openaiClient(url).Responses.New(ctx, responsesParams(tok, functionTool("commit_write")))
			if err != nil {
				return nil, err
			}
			return []string{string(r.Model)}, nil
		}, []string{served}},
		{"responses stream", func(ctx context.Context, url, tok string) ([]string, error) {
			s := openaiClient(url).Responses.NewStreaming(ctx, responsesParams(tok, functionTool("commit_write")))
			var got []string
			for s.Next() {
				got = appendNew(got, string(s.Current().Response.Model))
			}
			return got, s.Err()
		}, []string{served}},
		{"messages", func(ctx context.Context, url, tok string) ([]string, error) {
			m, err := anthropicClient(url).Messages.New(ctx, messagesParams(tok, "commit_write"))
			if err != nil {
				return nil, err
			}
			return []string{string(m.Model)}, nil
		}, []string{served}},
		{"messages stream", func(ctx context.Context, url, tok string) ([]string, error) {
			s := anthropicClient(url).Messages.NewStreaming(ctx, messagesParams(tok, "commit_write"))
			var got []string
			for s.Next() {
				got = appendNew(got, string(s.Current().Message.Model))
			}
			return got, s.Err()
		}, []string{served}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, srv, _ := newFake(t, Config{})
			tok := token(t)
			if err := s.Arm(tok, nil, []Fault{f}); err != nil {
				t.Fatal(err)
			}
			got, err := tt.call(context.Background(), srv.URL, tok)
			if err != nil {
				t.Fatal(err)
			}
			diff(t, "models in the answer", tt.want, got)
			recs := s.Requests(tok)
			if len(recs) != 1 {
				t.Fatalf("got %d records, want 1", len(recs))
			}
			diff(t, "served model", served, recs[0].ServedModel)
			if recs[0].Model == served {
				t.Errorf("requested model %q is the served one; the test proves nothing", recs[0].Model)
			}
			diff(t, "fired", 1, s.FaultReports(tok)[0].Fired)
		})
	}
}

func TestServedModelWithoutFault(t *testing.T) {
	s, srv, _ := newFake(t, Config{})
	tok := token(t)
	c, err := openaiClient(srv.URL).Chat.Completions.New(context.Background(), chatParams(tok, "commit_write"))
	if err != nil {
		t.Fatal(err)
	}
	recs := s.Requests(tok)
	diff(t, "served model", c.Model, recs[0].ServedModel)
	diff(t, "requested model", c.Model, recs[0].Model)
}

// appendNew appends m to ms unless it is empty or already the last one.
func appendNew(ms []string, m string) []string {
	if m == "" || len(ms) > 0 && ms[len(ms)-1] == m {
		return ms
	}
	return append(ms, m)
}
