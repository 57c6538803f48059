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
func MCPProtocolNames() string {
	var names []string
	for _, v := range MCPProtocols() {
		names = append(names, string(v))
	}
	return strings.Join(names, ", ")
}
