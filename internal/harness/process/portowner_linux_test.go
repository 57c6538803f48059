package process

import (
	"net"
	"syscall"
	"testing"
)

// TestGroupListens: the listener check sees a socket this process holds as
// this process group's, and as no other group's.
func TestGroupListens(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	owned, known := groupListens(port, syscall.Getpgrp())
	if !known {
		t.Skip("no /proc to tell who holds a port")
	}
	if !owned {
		t.Errorf("groupListens(%d, own group) = false", port)
	}
	if owned, _ := groupListens(port, 1<<30); owned {
		t.Errorf("groupListens(%d, another group) = true", port)
	}
}
