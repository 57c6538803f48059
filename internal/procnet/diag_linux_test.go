package procnet

import (
	"net"
	"syscall"
	"testing"
)

// TestDiagSeesAListener: the sock_diag path itself (Sockets falls back to
// /proc when it fails) finds a listener of this process, by port and state.
func TestDiagSeesAListener(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	socks, err := diag(syscall.AF_INET, States(Listen))
	if err != nil {
		t.Skipf("sock_diag refused here: %v", err)
	}
	for _, s := range socks {
		if s.LocalPort == port && s.State == Listen && s.Inode != "0" {
			return
		}
	}
	t.Errorf("no listener on port %d among %d sockets", port, len(socks))
}
