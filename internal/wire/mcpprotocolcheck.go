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
	all := MCPProtocols()
	if p == "" || slices.Contains(all, p) {
		return nil
	}
	names := make([]string, len(all))
	for i, v := range all {
		names[i] = string(v)
	}
	return fmt.Errorf("want one of %s", strings.Join(names, ", "))
}
