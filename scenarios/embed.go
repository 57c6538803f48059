// Package scenarios embeds the shipped scenario suite, so `replaycheck run`
// works from any directory: seed/ (seed 000), mcp/ (seeds 001, 002 and 004
// #4), retry/ (seeds 003 and 004), model/ (004 #7), clients/ (client targets
// only: they expect a command's exit code and output, and are skipped on
// other targets), gemini/ (client targets on the Gemini API) and stdio/
// (client targets that spawn the ledger over stdio).
package scenarios

import "embed"

// FS holds the suite's YAML files under seed/, mcp/, retry/, clients/,
// model/, gemini/ and stdio/.
//
//go:embed seed mcp retry clients model gemini stdio mcp2026 resume
var FS embed.FS
