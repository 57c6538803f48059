package gateway

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
)

// CheckpointRecord is one line of the gateway's checkpoint file (JSON
// lines, appended and synced one by one). A turn is one app request: its
// begin record holds the request, its call records the tool calls of the
// turn (Sent before a call goes to the MCP server, then its Output), its end
// record the answer. A turn without an end record is pending: a gateway
// resumed after a kill continues it (Gateway.Resume).
type CheckpointRecord struct {
	// Turn identifies the turn in the file.
	Turn string `json:"turn"`
	// Path and Body are the app request of a begin record.
	Path string          `json:"path,omitempty"`
	Body json.RawMessage `json:"body,omitempty"`
	// Call is a tool call of the turn; nil on begin and end records.
	Call *CheckpointCall `json:"call,omitempty"`
	// End marks the turn's end; Answer is its final text, Error what
	// failed instead.
	End    bool   `json:"end,omitempty"`
	Answer string `json:"answer,omitempty"`
	Error  string `json:"error,omitempty"`
	// Resumed marks the end of a turn a resumed gateway finished.
	Resumed bool `json:"resumed,omitempty"`
}

// CheckpointCall is a tool call of a turn: the Index-th call the model asked
// for in it (from 1), sent to the MCP server, and, once answered, what the
// model was told (Output, Done set).
type CheckpointCall struct {
	Index  int    `json:"index"`
	Tool   string `json:"tool"`
	Output string `json:"output,omitempty"`
	Done   bool   `json:"done,omitempty"`
}

// Turn is a turn as a checkpoint file holds it.
type Turn struct {
	ID   string
	Path string
	Body json.RawMessage
	// Calls are the turn's checkpointed calls by index: sent, and with
	// their output once Done.
	Calls map[int]CheckpointCall
	// End is the turn's end record, nil while it is pending.
	End *CheckpointRecord
}

// ReadCheckpoint returns the turns of the checkpoint file at path, in the
// order they began; none when the file does not exist. A torn last line (a
// kill while it was written) is ignored.
func ReadCheckpoint(path string) ([]Turn, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the checkpoint: %w", err)
	}
	defer f.Close()
	var out []Turn
	at := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxAppBody+1<<20)
	for sc.Scan() {
		var r CheckpointRecord
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		i, ok := at[r.Turn]
		if !ok {
			at[r.Turn] = len(out)
			i = len(out)
			out = append(out, Turn{ID: r.Turn, Calls: map[int]CheckpointCall{}})
		}
		t := &out[i]
		switch {
		case r.Body != nil:
			t.Path, t.Body = r.Path, r.Body
		case r.Call != nil:
			t.Calls[r.Call.Index] = *r.Call
		case r.End:
			t.End = &r
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the checkpoint %s: %w", path, err)
	}
	return out, nil
}

// Pending returns the turns of turns that have begun and not ended.
func Pending(turns []Turn) []Turn {
	var out []Turn
	for _, t := range turns {
		if t.End == nil && t.Body != nil {
			out = append(out, t)
		}
	}
	return out
}

// checkpoint appends records to the checkpoint file; nil keeps none. Its
// methods are safe for concurrent use.
type checkpoint struct {
	mu   sync.Mutex
	path string
}

// write appends r and syncs the file, so that a kill right after loses
// nothing written.
func (c *checkpoint) write(r CheckpointRecord) error {
	if c == nil {
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := os.OpenFile(c.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("writing the checkpoint: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("writing the checkpoint: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("writing the checkpoint: %w", err)
	}
	return f.Close()
}
