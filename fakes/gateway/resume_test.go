package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// killAndResume is a kill of a gateway with a checkpoint after commit_write
// ran, its answer held back, and a resume: a gateway of r's config serves
// one chat request; once the ledger wrote, the checkpoint is copied as a
// SIGKILL would leave it, and a second gateway resumes from the copy. The
// first is then cut off from the app. The app's status is 0: its answer
// never came.
func (r *rig) killAndResume(t *testing.T) observed {
	t.Helper()
	hold := fault.Duration(time.Minute)
	armLedger(t, r, ledger.Fault{Tool: ledger.ToolCommitWrite, Times: fault.Once, Delay: &hold})
	cfg := r.gw.cfg
	cfg.Checkpoint = filepath.Join(r.dir, "checkpoint.jsonl")
	first, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(first)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+pathChat, strings.NewReader(seedBody(pathChat, seedAsk, false, false)))
		req.Header.Set("Authorization", "Bearer "+seedKey)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	if _, err := r.ledger.WaitFor(ctx, "", func(c wire.MCPCounts) bool { return c.Writes >= 1 }); err != nil {
		t.Fatalf("waiting for the write: %v", err)
	}
	b, err := os.ReadFile(cfg.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	snapshot := filepath.Join(r.dir, "checkpoint-at-kill.jsonl")
	if err := os.WriteFile(snapshot, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cancel() // the app goes, as with the gateway it was talking to
	<-sent
	srv.Close()
	if err := first.Close(); err != nil {
		t.Errorf("first gateway Close: %v", err)
	}
	cfg.Checkpoint = snapshot
	resumed, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close()
	turns, err := resumed.Resume(context.Background())
	if err != nil || len(turns) != 1 || turns[0].Err != nil || turns[0].Answer == "" {
		t.Fatalf("Resume = %+v, %v; want one turn ended with an answer", turns, err)
	}
	after, err := ReadCheckpoint(snapshot)
	if err != nil || len(Pending(after)) != 0 {
		t.Fatalf("after the resume the checkpoint holds pending turns %+v (%v); want none", Pending(after), err)
	}
	return r.observe([]int{0}, 0)
}

func TestReadCheckpointIgnoresATornLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoint.jsonl")
	c := &checkpoint{path: path}
	for _, r := range []CheckpointRecord{
		{Turn: "a", Path: pathChat, Body: []byte(`{}`)},
		{Turn: "a", Call: &CheckpointCall{Index: 1, Tool: "commit_write"}},
		{Turn: "a", Call: &CheckpointCall{Index: 1, Tool: "commit_write", Output: "recorded", Done: true}},
		{Turn: "b", Path: pathChat, Body: []byte(`{}`)},
		{Turn: "b", End: true, Answer: "done"},
	} {
		if err := c.write(r); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"turn":"a","end":tr`)
	f.Close()
	turns, err := ReadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	p := Pending(turns)
	if len(p) != 1 || p[0].ID != "a" || !p[0].Calls[1].Done || p[0].Calls[1].Output != "recorded" {
		t.Fatalf("pending = %+v; want turn a with its call 1 done", p)
	}
}
