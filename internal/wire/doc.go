// Package wire holds the facts the fakes and the harness share: what the
// upstream fake recorded of a model request (UpstreamRequest: its
// RequestKind, its Outcome, its tool calls), what the ledger MCP server saw
// (MCPEvent: its MCPKind, the MCP fault name in its Fault, and what each
// fault means, MCPFaultMeanings), what became of an armed fault
// (FaultReport), and what each fake counted (UpstreamCounts,
// keyed by a typed CountKey, and MCPCounts). The fakes record these values,
// the control API serves them, a run's history stores them as they are and
// the rules read them: no fact is copied or parsed back on the way. The
// package imports only the standard library and other leaf packages.
//
// Their JSON is the history's (and the /counts answer's), so a saved history
// reads back unchanged; a value this version does not know (an outcome, a
// kind) reads back as itself. An MCP event saved before its typed fields (one
// "detail" string) reads back into them (mcpdetail.go).
//
// A new upstream outcome touches:
//   - outcome.go: its constant, and NamedOutcomes (and Cut or Dropped when it
//     breaks an answer), with a row in outcome_test.go;
//   - the upstream fake's code that decides it, and the outcome list in
//     fakes/upstream/doc.go;
//   - a rule that should judge it, if any (internal/harness/rules).
//
// A new MCP fault name (a new ledger fault kind: see the checklist in the
// doc of fakes/ledger) is its constant and its row in MCPFaultMeanings
// (mcpfault.go): whether the tool ran, whether it ends the call, what the
// client sees, its words and its stdio effect. The rules, the run, the
// reports and the ledger-stdio process read the row, never the name.
//
// A new MCP event kind touches:
//   - mcp.go: its constant;
//   - the ledger's code that records it (fakes/ledger);
//   - report/explain.go, which words each event kind in the timeline;
//   - a rule that should judge it, if any (internal/harness/rules).
//
// A new MCPEvent field has one meaning, on the kinds its doc names, and a row
// in the MCPEvent schema of fakes/control/openapi.yaml (TestSpecMCPEventMatchesWire).
//
// Counts, the history, the control API and the serve table need nothing new:
// they carry any Outcome, MCPKind and fault name as it is, and a count key with
// the new outcome is accepted by CountKey.Check once NamedOutcomes has it.
package wire
