package yamlfile

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/replaycheck/replaycheck/internal/inputfile"
	"github.com/replaycheck/replaycheck/internal/nesting"
)

// ReadFile reads the file at path, refusing one larger than limit bytes
// and, before opening it, one that is not a regular file (see inputfile).
func ReadFile(path string, limit int) ([]byte, error) {
	f, err := inputfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return b, nil
}

// Parse parses every YAML document in src, read from file, and returns
// their bodies, leaving out empty documents and those of comments only.
// Aliases are resolved (see MaxNodes): an alias node is replaced by the node
// of its anchor, which may so appear in several places of the tree, and
// every alias of a document finds its anchor, wherever it is defined before
// it. A syntax error, an alias without an anchor before it, a document
// that expands past the limits and one nested too deep (see CheckNesting)
// are an *Error at their line and column.
func Parse(file string, src []byte) ([]ast.Node, error) {
	if err := CheckNesting(file, src); err != nil {
		return nil, err
	}
	var f *ast.File
	if err := guard(func() (err error) { f, err = parser.ParseBytes(src, 0); return err }); err != nil {
		return nil, decodeError(file, src, err, nil, nil, nil)
	}
	var out []ast.Node
	for _, d := range f.Docs {
		body, err := resolveAliases(file, src, d.Body)
		if err != nil {
			return nil, err
		}
		if body = Unwrap(body); body != nil {
			out = append(out, body)
		}
	}
	return out, nil
}

// CheckNesting returns an *Error at the collection of src, read from file,
// that nests deeper than nesting.Max, or nil. It scans the bytes without
// parsing them: Parse calls it first, and so does every loader that decodes
// YAML by other means.
func CheckNesting(file string, src []byte) error {
	if e := nesting.YAML(src, nesting.Max); e != nil {
		return NewError(file, src, e.Line, e.Col, "%s", e.Error())
	}
	return nil
}

// ParseDocument is Parse for a file of one document: it returns its body,
// nil for an empty document or one of comments only; a second document is
// an *Error at its start.
func ParseDocument(file string, src []byte) (ast.Node, error) {
	docs, err := Parse(file, src)
	if err != nil {
		return nil, err
	}
	switch len(docs) {
	case 0:
		return nil, nil
	case 1:
		return docs[0], nil
	default:
		return nil, ErrorAt(file, src, docs[1], "want one YAML document, got %d", len(docs))
	}
}

// Decode decodes the one YAML document in src, read from file, into v (a
// pointer) strictly: a syntax error, an unknown field or a value of the
// wrong type is an *Error at its line and column with the source excerpt. An
// empty document, or one of comments only, leaves v as it is.
func Decode(file string, src []byte, v any, opts ...Option) error {
	body, err := ParseDocument(file, src)
	if err != nil {
		return err
	}
	return DecodeNode(file, src, body, v, opts...)
}

// Option changes how DecodeNode reports an error.
type Option func(*options)

type options struct {
	blame Blame
}

// Blame moves the error err of a custom decoder (an UnmarshalYAML method),
// found at node at, to the part of at it is about, and may reword it; it
// returns at and err.Error() when it has nothing to add.
type Blame func(at ast.Node, err error) (ast.Node, string)

// WithBlame has DecodeNode place custom decoders' errors with b.
func WithBlame(b Blame) Option {
	return func(o *options) { o.blame = b }
}

// DecodeNode decodes n, a node of a tree that Parse(file, src) returned,
// into v (a pointer) strictly, with Decode's errors. A nil n leaves v as it
// is. An error of a custom decoder, which carries no position, is placed at
// the deepest part of n that fails to decode alone.
func DecodeNode(file string, src []byte, n ast.Node, v any, opts ...Option) error {
	if n == nil {
		return nil
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	err := guard(func() error { return yaml.NodeToValue(n, v, yaml.Strict(), yaml.DisallowUnknownField()) })
	if err != nil {
		return decodeError(file, src, err, n, reflect.TypeOf(v), o.blame)
	}
	return nil
}

// decodeError turns an error of the YAML library into an *Error at its
// position: from its token when it has one, else found again under n (of Go
// type t) by decoding n's parts one by one.
func decodeError(file string, src []byte, err error, n ast.Node, t reflect.Type, blame Blame) *Error {
	var te *yaml.TypeError
	if errors.As(err, &te) && te.Token != nil {
		p := te.Token.Position
		return NewError(file, src, p.Line, p.Column, "%s", typeMessage(te))
	}
	var ue *yaml.UnexpectedNodeTypeError
	if errors.As(err, &ue) && ue.Token != nil && ue.Expected == ast.SequenceType {
		return listError(file, src, n, ue)
	}
	var ye yaml.Error
	if errors.As(err, &ye) && ye.GetToken() != nil {
		p := ye.GetToken().Position
		msg := ye.GetMessage()
		if strings.HasPrefix(msg, "unknown field ") && n != nil {
			if names := fieldsAround(n, t, p.Line, p.Column); len(names) > 0 {
				msg += "; want one of " + strings.Join(names, ", ")
			}
		}
		return NewError(file, src, p.Line, p.Column, "%s", msg)
	}
	if n == nil {
		return &Error{File: file, Msg: err.Error()}
	}
	at, lerr := locate(n, t)
	if at == nil {
		return ErrorAt(file, src, n, "%s", err.Error())
	}
	msg := lerr.Error()
	if blame != nil {
		at, msg = blame(at, lerr)
	}
	return ErrorAt(file, src, at, "%s", msg)
}

// guard runs f and turns a panic of the YAML library (which some malformed
// inputs provoke) into an error.
func guard(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot decode this YAML (%v)", r)
		}
	}()
	return f()
}
