package wire

import (
	"fmt"
	"slices"
	"strings"
)

// Check returns an error naming the versions replaycheck speaks
// (MCPProtocols) when p is none of them; the zero value (negotiate) and
// every listed version are nil.
func (p MCPProtocol) Check() error {
	if p == "" || slices.Contains(MCPProtocols(), p) {
		return nil
	}
	return fmt.Errorf("want one of %s", MCPProtocolNames())
}

// MCPProtocolNames lists MCPProtocols for people, newest first:
// "2026-07-28, 2025-11-25, …".
func MCPProtocolNames() string { return MCPProtocolsText(MCPProtocols()) }

// MCPProtocolsText renders versions for tables, in their order:
// "2026-07-28, 2025-06-18", or "-" for none.
func MCPProtocolsText(versions []MCPProtocol) string {
	if len(versions) == 0 {
		return "-"
	}
	names := make([]string, len(versions))
	for i, v := range versions {
		names[i] = string(v)
	}
	return strings.Join(names, ", ")
}
