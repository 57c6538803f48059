package procnet

import (
	"errors"
	"net"
	"testing"
	"time"
)

// TestListenerPending: a listener with a connection it has not accepted has input
// pending; once accepted and with nothing sent, it has none; bytes the
// server has not read, and a close it has not seen, are pending again.
func TestListenerPending(t *testing.T) {
	tcp, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	ln := Track(tcp)
	defer ln.Close()
	// want waits for the kernel to show the state (the kernel may deliver a
	// loopback packet a moment after the send returns).
	want := func(step string, pending bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, err := ln.Pending()
			if errors.Is(err, ErrUnsupported) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			if got == pending {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: Pending = %v after 10s, want %v", step, got, pending)
			}
			time.Sleep(time.Millisecond)
		}
	}
	want("nothing arrived", false)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want("a connection not accepted", true)
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want("accepted, nothing sent", false)
	if _, err := c.Write([]byte("tools/call")); err != nil {
		t.Fatal(err)
	}
	want("bytes not read", true)
	buf := make([]byte, 10)
	if _, err := s.Read(buf); err != nil {
		t.Fatal(err)
	}
	want("bytes read", false)
	c.Close()
	want("a close not seen", true)
	s.Close()
	want("closed", false)
	if got := len(ln.conns); got != 0 {
		t.Errorf("%d connections kept after their close, want 0", got)
	}
}
