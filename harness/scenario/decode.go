package scenario

import (
	"github.com/goccy/go-yaml/ast"

	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

// The functions below forward to yamlfile for the target file code in
// harness/run until it uses yamlfile itself.

// ReadFile is yamlfile.ReadFile.
func ReadFile(path string, limit int) ([]byte, error) { return yamlfile.ReadFile(path, limit) }

// DescribeReadError is yamlfile.DescribeReadError.
func DescribeReadError(err error) string { return yamlfile.DescribeReadError(err) }

// NewError is yamlfile.NewError.
func NewError(file string, src []byte, line, col int, format string, args ...any) *Error {
	return yamlfile.NewError(file, src, line, col, format, args...)
}

// ParseDocument is yamlfile.ParseDocument.
func ParseDocument(file string, src []byte) (ast.Node, error) {
	return yamlfile.ParseDocument(file, src)
}

// DecodeNode is yamlfile.DecodeNode.
func DecodeNode(file string, src []byte, body ast.Node, v any) error {
	return yamlfile.DecodeNode(file, src, body, v)
}

// DecodeStrict is yamlfile.Decode.
func DecodeStrict(file string, src []byte, v any) error { return yamlfile.Decode(file, src, v) }
