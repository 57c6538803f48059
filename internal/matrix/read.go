package matrix

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/replaycheck/replaycheck/internal/nesting"
)

// ErrNotMatrix is what Read returns (errors.Is) for JSON that is not a
// matrix (a run's or an explore sweep's report).
var ErrNotMatrix = errors.New("not a matrix (the JSON of matrix --json)")

// Read reads a matrix written as JSON (report.WriteMatrixJSON).
func Read(r io.Reader) (*Matrix, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading matrix: %w", err)
	}
	if err := nesting.CheckJSON("matrix", b); err != nil {
		return nil, err
	}
	var m Matrix
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("reading matrix: %w", err)
	}
	switch {
	case m.Kind != KindMatrix:
		return nil, fmt.Errorf("reading matrix: %w", ErrNotMatrix)
	case m.Version != FormatVersion:
		return nil, fmt.Errorf("reading matrix: format version %d, want %d", m.Version, FormatVersion)
	}
	return &m, nil
}
