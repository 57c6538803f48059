// Package upstream is the faulting model upstream: an http.Handler that
// stands in for the model API in three dialects — OpenAI Chat Completions
// (/v1/chat/completions), OpenAI Responses (/v1/responses) and Anthropic
// Messages (/v1/messages) — each plain and streamed (SSE), each with tool
// calls.
//
// In scripted mode (the default) it is a deterministic fake model: an initial
// request is answered with the tool calls of the run's Script, a follow-up (a
// request carrying a tool result) with the script's next calls or its final
// text. In relay mode (Config.Relay) it forwards each request, with the
// caller's credentials, to a real provider. In both modes every request is
// classified (initial or follow_up), attributed to its run by the run token
// in its bytes (the ids the fake mints contain it), counted, logged as
// "PATH KIND OUTCOME" and recorded; and Faults armed per run token or
// globally, or the seed rig's flag files, inject errors, cut streams, delay
// or reset connections first.
//
// Adding a fault action is one file implementing the action interface plus
// one row in actionTable (fault.go); adding a dialect is one file
// implementing the dialect interface plus one row in dialectTable
// (dialect.go).
package upstream
