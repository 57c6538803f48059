//go:build !linux

package procnet

// Sockets has no table to read here.
func Sockets() ([]Socket, error) { return nil, ErrUnsupported }
