package yamlfile

import (
	"github.com/goccy/go-yaml/ast"
)

// At returns the node at path under n (mapping keys as strings, sequence
// indexes as ints), or the deepest node found on the way, so that a problem
// with a part that is missing is shown where it belongs. Tags and anchors
// are looked through. goccy/go-yaml's Path finds a node only when the whole
// path is there, and its string form needs quoting for keys such as
// "builtin:*"; this walks the steps as they are.
func At(n ast.Node, path ...any) ast.Node {
	cur, _ := walkPath(n, path)
	return cur
}

// Lookup returns the node at path under n like At, and whether the whole
// path was found.
func Lookup(n ast.Node, path ...any) (ast.Node, bool) {
	return walkPath(n, path)
}

func walkPath(n ast.Node, path []any) (ast.Node, bool) {
	cur := Unwrap(n)
	for _, step := range path {
		var next ast.Node
		switch k := step.(type) {
		case string:
			for _, p := range Pairs(cur) {
				if KeyName(p) == k {
					next = p.Value
					break
				}
			}
		case int:
			if seq, ok := cur.(*ast.SequenceNode); ok && k >= 0 && k < len(seq.Values) {
				next = seq.Values[k]
			}
		}
		if next == nil {
			return cur, false
		}
		cur = Unwrap(next)
	}
	return cur, true
}

// Pos returns the line and column (1-based) where n starts, 0, 0 for a nil
// node or one without a token.
func Pos(n ast.Node) (line, col int) {
	if n == nil || n.GetToken() == nil {
		return 0, 0
	}
	p := n.GetToken().Position
	return p.Line, p.Column
}

// KeyName is the key of p as the decoder reads it: unquoted.
func KeyName(p *ast.MappingValueNode) string {
	if s, ok := Unwrap(p.Key).(*ast.StringNode); ok {
		return s.Value
	}
	return p.Key.String()
}

// Pairs returns the key-value pairs of mapping n (looking through tags and
// anchors), nil when n is not a mapping.
func Pairs(n ast.Node) []*ast.MappingValueNode {
	switch m := Unwrap(n).(type) {
	case *ast.MappingNode:
		return m.Values
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{m}
	}
	return nil
}

// IsMapping reports whether n is a mapping.
func IsMapping(n ast.Node) bool {
	switch Unwrap(n).(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return true
	}
	return false
}

// Unwrap returns the node under n's tags, anchors and document.
func Unwrap(n ast.Node) ast.Node {
	for {
		switch v := n.(type) {
		case *ast.TagNode:
			n = v.Value
		case *ast.AnchorNode:
			n = v.Value
		case *ast.DocumentNode:
			n = v.Body
		default:
			return n
		}
	}
}
