// Package procnet reads the kernel's table of TCP sockets, where the system
// has one (Linux: netlink sock_diag, or /proc/net/tcp and /proc/net/tcp6):
// which sockets listen on a port, and whether a port holds input its server
// has not taken in yet.
package procnet

import "errors"

// ErrUnsupported is returned where the system shows no socket table.
var ErrUnsupported = errors.New("no TCP socket table on this system")

// Socket is one TCP socket of the table.
type Socket struct {
	LocalPort int
	// State is the kernel's state, e.g. Listen or CloseWait.
	State int
	// RxQueue is the bytes received and not yet read; for a listening
	// socket, the connections waiting to be accepted.
	RxQueue int64
	// Inode identifies the socket among a process's file descriptors
	// (socket:[Inode]).
	Inode string
}

// Kernel TCP states (include/net/tcp_states.h).
const (
	Established = 0x01
	Listen      = 0x0A
	CloseWait   = 0x08
)

// States is a set of states for Sockets: a bit per state.
func States(states ...int) uint32 {
	var m uint32
	for _, s := range states {
		m |= 1 << s
	}
	return m
}

// Pending reports whether port, a local port of this host, has input its
// server has not taken in: connections not accepted yet, bytes not read, or
// a peer's close not yet seen (CLOSE_WAIT).
func Pending(port int) (bool, error) {
	socks, err := Sockets(States(Listen, Established, CloseWait))
	if err != nil {
		return false, err
	}
	for _, s := range socks {
		if s.LocalPort == port && (s.RxQueue > 0 || s.State == CloseWait) {
			return true, nil
		}
	}
	return false, nil
}
