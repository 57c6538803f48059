package loopback

import (
	"errors"
	"net"
	"sync"
	"time"
)

// firstByteListener hands out connections whose read deadlines wait for the
// client's first byte: the server's ReadHeaderTimeout, armed when a
// connection is accepted, starts only once the first request begins to
// arrive, as net/http already does for every later request on a kept-alive
// connection. Without it the server closes a connection the client dialed
// but has not used yet (an http.Transport pools a dial it no longer needed)
// once the timeout passes, and a request the client sends on it just then
// fails with EOF: on a busy machine the client sees that close late.
type firstByteListener struct {
	net.Listener
}

func (l firstByteListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &firstByteConn{Conn: c}, nil
}

// firstByteConn defers the read deadlines set before its first byte came
// (see firstByteListener): once it came, each applies as the same span from
// then. Deadlines set afterwards apply as usual.
type firstByteConn struct {
	net.Conn
	mu      sync.Mutex
	started bool
	// span is the read deadline set before the first byte, as a span from
	// when it was set; 0 is none.
	span time.Duration
}

func (c *firstByteConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	started := c.started
	c.mu.Unlock()
	if started {
		return c.Conn.Read(p)
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		if !c.started {
			c.started = true
			if c.span > 0 {
				_ = c.Conn.SetReadDeadline(time.Now().Add(c.span))
			}
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *firstByteConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return c.Conn.SetReadDeadline(t)
	}
	c.span = 0
	if !t.IsZero() {
		c.span = max(time.Until(t), time.Nanosecond)
	}
	return nil
}

func (c *firstByteConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetWriteDeadline(t)
}

// SetLinger sets SO_LINGER on a plain TCP connection (see
// net.TCPConn.SetLinger), for a handler that hijacks the connection to reset
// it; on any other connection it returns errors.ErrUnsupported.
func (c *firstByteConn) SetLinger(sec int) error {
	if tc, ok := c.Conn.(*net.TCPConn); ok {
		return tc.SetLinger(sec)
	}
	return errors.ErrUnsupported
}

// DeferHeaderTimeout returns ln handing out connections on which an
// http.Server's ReadHeaderTimeout starts at the first byte, not at accept
// (see firstByteListener); ServeOn serves on such a listener. Closing the
// returned listener closes ln.
func DeferHeaderTimeout(ln net.Listener) net.Listener { return firstByteListener{ln} }
