// Package gateway is replaycheck's built-in LLM gateway: a small proxy in the
// shape of LiteLLM's (seed 000) that serves the chat, responses and messages
// dialects of internal/dialect (Served), runs auto-approved MCP tools against the
// ledger through the MCP Go SDK's client, and routes model calls with
// retries and fallbacks. Each replay bug of the seeds is a named switch
// ([Bug], listed with its behaviour by [AllBugs]); mode "naive" turns all on
// and "guarded" none, so the harness can show that every scenario catches
// exactly its bug.
//
// It serves the replaycheck command and its tests; it is not an API and may
// change in any release (replaycheck's Go API is replaychecktest and the
// fakes it arms: fakes/upstream, fakes/ledger, fakes/fault).
//
// Upstream mapping: chat goes upstream as chat completions, responses and
// messages as a Responses call. Errors are answered in the OpenAI error
// shape with the upstream's status.
//
// Streaming: a streamed chat request is relayed live — the first model
// answer's chunks reach the app, the tools run inside the stream, then the
// follow-up's chunks; a failure after output ends the stream with an SSE
// error event (or, with StreamSplice, a fallback's chunks). A streamed
// Responses or Messages request goes upstream streamed too, but reaches the
// app only once the final answer is complete (the upstream's own events of
// the final Responses stream, or an Anthropic event stream built from it),
// so its failures are answered like non-streamed ones.
//
// MCP sessions: the gateway holds one shared client session per gateway,
// opened by the first request that needs it and replaced when it ends; a
// ClientSession is safe for concurrent use and each tools/call is its own
// POST, so concurrent app requests share it. Close ends it. Its tool list is
// cached and listed anew after notifications/tools/list_changed (offered
// afresh in every round of the tool loop). A tools/call goes again on a new
// session only when it provably did not run: the server answered its own
// request 404 (the session expired), or it never left the gateway. On a 401
// the transport re-authenticates once and sends the request again (see
// reauthorizer); a second refusal is told to the model, not retried.
//
// MCP 2026-07-28: the client sends server/discover first and speaks the
// stateless protocol to a server that answers it (2025-11-25 through
// initialize otherwise). There, a tools/call whose response stream broke is
// lost, and the specification asks the client to re-issue it with a new id:
// the gateway re-issues a keyed write once with the same idempotency key
// and holds a non-idempotent one (the model gets an unknown-outcome result
// that says why).
//
// MCP over stdio: with Config.MCPCommand the gateway spawns the MCP server
// as a process (replaycheck ledger-stdio URL, for the built-in target) and
// talks MCP over its stdin and stdout; one process serves every request,
// and when it exits the next use spawns a new one (the follow-up round of
// the request it died in lists the tools on it). A tools/call in flight when
// the process dies (CallTool returns `calling "tools/call": EOF`) or breaks
// its stdout gets the unknown-outcome result and is not sent again; only a
// call never written to the process's stdin goes on a new process, once. A
// call that outlives the tool timeout ends the process (taken for hung).
// Close ends the process: stdin closed, then SIGTERM and SIGKILL.
//
// Retries: the router retries a whole attempt (the tool loop) up to
// NumRetries times per model group, then falls back. Guarded, an attempt
// that failed after an unkeyed tool call was dispatched is not retried; an
// attempt whose dispatched calls all carried an idempotency key is, since
// the key makes the replay safe.
//
// Adding a switch NAME (a replay bug the naive gateway has) takes these
// files:
//   - fakes/gateway/bugs.go: its Bug constant and its row in AllBugs (its
//     help text; ParseBugs, --bug, completion and naive follow from it);
//   - fakes/gateway/BEHAVIOUR.go: the file of the behaviour it changes (one
//     of router.go, loop.go, mcp.go, stream.go, …): the branch that reads
//     g.cfg.Bugs.Has(NAME);
//   - fakes/gateway/switch_test.go: its row in TestEachSwitchAlone (guarded
//     and the switch alone, side by side; the test fails for a switch
//     without one);
//   - internal/harness/explore/explore_test.go: its row in
//     TestFindsEachSwitch (explore must find it unaided; likewise checked);
//   - scenarios/NAME.yaml: a scenario tagged bug:NAME that fails on it and
//     passes on guarded (TestMutation in internal/harness/run fails for a
//     switch no scenario catches);
//   - scenarios/README.md: its line.
//
// internal/checklist's TestChecklists adds a throwaway switch's first two
// files and builds it.
//
// Endpoints: each app-facing dialect is a type implementing dialect (how
// its requests are read, its tools taken, its conversation started, its
// answer, stream and errors rendered), in its own file dialect_NAME.go,
// with the method of endpoints (the gateway's part of internal/dialect's
// Sides) that returns it. The gateway routes by the paths of
// internal/dialect's table; no file of it names an endpoint otherwise.
//
// Adding an endpoint (an app-facing dialect) takes, once the dialect is in
// internal/dialect (that package's checklist, which names every file):
//   - fakes/gateway/dialect_NAME.go: a type implementing dialect, and
//     endpoints.NAME returning it in place of the nil one in dialect.go;
//   - its tests: requests of it in request_test.go, and its provider's SDK
//     against the gateway in sdk_test.go.
//
// The built-in target's endpoints (Served), the help's paths (ServedPaths)
// and the 404's list follow from it.
package gateway
