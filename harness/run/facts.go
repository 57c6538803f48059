package run

import (
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/harness/history"
)

// This file is the one place where the fakes' facts become the history's:
// the upstream fake's outcomes and the ledger's event kinds. A new outcome or
// event kind in a fake needs a row here (and a constant in package history);
// TestFactsMapped fails until it has one.

// upstreamOutcomes maps the upstream fake's named outcomes to the history's.
var upstreamOutcomes = map[string]history.Outcome{
	upstream.OutcomeForwarded:     history.OutcomeForwarded,
	upstream.OutcomeDelayed:       history.OutcomeDelayed,
	upstream.OutcomeDroppedStream: history.OutcomeDroppedStream,
	upstream.OutcomeReset:         history.OutcomeReset,
	upstream.OutcomeClientGone:    history.OutcomeClientGone,
	upstream.OutcomeBadRequest:    history.OutcomeBadRequest,
	upstream.OutcomeRelayFailed:   history.OutcomeRelayFailed,
	upstream.OutcomeCassetteMiss:  history.OutcomeCassetteMiss,
	upstream.OutcomeStreamError:   history.OutcomeStreamError,
	upstream.OutcomeStalledStream: history.OutcomeStalledStream,
	upstream.OutcomeTruncatedBody: history.OutcomeTruncatedBody,
}

// mcpKinds maps the ledger's event kinds to the history's.
var mcpKinds = map[string]history.MCPKind{
	ledger.EventCall:           history.MCPCall,
	ledger.EventWrite:          history.MCPWrite,
	ledger.EventResult:         history.MCPResult,
	ledger.EventFault:          history.MCPFault,
	ledger.EventCancelled:      history.MCPCancelled,
	ledger.EventSession:        history.MCPSession,
	ledger.EventSessionRefused: history.MCPSessionRefused,
	ledger.EventToolsChanged:   history.MCPToolsChanged,
}

// outcomeOf returns the history's outcome of a request the upstream fake
// recorded. An outcome the mapping lacks is kept as the fake wrote it (its
// Known is then false); TestFactsMapped keeps that from happening.
func outcomeOf(r upstream.Request) history.Outcome {
	if o, ok := upstreamOutcomes[r.Outcome]; ok {
		return o
	}
	if r.Outcome == upstream.OutcomeInjected(r.Status) {
		return history.Injected(r.Status)
	}
	return history.Outcome(r.Outcome)
}

// mcpKindOf returns the history's kind of a ledger event; a kind the mapping
// lacks is kept as the ledger wrote it.
func mcpKindOf(e ledger.Event) history.MCPKind {
	if k, ok := mcpKinds[e.Kind]; ok {
		return k
	}
	return history.MCPKind(e.Kind)
}
