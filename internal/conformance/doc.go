// Package conformance has no code, only a test: it runs the official MCP
// conformance suite (@modelcontextprotocol/conformance, pinned with the
// Node.js it needs in testdata/package-lock.json and installed by make
// conformance) as the judge of replaycheck's MCP servers, offline. It runs
// the suite against @modelcontextprotocol/server-everything directly,
// through replaycheck's forwarder (serve --mcp-relay and --mcp-command) and
// against the ledger (serve, serve --stateless, and serve --mcp-protocol
// 2026-07-28 at that revision), and holds what differs: a
// scenario the server passes that the forwarder makes fail, and a check the
// ledger fails.
package conformance
