package procnet

import (
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// queued reports whether ln's accept queue holds connections: for a
// listening socket the kernel gives the queue's length as tcpi_unacked.
func queued(ln *net.TCPListener) (bool, error) {
	var n uint32
	err := control(ln, func(fd int) error {
		info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		if err == nil {
			n = info.Unacked
		}
		return err
	})
	return n > 0, err
}

// unread reports whether c holds bytes not read or a close not seen; a
// connection closed meanwhile holds nothing.
func unread(c *net.TCPConn) (bool, error) {
	pending := false
	err := control(c, func(fd int) error {
		n, err := unix.IoctlGetInt(fd, unix.SIOCINQ)
		if err != nil {
			return err
		}
		info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		if err != nil {
			return err
		}
		pending = n > 0 || info.State == CloseWait
		return nil
	})
	if errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.EBADF) {
		return false, nil
	}
	return pending, err
}

// control runs f on the socket's descriptor.
func control(s syscall.Conn, f func(fd int) error) error {
	raw, err := s.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := raw.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
