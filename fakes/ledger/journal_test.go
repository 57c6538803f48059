package ledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/fulldisk"
	"github.com/replaycheck/replaycheck/internal/linefile"
	"github.com/replaycheck/replaycheck/internal/wire"
)

func TestJournalGroupsAndNumbersLines(t *testing.T) {
	for _, name := range []string{"file", "memory"} {
		t.Run(name, func(t *testing.T) {
			path := ""
			if name == "file" {
				path = filepath.Join(t.TempDir(), "ledger.txt")
			}
			j, err := openJournal(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			const n = 500
			nums := make([]int, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					k, err := j.append("", fmt.Sprintf("line %d", i))
					if err != nil {
						t.Errorf("append %d: %v", i, err)
					}
					nums[i] = k
				}()
			}
			wg.Wait()
			lines := j.snapshot()
			if len(lines) != n {
				t.Fatalf("%d lines, want %d", len(lines), n)
			}
			// Each append's number points at its own line.
			for i, k := range nums {
				if lines[k-1] != fmt.Sprintf("line %d", i) {
					t.Errorf("append %d got line %d = %q", i, k, lines[k-1])
				}
			}
			slices.Sort(nums)
			for i, k := range nums {
				if k != i+1 {
					t.Fatalf("line numbers are not 1..%d: %v", n, nums)
				}
			}
			if err := j.close(); err != nil {
				t.Fatal(err)
			}
			if path != "" {
				if diff := cmp.Diff(lines, fileLines(t, path)); diff != "" {
					t.Errorf("file differs from memory (-memory +file):\n%s", diff)
				}
			}
			if _, err := j.append("", "late"); !errors.Is(err, errClosed) {
				t.Errorf("append after close = %v, want errClosed", err)
			}
			if err := j.close(); err != nil {
				t.Errorf("second close: %v", err)
			}
		})
	}
}

// TestJournalWriteErrorNotAcknowledged: a write that cannot be synced is an
// error for its caller and never shows up as a line.
func TestJournalWriteErrorNotAcknowledged(t *testing.T) {
	j, err := openJournal(filepath.Join(t.TempDir(), "ledger.txt"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.append("", "ok"); err != nil {
		t.Fatal(err)
	}
	j.file.Close() // every later write fails
	if _, err := j.append("", "lost"); err == nil {
		t.Error("append to a broken file succeeded")
	}
	if diff := cmp.Diff([]string{"ok"}, j.snapshot()); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	_ = j.close()
}

func TestOneLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"alpha", "alpha"},
		{"a\nb", `a\nb`},
		{"a\r\nb", `a\r\nb`},
	}
	for _, tt := range tests {
		if got := oneLine(tt.in); got != tt.want {
			t.Errorf("oneLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestWriteThatCannotBePersisted: on a full disk (/dev/full) the write
// fails the tool call visibly, with an isError result saying nothing was
// recorded, and counts as a write failure, not a write.
func TestWriteThatCannotBePersisted(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	for _, tool := range []string{ToolCommitWrite, ToolCommitWriteKeyed} {
		t.Run(tool, func(t *testing.T) {
			s, url := newLedger(t, Config{Path: "/dev/full"})
			cs := connect(t, url, "")
			args := map[string]any{"entry": "alpha"}
			if tool == ToolCommitWriteKeyed {
				args["idempotency_key"] = "k1"
			}
			res, err := callTool(t, cs, tool, args)
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || !strings.Contains(text(res), "ledger write failed, nothing was recorded") || !strings.Contains(text(res), "no space left on device") {
				t.Errorf("result isError=%v %q, want an isError result naming the failure", res.IsError, text(res))
			}
			got := s.Total()
			if got.Writes != 0 || got.WriteFailures != 1 {
				t.Errorf("writes %d, write failures %d; want 0 and 1", got.Writes, got.WriteFailures)
			}
			var details []string
			for _, e := range s.Events("") {
				if e.Kind == wire.MCPFault || e.Kind == wire.MCPResult {
					details = append(details, string(e.Kind)+":"+e.Fault)
				}
			}
			if want := []string{"fault:write_failed", "result:write_failed"}; !slices.Equal(details, want) {
				t.Errorf("events %q, want %q", details, want)
			}
			if len(s.Entries()) != 0 {
				t.Errorf("entries %q, want none", s.Entries())
			}
		})
	}
}

// TestLedgerFileOnAFullDisk: a commit_write the disk cannot take whole
// answers isError "nothing was recorded" and leaves the ledger file exactly
// as it was — no half line for the next write to be glued to — so once space
// comes back the next write is a line of its own, and the file, the entries
// and the counts agree.
func TestLedgerFileOnAFullDisk(t *testing.T) {
	if !fulldisk.Child(t, 256) {
		return
	}
	path := filepath.Join(t.TempDir(), "ledger.txt")
	s, url := newLedger(t, Config{Path: path})
	cs := connect(t, url, "")
	commit := func(entry string) *mcp.CallToolResult {
		t.Helper()
		res, err := callTool(t, cs, ToolCommitWrite, map[string]any{"entry": entry})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := strings.Repeat("a", 99)
	if res := commit(first); res.IsError {
		t.Fatalf("first write: %q", text(res))
	}
	// 100 bytes are written, 156 fit: 200 bytes do not.
	lost := strings.Repeat("b", 199)
	if res := commit(lost); !res.IsError || !strings.Contains(text(res), "nothing was recorded") || !strings.Contains(text(res), "file too large") {
		t.Errorf("write past the limit: isError=%v %q, want isError saying nothing was recorded and why", res.IsError, text(res))
	}
	if got := fileLines(t, path); !slices.Equal(got, []string{first}) {
		t.Errorf("after the failed write the file holds %q, want only %q", got, first)
	}
	fulldisk.Free(t)
	if res := commit("c"); res.IsError {
		t.Fatalf("write once space came back: %q", text(res))
	}
	want := []string{first, "c"}
	if got := fileLines(t, path); !slices.Equal(got, want) {
		t.Errorf("file %q, want %q", got, want)
	}
	if got := s.Entries(); !slices.Equal(got, want) {
		t.Errorf("entries %q, want %q", got, want)
	}
	if c := s.Total(); c.Writes != 2 || c.WriteFailures != 1 {
		t.Errorf("writes %d, write failures %d; want 2 and 1", c.Writes, c.WriteFailures)
	}
	if l := s.File().Loss(); l.Written != 2 || l.Lost != 1 {
		t.Errorf("file loss %+v, want 2 lines written, 1 lost", l)
	}
}

// TestJournalSharedFile: journals that share one open file (run --ledger,
// one pair of fakes per run) append every acknowledged line to it, each
// whole, and closing one leaves the file open for the others.
func TestJournalSharedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.txt")
	f, err := linefile.Open(path, linefile.Options{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	const journals, n = 3, 200
	js := make([]*journal, journals)
	for i := range js {
		if js[i], err = openJournal("", f); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var want []string
	for i, j := range js {
		for k := range n {
			line := fmt.Sprintf("run%d line %d", i, k)
			want = append(want, line)
			wg.Go(func() {
				if _, err := j.append(fmt.Sprintf("run%d", i), line); err != nil {
					t.Errorf("append %q: %v", line, err)
				}
			})
		}
	}
	wg.Wait()
	if err := js[0].close(); err != nil {
		t.Fatal(err)
	}
	if _, err := js[1].append("run1", "after a close"); err != nil {
		t.Fatalf("append after another journal closed: %v", err)
	}
	want = append(want, "after a close")
	for _, j := range js[1:] {
		if err := j.close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got := fileLines(t, path)
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shared file (-want +got):\n%s", diff)
	}
}
