package yamlfile

import (
	"github.com/goccy/go-yaml/ast"
)

// Limits of one document with its aliases expanded. Aliases let a small file
// stand for a huge value (nine anchors of nine aliases each are a billion
// strings); a document that would expand past either limit is refused at
// the alias that crosses it. A file without aliases stays far below them
// within any of the harness's file size limits.
const (
	// MaxNodes bounds the nodes (scalars, keys, mappings and lists).
	MaxNodes = 1 << 20
	// MaxBytes bounds the bytes of the scalars and keys.
	MaxBytes = 16 << 20
)

// resolver resolves the aliases of one document in document order,
// counting what the document expands to.
type resolver struct {
	file string
	src  []byte
	// anchors holds the node of each anchor defined so far (the latest of
	// a name wins, as YAML says).
	anchors map[string]ast.Node
	// sizes holds the expanded size of each anchor's node.
	sizes map[ast.Node]size
	// open counts the anchors of each name being walked: an alias of one
	// of them is inside its own anchor.
	open map[string]int
	// total is the size of the document so far, aliases expanded.
	total size
}

type size struct{ nodes, bytes int }

// resolveAliases replaces every alias under n by its anchor's node and
// returns n so changed, or an *Error at an alias with no anchor before it,
// inside its own anchor, or past MaxNodes or MaxBytes.
func resolveAliases(file string, src []byte, n ast.Node) (ast.Node, error) {
	r := &resolver{file: file, src: src, anchors: map[string]ast.Node{}, sizes: map[ast.Node]size{}, open: map[string]int{}}
	return r.walk(n)
}

func (r *resolver) walk(n ast.Node) (ast.Node, error) {
	var err error
	switch v := n.(type) {
	case nil:
		return nil, nil
	case *ast.AliasNode:
		return r.alias(v)
	case *ast.AnchorNode:
		name := nameOf(v.Name)
		r.open[name]++
		before := r.total
		v.Value, err = r.walk(v.Value)
		r.open[name]--
		if err != nil {
			return nil, err
		}
		r.anchors[name] = v.Value
		r.sizes[v.Value] = size{r.total.nodes - before.nodes, r.total.bytes - before.bytes}
	case *ast.DocumentNode:
		v.Body, err = r.walk(v.Body)
	case *ast.TagNode:
		v.Value, err = r.walk(v.Value)
	case *ast.MappingKeyNode:
		v.Value, err = r.walk(v.Value)
	case *ast.MappingNode:
		r.total.nodes++
		for _, p := range v.Values {
			if _, err = r.walk(p); err != nil {
				return nil, err
			}
		}
	case *ast.MappingValueNode:
		var key ast.Node
		if key, err = r.walk(v.Key); err != nil {
			return nil, err
		}
		// An alias used as a key stays an alias unless its anchor is a key
		// too; the decoder resolves it then, within this mapping's document.
		if k, ok := key.(ast.MapKeyNode); ok {
			v.Key = k
		}
		v.Value, err = r.walk(v.Value)
	case *ast.SequenceNode:
		r.total.nodes++
		for i := range v.Values {
			if v.Values[i], err = r.walk(v.Values[i]); err != nil {
				return nil, err
			}
		}
	case *ast.CommentGroupNode, *ast.CommentNode, *ast.DirectiveNode:
	case *ast.LiteralNode:
		r.scalar(v.Value)
	default:
		r.scalar(v)
	}
	if err != nil {
		return nil, err
	}
	return n, nil
}

// scalar counts the scalar n.
func (r *resolver) scalar(n ast.Node) {
	r.total.nodes++
	if n != nil && n.GetToken() != nil {
		r.total.bytes += len(n.GetToken().Value)
	}
}

// alias returns the node of a's anchor, counting what it expands to.
func (r *resolver) alias(a *ast.AliasNode) (ast.Node, error) {
	name := nameOf(a.Value)
	target, ok := r.anchors[name]
	switch {
	case !ok && r.open[name] > 0:
		return nil, ErrorAt(r.file, r.src, a, "alias *%s is inside its own anchor &%s: it would never end", name, name)
	case !ok:
		return nil, ErrorAt(r.file, r.src, a, "could not find alias %q: an anchor &%s must come before it in the same document", name, name)
	case target == nil:
		r.total.nodes++
		return a, nil
	}
	s := r.sizes[target]
	r.total.nodes += s.nodes
	r.total.bytes += s.bytes
	if r.total.nodes > MaxNodes {
		return nil, ErrorAt(r.file, r.src, a, "document expands to more than %d nodes through its aliases", MaxNodes)
	}
	if r.total.bytes > MaxBytes {
		return nil, ErrorAt(r.file, r.src, a, "document expands to more than %d bytes through its aliases", MaxBytes)
	}
	return target, nil
}

// nameOf is the name of an anchor or alias.
func nameOf(n ast.Node) string {
	if n == nil || n.GetToken() == nil {
		return ""
	}
	return n.GetToken().Value
}
