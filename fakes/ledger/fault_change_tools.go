package ledger

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/invopop/jsonschema"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// ChangeTools lets the tool run, then changes the server's tool list before
// the call is answered: Remove takes a tool away, Rename offers a tool under
// another name (To), Add offers a new tool that works like an existing one
// (Like, commit_write when unset). The change goes through the SDK (its
// AddTool and RemoveTools), which sends every session
// notifications/tools/list_changed (at 2026-07-28, on each
// subscriptions/listen stream that asked for it); the answer waits
// (bounded) until the calling session's notification went out and it
// listed the tools again (at 2026-07-28, where a call has no session, the
// run's), so a client has it before it can make its next request. The
// change is the server's, for every session and run, and lasts until Reset. A tools/call of a tool the server no longer
// offers gets the SDK's "unknown tool" error and runs nothing.
type ChangeTools struct {
	// Remove names the tool to take away.
	Remove string `json:"remove,omitempty" yaml:"remove,omitempty" jsonschema:"pattern=^[A-Za-z0-9_.-]+$,maxLength=64" jsonschema_description:"Take this tool away (calls of it then get the MCP unknown-tool error)."`
	// Rename names the tool to offer under the name To instead.
	Rename string `json:"rename,omitempty" yaml:"rename,omitempty" jsonschema:"pattern=^[A-Za-z0-9_.-]+$,maxLength=64" jsonschema_description:"Offer this tool under the name in to instead (calls of the old name then get the MCP unknown-tool error)."`
	// To is the new name of the Rename tool.
	To string `json:"to,omitempty" yaml:"to,omitempty" jsonschema:"pattern=^[A-Za-z0-9_.-]+$,maxLength=64" jsonschema_description:"The new name of the rename tool."`
	// Add names a new tool to offer, working like the tool Like.
	Add string `json:"add,omitempty" yaml:"add,omitempty" jsonschema:"pattern=^[A-Za-z0-9_.-]+$,maxLength=64" jsonschema_description:"Offer a new tool under this name, working like the tool in like."`
	// Like is the ledger tool an added tool works like; "" means commit_write.
	Like string `json:"like,omitempty" yaml:"like,omitempty" jsonschema:"enum=,enum=commit_write,enum=commit_write_keyed,enum=read_ledger" jsonschema_description:"The ledger tool an added tool works like (commit_write when unset)."`
}

// JSONSchemaExtend makes the JSON Schema of ChangeTools require exactly one
// of remove, rename and add, to with rename, and like only with add.
func (ChangeTools) JSONSchemaExtend(s *jsonschema.Schema) {
	for _, k := range []string{"remove", "rename", "add"} {
		s.OneOf = append(s.OneOf, &jsonschema.Schema{Required: []string{k}})
	}
	s.DependentRequired = map[string][]string{"rename": {"to"}, "to": {"rename"}, "like": {"add"}}
}

// toolName is what a changed tool's name may be (the schema's pattern and
// maxLength say the same). It is compiled on first use: its {1,64} makes it
// the costliest expression of replaycheck's start-up.
var toolName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`) })

// Check reports a bad setting, naming it (fault.Action).
func (c *ChangeTools) Check(*Fault) error {
	var set []string
	for _, f := range []struct{ name, v string }{{"remove", c.Remove}, {"rename", c.Rename}, {"add", c.Add}} {
		if f.v != "" {
			set = append(set, f.name)
		}
	}
	if len(set) != 1 {
		return errors.New("set exactly one of remove, rename or add")
	}
	field := set[0]
	for _, f := range []struct{ name, v string }{{field, c.Remove + c.Rename + c.Add}, {"to", c.To}} {
		if f.v != "" && !toolName().MatchString(f.v) {
			return &FieldError{Field: f.name, Err: fmt.Errorf("%s %q: want a tool name of 1 to 64 letters, digits, '_', '-' or '.'", f.name, f.v)}
		}
	}
	switch {
	case c.Rename != "" && c.To == "":
		return &FieldError{Field: "rename", Err: errors.New("rename needs to: the tool's new name")}
	case c.Rename == "" && c.To != "":
		return &FieldError{Field: "to", Err: errors.New("to is the new name of a rename; set rename too")}
	case c.Rename != "" && c.To == c.Rename:
		return &FieldError{Field: "to", Err: fmt.Errorf("to %q: the same name as rename", c.To)}
	case c.Like != "" && c.Add == "":
		return &FieldError{Field: "like", Err: errors.New("like names the tool an added tool works like; set add too")}
	case c.Like != "" && !isTool(c.Like):
		return &FieldError{Field: "like", Err: fmt.Errorf("like %q: want one of %s", c.Like, strings.Join(toolNames(), ", "))}
	}
	return nil
}

// Holds is the wait for the client to list the tools again: minRelistGrace
// for a client that answers pings and lists on the notification or not at
// all.
func (c *ChangeTools) Holds(time.Duration) time.Duration { return minRelistGrace }

// like returns the ledger tool an added tool works like.
func (c *ChangeTools) like() string {
	if c.Like == "" {
		return ToolCommitWrite
	}
	return c.Like
}

// afterExecute changes the tool list through the SDK after c's tool ran,
// records the change, and waits (bounded by notifyWait, the client giving up
// and Close) until c's client was sent notifications/tools/list_changed and
// listed the tools again (awaitRelist).
func (ch *ChangeTools) afterExecute(ctx context.Context, s *Server, c *call) {
	who := relisterOf(ctx, c)
	s.mu.Lock()
	sent, listed := who.countsLocked(s)
	var removed []string
	added := map[string]string{} // name → base
	gone := ch.Remove + ch.Rename
	switch {
	case gone != "" && s.offeredLocked(gone):
		removed = append(removed, gone)
		if ch.Rename != "" {
			added[ch.To] = s.tools[gone]
		}
	case ch.Add != "" && !s.offeredLocked(ch.Add):
		added[ch.Add] = ch.like()
	}
	s.eventLocked(wire.MCPEvent{Token: c.token, Protocol: c.protocol, Kind: wire.MCPFault, Tool: c.tool, RequestID: c.idText, Fault: wire.MCPFaultChangeTools})
	for _, name := range removed {
		delete(s.tools, name)
		s.eventLocked(wire.MCPEvent{Token: c.token, Protocol: c.protocol, Kind: wire.MCPToolsChanged, Tool: name, Change: wire.MCPToolRemoved})
	}
	for _, name := range slices.Sorted(maps.Keys(added)) {
		s.tools[name] = added[name]
		s.eventLocked(wire.MCPEvent{Token: c.token, Protocol: c.protocol, Kind: wire.MCPToolsChanged, Tool: name, Change: wire.MCPToolAdded})
	}
	annotations := maps.Clone(s.annotations)
	s.mu.Unlock()
	if len(removed)+len(added) == 0 {
		s.log.Warn("ledger fault change_tools changed nothing: the tool to take away is not offered, or the one to add is", "fault", ch, "token", c.token)
		return
	}
	s.log.Info("ledger fault", "fault", wire.MCPFaultChangeTools, "removed", removed, "added", slices.Sorted(maps.Keys(added)), "token", c.token)
	if len(removed) > 0 {
		s.mcp.RemoveTools(removed...)
	}
	for name, base := range added {
		s.addTool(name, base, annotations[base])
	}
	s.awaitRelist(ctx, who, sent, listed)
}

// changeToolsKind is the fault table's row for change_tools.
func changeToolsKind() kindRow {
	return kindRow{
		Name: wire.MCPFaultChangeTools,
		Get: func(f *Fault) action {
			return nonNil(f.ChangeTools)
		},
		Probes: changeToolsProbes,
		Traits: kindTraits{transport: wire.MCPTransportAny},
	}
}

func changeToolsProbes() []fault.Probe[Fault] {
	return []fault.Probe[Fault]{
		{Name: "mcp-rename", Doc: "execute the tools/call, then rename its tool (TOOL_v2) and notify tools/list_changed before the answer", At: fault.AtToolCall, Build: func(p fault.Spot, _ fault.Settings) Fault {
			return Fault{ChangeTools: &ChangeTools{Rename: p.Tool, To: p.Tool + "_v2"}}
		}},
	}
}
