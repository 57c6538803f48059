// Package envref expands environment references in a file's values:
// ${NAME}, ${NAME:-default}, and $${, the escape of a literal ${. Target
// files expand them in every value, scenarios in mcp.command and mcp.env.
package envref

import (
	"fmt"
	"regexp"
)

// ref matches ${NAME}, ${NAME:-default} and $${.
var ref = regexp.MustCompile(`\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// Expand replaces ${NAME} and ${NAME:-default} in s with the environment's
// values (getenv's), and $${ with ${; it returns the names referenced. An
// unset or empty NAME without a default is an error naming it (never the
// value).
func Expand(s string, getenv func(string) string) (string, []string, error) {
	var refs, missing []string
	out := ref.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$${" {
			return "${"
		}
		sub := ref.FindStringSubmatch(m)
		refs = append(refs, sub[1])
		if v := getenv(sub[1]); v != "" {
			return v
		}
		if sub[2] != "" {
			return sub[3]
		}
		missing = append(missing, sub[1])
		return ""
	})
	if len(missing) > 0 {
		return "", nil, fmt.Errorf("environment variable %s is not set (use ${%s:-default} for a default)", missing[0], missing[0])
	}
	return out, refs, nil
}
