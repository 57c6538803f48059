package rules

import (
	"github.com/replaycheck/replaycheck/internal/harness/history"
)

// toolScope is one client exchange and one tool: the unit the rules about
// one logical tool call judge.
type toolScope struct {
	exchange int
	tool     string
}

// scopes returns the scopes of the events of h.MCP at the indexes marked, in
// the order of their first marked event, and the index of that event.
func scopes(h *history.History, marked []int) ([]toolScope, map[toolScope]int) {
	first := map[toolScope]int{}
	var order []toolScope
	for _, i := range marked {
		e := h.MCP[i]
		s := toolScope{h.ExchangeAt(e.At.D()), e.Tool}
		if _, ok := first[s]; !ok {
			first[s] = i
			order = append(order, s)
		}
	}
	return order, first
}
