//go:build !linux

package procnet

// Sockets has no table to read here.
func Sockets(states uint32) ([]Socket, error) { return nil, ErrUnsupported }
