// Package upstream is the faulting model upstream: an http.Handler that
// stands in for the model API in the four dialects of internal/dialect —
// OpenAI Chat Completions, OpenAI Responses, Anthropic Messages and the
// Gemini API (whose paths name the model and the stream) — each plain and
// streamed (SSE), each with tool calls.
//
// It is part of replaycheck's Go API: a Go test serves it through
// replaychecktest and arms its Fault type (see that package).
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
// A script call names a tool the way the scenario author knows it
// (commit_write); clients offer it under names of their own, and the fake
// answers with the name offered. The call matches an offered tool named
// exactly so (or a tool of a Responses namespace tool named so, or called
// "namespace.name"); failing that, a tool whose name ends in the call after
// a non-empty prefix ending in "-", ".", "/", ":" or "__", or in a single
// "_" when the call itself contains "_": ledger-commit_write,
// ledger.commit_write, ledger/commit_write, ledger:commit_write,
// ledger__commit_write, mcp__ledger__commit_write, ledger_commit_write and
// mcp_ledger_commit_write all match commit_write; commit_write_keyed does
// not, and a one-word call after a single "_" is the tail of a snake_case
// name, so write does not match commit_write. When more than one offered
// tool matches equally well the request is answered 400 in the dialect's
// error shape, naming them, and recorded bad_request with the message in
// Request.Error. Each Request records the tools offered (Offered) and the
// script calls that matched none (Unmatched, left out of the answer; a call
// the model was due to ask for again that matched none, AgainUnmatched).
//
// The armed faults live in a fault.Registry (fakes/fault), shared with the
// ledger. Every armed fault reports what became of it (Server.FaultReports,
// a wire.FaultReport each): the
// requests it matched and those it acted on as the client saw it, so a
// fault that never fired is a fact of the run, not a silent pass. A drop
// may linger: it flushes the events up to its cut, keeps the connection
// open and silent for the linger, then cuts.
//
// Stream faults act at the points a drop can: after the headers, after N
// events, or after the event completing the tool calls. stream_error ends
// the 200 stream there with the dialect's own in-stream error (Anthropic
// `event: error`, a Responses failed-response or error event, a chat error chunk,
// Gemini's {"error":{"code","message","status"}} object, pretty-printed
// outside the event-stream format, as the Gemini API sends it mid-stream
// and Google's SDKs read it);
// stall holds it silent for a while or, forever, until the client leaves
// or the server shuts down; dribble waits before each event; a drop after
// elapsed cuts a stream still going a duration after its headers. Every
// wait ends when the client leaves or the server's base context ends.
// Relayed streams pass through as the provider sends them: Arm refuses
// these faults in relay mode.
//
// serve_model answers a scripted request normally but names another model
// in the answer (chat `model`, Responses `response.model`, Messages
// `message.model`, Gemini `modelVersion`, plain and streamed), as a silent provider fallback would;
// the record's ServedModel says which model the answer named.
//
// truncate cuts a non-streamed 200 answer partway, as a proxy's idle
// timeout does: the headers go out with the whole body's Content-Length,
// then part of the body (half, or after_bytes), and the connection closes,
// so the client reads an unexpected end of the body; it never matches a
// streamed request.
//
// Outcomes, logged per request as "PATH KIND OUTCOME" and counted as
// "KIND OUTCOME": forwarded (a normal answer, scripted or relayed — so the
// seed's `sort upstream.log | uniq -c` tables come out alike in both modes),
// delayed (a normal answer held back by a delay, a dribble or a stall
// that resumed), injected_<status>, dropped_stream, reset, client_gone,
// bad_request, relay_failed, cassette_miss, stream_error, stalled_stream
// and truncated_body. The outcome is recorded before the last byte of the
// answer leaves, so a client that has seen its answer finds it counted.
//
// Relay mode sends each model call exactly once: a request that fails on
// the way to the provider is answered 502 (relay_failed), never re-sent.
// It goes through net/http (Config.Client, or a default client that honours
// HTTP_PROXY/HTTPS_PROXY) with a body the transport cannot rewind, which is
// what keeps net/http from re-sending a request on a dead kept-alive
// connection, even one carrying Idempotency-Key.
//
// Record and replay (package cassette): with Config.Record, every relayed
// exchange whose answer arrived whole is appended to a cassette, keyed by
// the request's dialect, kind, model, stream flag, tool names, and hashes
// of the tool definitions and of each conversation item (the dialect
// table's conversation fields), with the request's credentials (its
// Authorization, x-api-key or x-goog-api-key header, a ?key= query) scrubbed
// from the answer. With Config.Cassette the fake answers from the cassette
// instead of the script or the relay, after the faults that fire, and a
// replayed stream goes through the scripted stream writer, so a drop cuts
// it where it cuts a scripted one (tool_call: before the first event the
// dialect calls terminal). A request no entry matches is answered 404 in
// the dialect's shape naming the closest entry and what differs, recorded
// cassette_miss; or, with Config.Miss MissRelay, relayed and recorded.
// Server.ArmCassette gives one run token a cassette of its own in place of
// a script, as the harness does for a scenario's model: {cassette: FILE}.
// A request that carries its run token is keyed with the token written as
// {{token}} and the token kept beside the key (cassette.Request.Token), and
// a replayed answer gets the replaying run's token where the recorded one
// had its own, so a session recorded with one token replays in a run with
// another.
//
// Each fault kind owns its behaviour, as a toxic does in toxiproxy: its file
// fault_NAME.go holds its settings type, its kind (a fault.Action: Check
// validates its settings, Holds says how long a firing holds its run back;
// and describe, its part of Fault.String), the hooks it acts at
// (beforeAnswer before any byte; atScripted on a scripted answer; atBody on
// a non-streamed body; atStream with its plan and its act at a stream
// point, and atEvent before each event; notRelayed for what relay mode
// refuses), and its row of the kind table (a fault.Kind, the table shape
// the ledger shares): its YAML name, how a Fault carries it, its explore
// probes, and its traits — pacer, stream-only (or plain-only), the kinds it
// refuses. The exchange (exchange.go) and the stream writer (stream.go) ask
// the fault's kinds at each hook; server.go routes and arms.
//
// Adding a fault kind NAME takes these files:
//   - fakes/upstream/fault_NAME.go: the settings type, the kind with its
//     hooks, and NAMEKind returning its row (name, Get, probes, traits);
//   - fakes/upstream/fault.go: its field in Fault and NAMEKind() in
//     kindTable;
//   - fakes/upstream/fault_NAME_test.go: its test, judged by the official
//     SDKs.
//
// Generated, not written: schemas/scenario.schema.json (go test
// ./internal/harness/targetfile -update), the control API's fault schemas
// (go test ./fakes/control -run TestSpecFaultSchemas -update) and the
// goldens that list every kind (go test ./internal/harness/scenario
// -update). ParseFault's messages, Validate, the JSON Schema's rules and
// explore's kinds follow from the table; internal/checklist's
// TestChecklists adds a throwaway kind this way. Only a probe at a new kind
// of point also takes a Site in fakes/fault/probe.go and its case in
// internal/harness/explore/kind.go's applies; only a new outcome also takes
// its constant in internal/wire/outcome.go (the checklist in
// internal/wire's doc).
//
// A new hook (a point no kind acts at yet) is an interface in fault.go and
// the call at that point in exchange.go or stream.go.
//
// Adding a dialect (a model API) is the checklist in the doc of
// internal/dialect, which names the files it takes here (NAME.go, an
// answerer reached through internal/dialect's Pair, and its tests).
package upstream
