//go:build linux || darwin

package main

import (
	"os"
	"syscall"
	"unsafe"
)

// ttyWidth asks the terminal f for its width in columns; 0 when it cannot say.
func ttyWidth(f *os.File) int {
	var ws struct{ Row, Col, X, Y uint16 }
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), uintptr(syscall.TIOCGWINSZ), uintptr(unsafe.Pointer(&ws)))
	if errno != 0 {
		return 0
	}
	return int(ws.Col)
}
