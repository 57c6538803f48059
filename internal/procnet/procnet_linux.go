package procnet

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Sockets returns the TCP sockets of the caller's network namespace in
// states (see States), IPv4 and IPv6: through sock_diag, or where that is
// refused, from /proc/net/tcp and /proc/net/tcp6.
func Sockets(states uint32) ([]Socket, error) {
	v4, err := diag(syscall.AF_INET, states)
	if err == nil {
		var v6 []Socket
		if v6, err = diag(syscall.AF_INET6, states); err == nil {
			return append(v4, v6...), nil
		}
	}
	var all []Socket
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		socks, err := read(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, s := range socks {
			if states&(1<<s.State) != 0 {
				all = append(all, s)
			}
		}
	}
	return all, nil
}

// read parses one table: a header, then one socket a line,
// "sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode …"
// with the address as hex IP:PORT and the state in hex.
func read(file string) ([]Socket, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var socks []Socket
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		i := strings.LastIndexByte(fields[1], ':')
		port, err1 := strconv.ParseInt(fields[1][i+1:], 16, 32)
		state, err2 := strconv.ParseInt(fields[3], 16, 32)
		if i < 0 || err1 != nil || err2 != nil {
			continue
		}
		socks = append(socks, Socket{LocalPort: int(port), State: int(state), Inode: fields[9]})
	}
	return socks, sc.Err()
}
