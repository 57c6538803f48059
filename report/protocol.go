package report

import (
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// negotiatedAny reports whether a result of s recorded the MCP protocol
// version its sessions negotiated: the table, Markdown and HTML then show
// a protocol column.
func negotiatedAny(s Suite) bool {
	return slices.ContainsFunc(s.Results, func(r rules.Result) bool { return len(r.Counts.Protocols) > 0 })
}

// protocolsText renders the MCP protocol versions a run negotiated, in the
// order first seen ("2026-07-28", or "2026-07-28, 2025-06-18" for a run
// whose sessions differed), "-" for none recorded.
func protocolsText(c rules.Counts) string {
	if len(c.Protocols) == 0 {
		return "-"
	}
	names := make([]string, len(c.Protocols))
	for i, p := range c.Protocols {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}
