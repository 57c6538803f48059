package report

import (
	"slices"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// negotiatedAny reports whether a result of s recorded the MCP protocol
// version its sessions negotiated: the table, Markdown and HTML then show
// a protocol column.
func negotiatedAny(s Suite) bool {
	return slices.ContainsFunc(s.Results, func(r rules.Result) bool { return len(r.Counts.Protocols) > 0 })
}
