package upstream

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// h1Client is the relay's lean HTTP/1.1 client for one provider. A request
// is written and its answer read on the handler's own goroutine, over a pool
// of keep-alive connections, which costs far less per request than
// http.Transport's connection goroutines. It never sends a request twice: a
// request that fails, however early, is reported, not retried — the relay
// must not be the thing that replays a model call. It is used when
// Config.Client is nil and no proxy is configured for the provider.
type h1Client struct {
	host          string // Host header
	addr          string // host:port to dial
	tlsConf       *tls.Config
	dialer        net.Dialer
	headerTimeout time.Duration
	maxIdle       int

	mu   sync.Mutex
	idle []*h1Conn // LIFO
}

// h1Conn is one pooled connection with its buffers.
type h1Conn struct {
	net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	idleAt time.Time
}

// Idle connections older than maxIdleAge are closed rather than reused;
// those idle longer than checkIdleAge are checked for a close by the
// provider first.
const (
	maxIdleAge   = 30 * time.Second
	checkIdleAge = 200 * time.Millisecond
)

// alive reports whether an idle connection is still open: a read that times
// out after a millisecond saw nothing arrive, not even a close. (A deadline
// already past would fail before reading at all.) Through TLS the read also
// consumes session tickets the provider sent while the connection was idle.
func (pc *h1Conn) alive() bool {
	if pc.br.Buffered() > 0 {
		return false
	}
	_ = pc.SetReadDeadline(time.Now().Add(time.Millisecond))
	_, err := pc.br.Peek(1)
	_ = pc.SetReadDeadline(time.Time{})
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// newH1Client returns a client for base (http or https), or nil when the
// relay should go through http.Client instead (a proxy is configured).
func newH1Client(base *url.URL) *h1Client {
	probe := &http.Request{URL: base, Header: http.Header{}}
	if p, err := http.ProxyFromEnvironment(probe); err != nil || p != nil {
		return nil
	}
	port := base.Port()
	if port == "" {
		port = "80"
		if base.Scheme == "https" {
			port = "443"
		}
	}
	c := &h1Client{
		host:          base.Host,
		addr:          net.JoinHostPort(base.Hostname(), port),
		dialer:        net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second},
		headerTimeout: 5 * time.Minute,
		maxIdle:       256,
	}
	if base.Scheme == "https" {
		c.tlsConf = &tls.Config{ServerName: base.Hostname(), NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12}
	}
	return c
}

// conn returns an idle connection or dials a new one.
func (c *h1Client) conn(ctx context.Context) (*h1Conn, error) {
	for {
		c.mu.Lock()
		n := len(c.idle)
		if n == 0 {
			c.mu.Unlock()
			break
		}
		pc := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		age := time.Since(pc.idleAt)
		if age < checkIdleAge || age < maxIdleAge && pc.alive() {
			return pc, nil
		}
		pc.Close()
	}
	nc, err := c.dialer.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, err
	}
	if c.tlsConf != nil {
		tc := tls.Client(nc, c.tlsConf)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", c.addr, err)
		}
		nc = tc
	}
	return &h1Conn{Conn: nc, br: bufio.NewReaderSize(nc, 16<<10), bw: bufio.NewWriterSize(nc, 16<<10)}, nil
}

// put returns a connection whose last answer was read to its end.
func (c *h1Client) put(pc *h1Conn) {
	pc.idleAt = time.Now()
	c.mu.Lock()
	if len(c.idle) < c.maxIdle {
		c.idle = append(c.idle, pc)
		pc = nil
	}
	c.mu.Unlock()
	if pc != nil {
		pc.Close()
	}
}

// closeIdle closes the pooled connections.
func (c *h1Client) closeIdle() {
	c.mu.Lock()
	idle := c.idle
	c.idle = nil
	c.mu.Unlock()
	for _, pc := range idle {
		pc.Close()
	}
}

// errStaleConn reports a pooled connection that the provider had closed.
var errStaleConn = errors.New("provider closed the kept-alive connection")

// post sends one POST, with the relayed headers of src, and returns the answer; its Body gives the connection
// back to the pool once read to the end (closing it early discards the
// connection). Cancelling ctx aborts the exchange.
func (c *h1Client) post(ctx context.Context, pathQuery string, src http.Header, body []byte) (*http.Response, error) {
	pc, err := c.conn(ctx)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = pc.SetDeadline(time.Unix(1, 0)) }) // unblocks reads and writes
	fail := func(err error) (*http.Response, error) {
		stop()
		pc.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	bw := pc.bw
	bw.WriteString("POST ")
	bw.WriteString(pathQuery)
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(c.host)
	bw.WriteString("\r\n")
	for _, k := range relayHeaders {
		for _, v := range src[k] {
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	bw.WriteString("Content-Length: ")
	bw.WriteString(strconv.Itoa(len(body)))
	bw.WriteString("\r\n\r\n")
	bw.Write(body)
	if err := bw.Flush(); err != nil {
		return fail(fmt.Errorf("writing request: %w", err))
	}
	_ = pc.SetReadDeadline(time.Now().Add(c.headerTimeout))
	resp, err := http.ReadResponse(pc.br, nil)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = errStaleConn
		}
		return fail(fmt.Errorf("reading response: %w", err))
	}
	_ = pc.SetReadDeadline(time.Time{})
	resp.Body = &h1Body{rc: resp.Body, pc: pc, c: c, stop: stop, keep: !resp.Close}
	return resp, nil
}

// h1Body is an answer's body; at its end the connection goes back to the pool.
type h1Body struct {
	rc   io.ReadCloser
	pc   *h1Conn
	c    *h1Client
	stop func() bool
	keep bool
	done bool
}

func (b *h1Body) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.release(true)
	case err != nil:
		b.release(false)
	}
	return n, err
}

// Close discards the connection unless the body was read to its end.
func (b *h1Body) Close() error {
	if !b.done {
		b.release(false)
	}
	return nil
}

func (b *h1Body) release(whole bool) {
	b.done = true
	if b.stop() && whole && b.keep { // stop is false once ctx poisoned the deadline
		b.c.put(b.pc)
		return
	}
	b.pc.Close()
}
