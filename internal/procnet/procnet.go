// Package procnet reads the kernel's table of TCP sockets, where the system
// has one (Linux: netlink sock_diag, or /proc/net/tcp and /proc/net/tcp6):
// which sockets listen on a port; and, of a listener of this process,
// whether it holds input its server has not taken in yet (Listener).
package procnet

import "errors"

// ErrUnsupported is returned where the system shows no socket table.
var ErrUnsupported = errors.New("no TCP socket table on this system")

// Socket is one TCP socket of the table.
type Socket struct {
	LocalPort int
	// State is the kernel's state, e.g. Listen or CloseWait.
	State int
	// Inode identifies the socket among a process's file descriptors
	// (socket:[Inode]).
	Inode string
}

// Kernel TCP states (include/net/tcp_states.h).
const (
	Listen    = 0x0A
	CloseWait = 0x08
)

// States is a set of states for Sockets: a bit per state.
func States(states ...int) uint32 {
	var m uint32
	for _, s := range states {
		m |= 1 << s
	}
	return m
}
