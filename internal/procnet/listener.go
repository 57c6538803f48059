package procnet

import (
	"net"
	"sync"
)

// Listener is a TCP listener that keeps the connections it accepted until
// they are closed, so that Pending can ask the kernel about its own sockets
// only: a few calls, where reading the table walks every socket of the
// host. Hijacked connections are kept too, until closed. It is safe for
// concurrent use.
type Listener struct {
	*net.TCPListener
	mu    sync.Mutex
	conns map[*conn]struct{}
}

// Track returns ln keeping its accepted connections; ln must be a TCP
// listener (net.Listen "tcp").
func Track(ln *net.TCPListener) *Listener {
	return &Listener{TCPListener: ln, conns: map[*conn]struct{}{}}
}

// Accept waits for and returns the next connection, kept until closed.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.AcceptTCP()
	if err != nil {
		return nil, err
	}
	tc := &conn{TCPConn: c, l: l}
	l.mu.Lock()
	l.conns[tc] = struct{}{}
	l.mu.Unlock()
	return tc, nil
}

// Pending reports whether the listener holds input its server has not
// taken in: connections not accepted yet, bytes of an accepted one not read,
// or a peer's close not yet seen (CLOSE_WAIT). A connection the kernel has
// handed over whose Accept has not returned yet is not seen: its bytes are
// not the server's either until it is. Where the system cannot tell, it
// returns ErrUnsupported.
func (l *Listener) Pending() (bool, error) {
	if pending, err := queued(l.TCPListener); pending || err != nil {
		return pending, err
	}
	l.mu.Lock()
	conns := make([]*net.TCPConn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c.TCPConn)
	}
	l.mu.Unlock()
	for _, c := range conns {
		if pending, err := unread(c); pending || err != nil {
			return pending, err
		}
	}
	return false, nil
}

// conn is an accepted connection of a Listener; Close forgets it.
type conn struct {
	*net.TCPConn
	l    *Listener
	once sync.Once
}

// Close closes the connection and forgets it.
func (c *conn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	})
	return c.TCPConn.Close()
}
