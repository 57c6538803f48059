package process

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/replaycheck/replaycheck/internal/procnet"
)

// groupListens reports whether a process of the group led by pgid (or a
// descendant of its leader, should a wrapper have moved it to a group of its
// own) holds a socket listening on TCP port, as /proc shows it. known is
// false when /proc cannot say (not mounted, unreadable).
func groupListens(port, pgid int) (owned, known bool) {
	socks, err := procnet.Sockets(procnet.States(procnet.Listen))
	if err != nil {
		return false, false
	}
	inodes := map[string]bool{}
	for _, sk := range socks {
		if sk.LocalPort == port && sk.State == procnet.Listen {
			inodes[sk.Inode] = true
		}
	}
	if len(inodes) == 0 {
		return false, true
	}
	pids, known := groupPIDs(pgid)
	if !known {
		return false, false
	}
	for _, pid := range pids {
		dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(dir, fd.Name()))
			if err == nil && strings.HasPrefix(link, "socket:[") && inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
				return true, true
			}
		}
	}
	return false, true
}
