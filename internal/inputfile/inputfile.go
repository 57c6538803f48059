// Package inputfile opens the files a user names as input (scenarios,
// targets, baselines, configs, scripts, cassettes, reports) only when they
// are regular files. Opening a named pipe blocks until something writes to
// it, in a system call no signal handler of the program ends, so a FIFO
// named x.yaml would hang the command past Ctrl-C; a device or socket is
// no file to load either.
package inputfile

import (
	"io/fs"
	"os"
)

// NotRegularError is the error of a path that is not a regular file; Open
// returns it inside an *fs.PathError naming the path.
type NotRegularError struct {
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return "is " + Describe(e.Mode) + ", not a regular file"
}

// Open opens path for reading when it is a regular file (following links)
// and returns an *fs.PathError wrapping a *NotRegularError otherwise, before
// opening anything that could block. The caller closes the file.
func Open(path string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: &NotRegularError{Mode: fi.Mode()}}
	}
	return os.Open(path)
}

// Describe names the type of a file mode: "a directory", "a named pipe
// (FIFO)", "a socket", "a device" and so on.
func Describe(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsRegular():
		return "a regular file"
	}
	return "an irregular file"
}
