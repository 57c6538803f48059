package wire

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Histories and timelines saved before MCPEvent had typed fields carry one
// "detail" string whose meaning depends on the kind. UnmarshalJSON reads it
// into the field that now holds that meaning, so an old report re-checks as
// it did; events are written with the typed fields only.

// The detail values of old events that are not a fault's, a method's, a
// cause's or a process id.
const (
	oldDetailUnknownTool = "unknown_tool" // an MCPCall's UnknownTool
	oldDetailDedup       = "dedup"        // an MCPResult's Dedup
	oldDetailHTTP        = "http "        // an MCPResult's Status, "http 404"
)

// UnmarshalJSON decodes e from its JSON, reading an old event's "detail"
// into its typed fields by kind (see migrateDetail). A typed field the JSON
// sets wins over the detail.
func (e *MCPEvent) UnmarshalJSON(b []byte) error {
	type fields MCPEvent // the fields without this method
	var v struct {
		fields
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*e = MCPEvent(v.fields)
	if v.Detail != "" {
		e.migrateDetail(v.Detail)
	}
	return nil
}

// migrateDetail sets the typed field that detail, an old event's "detail",
// meant for e's kind, where the event does not already set it. A detail of a
// kind that had none is dropped.
func (e *MCPEvent) migrateDetail(detail string) {
	set := func(field *string, v string) {
		if *field == "" {
			*field = v
		}
	}
	switch e.Kind {
	case MCPCall:
		e.UnknownTool = e.UnknownTool || detail == oldDetailUnknownTool
	case MCPResult:
		status, err := strconv.Atoi(strings.TrimPrefix(detail, oldDetailHTTP))
		switch {
		case detail == oldDetailDedup:
			e.Dedup = true
		case strings.HasPrefix(detail, oldDetailHTTP) && err == nil:
			if e.Status == 0 {
				e.Status = status
			}
		default:
			set(&e.Fault, detail)
		}
	case MCPFault:
		set(&e.Fault, detail)
	case MCPCancelled:
		set(&e.Cause, detail)
	case MCPSession, MCPSessionRefused:
		set(&e.Method, detail)
	case MCPSpawn:
		set(&e.PID, detail)
	case MCPToolsChanged:
		if e.Change == "" {
			e.Change = MCPToolChange(detail)
		}
	case MCPExit:
		if e.End != "" {
			return
		}
		switch end := MCPExitEnd(detail); end {
		case MCPExitStdinClosed, MCPExitStopped, MCPExitGone:
			e.End = end
		default:
			e.End = MCPExitFault
			set(&e.Fault, detail)
		}
	}
}
