//go:build !linux

package procnet

import "net"

func queued(*net.TCPListener) (bool, error) { return false, ErrUnsupported }

func unread(*net.TCPConn) (bool, error) { return false, ErrUnsupported }
