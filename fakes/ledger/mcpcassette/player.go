package mcpcassette

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Player finds the recorded answer of a tools/call: the recorded calls of
// the same tool with the same arguments (as Arguments keys them) are served
// in cassette order, one per call; once each has been served the last is
// served again, so a replayed call answers as the server answered it the
// last time it was recorded. It is safe for concurrent use.
type Player struct {
	c      *Cassette
	mu     sync.Mutex
	served map[string]int // per call key: how many it has served
}

// NewPlayer returns a Player of c, serving its calls from the first.
func NewPlayer(c *Cassette) *Player {
	return &Player{c: c, served: map[string]int{}}
}

// Find returns the recorded call answering tool with args (keyed by
// Arguments) and where it was read, or a *MissError when none matches.
func (p *Player) Find(tool string, args json.RawMessage) (Call, Source, error) {
	key := callKey(tool, args)
	p.mu.Lock()
	defer p.mu.Unlock()
	var matches []int
	for i := range p.c.Calls {
		if callKey(p.c.Calls[i].Name, p.c.Calls[i].Arguments) == key {
			matches = append(matches, i)
		}
	}
	if len(matches) == 0 {
		return Call{}, Source{}, p.miss(tool, args)
	}
	n := p.served[key]
	p.served[key] = n + 1
	i := matches[min(n, len(matches)-1)]
	return p.c.Calls[i], p.c.Sources[i], nil
}

// Answer returns the recorded answer as a run with token gets it
// (cassette.TokenPlaceholder replaced by token, unless token is ""),
// sharing nothing with c: its result, or its JSON-RPC error.
func (c Call) Answer(token string) (*mcp.CallToolResult, *jsonrpc.Error, error) {
	if c.Error != nil {
		e := &jsonrpc.Error{}
		if err := copyWithToken(e, c.Error, token); err != nil {
			return nil, nil, err
		}
		return nil, e, nil
	}
	res := &mcp.CallToolResult{}
	if err := copyWithToken(res, c.Result, token); err != nil {
		return nil, nil, err
	}
	return res, nil, nil
}

func callKey(tool string, args json.RawMessage) string { return tool + "\x00" + string(args) }

// MissError is a tools/call no recorded call matches. It names the call and
// the closest recorded call of the same tool.
type MissError struct {
	// Tool and Arguments are the call that missed (arguments as Arguments
	// keys them: secrets scrubbed).
	Tool      string
	Arguments json.RawMessage
	// Path is the cassette's file or directory.
	Path string
	// Calls is the number of recorded calls searched, and Recorded the
	// recorded calls of Tool.
	Calls, Recorded int
	// Closest is the source of the recorded call of Tool whose arguments
	// are closest, and ClosestArguments its arguments; zero when Tool was
	// never called in the recording.
	Closest          Source
	ClosestArguments json.RawMessage
}

func (e *MissError) Error() string {
	head := fmt.Sprintf("no recorded answer for tools/call %s %s in the MCP cassette %s, which holds %s", e.Tool, e.Arguments, e.Path, count(e.Calls, "call"))
	if e.Recorded == 0 {
		return head + "; " + e.Tool + " was never called in the recording"
	}
	return fmt.Sprintf("%s; %s of %s, all with other arguments, the closest %s: %s", head, count(e.Recorded, "call"), e.Tool, e.Closest, e.ClosestArguments)
}

// count says n things: "1 call", "2 calls".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// miss builds the MissError of a call. p.mu must be held.
func (p *Player) miss(tool string, args json.RawMessage) *MissError {
	e := &MissError{Tool: tool, Arguments: args, Path: p.c.Path, Calls: len(p.c.Calls)}
	best := -1
	for i, c := range p.c.Calls {
		if c.Name != tool {
			continue
		}
		e.Recorded++
		if d := distance(args, c.Arguments); best < 0 || d < best {
			best, e.Closest, e.ClosestArguments = d, p.c.Sources[i], c.Arguments
		}
	}
	return e
}

// distance scores how far two canonical argument objects are apart: the
// bytes outside their longest common prefix and suffix.
func distance(a, b []byte) int {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	a, b = a[pre:], b[pre:]
	suf := 0
	for suf < len(a) && suf < len(b) && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	return len(a) + len(b) - 2*suf
}
