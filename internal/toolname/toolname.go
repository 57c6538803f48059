// Package toolname matches the names under which clients and proxies offer
// an MCP server's tools to the tools' own names.
package toolname

import "strings"

// Prefixed reports whether name is tool with a prefix a client or proxy puts
// before a server's tool: a non-empty prefix ending in "-", ".", "/", ":" or
// "__" (ledger-commit_write, ledger.commit_write, ledger/commit_write,
// ledger:commit_write, mcp__ledger__commit_write), or in a single "_" when
// tool itself contains "_" (ledger_commit_write). A one-word tool after a
// single "_" would be the last word of any snake_case name, so write is not
// a prefixed commit_write; and since the prefix must end in a separator,
// commit_write_keyed and xcommit_write are not prefixed commit_write.
func Prefixed(name, tool string) bool {
	prefix, ok := strings.CutSuffix(name, tool)
	if !ok || tool == "" || len(prefix) < 2 {
		// The prefix is a separator after at least one character.
		return false
	}
	switch prefix[len(prefix)-1] {
	case '-', '.', '/', ':':
		return true
	case '_':
		if prefix[len(prefix)-2] == '_' { // "__": a server name must precede it
			return len(prefix) > 2
		}
		return strings.IndexByte(tool, '_') >= 0
	}
	return false
}

// Names reports whether name offers tool: it is tool, or tool Prefixed.
func Names(name, tool string) bool {
	return name == tool || Prefixed(name, tool)
}
