// Package scenarios embeds the shipped scenario suite, so `replaycheck run`
// works from any directory: seed/ (seed 000), mcp/ (seeds 001, 002 and 004
// #4) and retry/ (seeds 003 and 004).
package scenarios

import "embed"

// FS holds the suite's YAML files under seed/, mcp/ and retry/.
//
//go:embed seed mcp retry
var FS embed.FS
