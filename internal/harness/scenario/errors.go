package scenario

import "github.com/replaycheck/replaycheck/internal/yamlfile"

// Error is a problem in a scenario file, at a line and column, with the
// source excerpt (see yamlfile.Error).
type Error = yamlfile.Error

// ErrorList is every problem found in a set of files, in file order.
type ErrorList = yamlfile.ErrorList
