package process

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of /proc/PID/stat's CPU times: clock ticks, which
// Linux shows user space at 100 a second on every architecture.
const userHZ = 100

// statFields returns the fields of /proc/PID/stat after the command name:
// state, ppid, pgrp, …
func statFields(pid int) ([]string, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, false
	}
	// pid (comm) state ppid pgrp …; comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil, false
	}
	return strings.Fields(string(b[i+1:])), true
}

// procStat returns the parent and the process group of pid from
// /proc/PID/stat.
func procStat(pid int) (ppid, pgrp int, ok bool) {
	fields, ok := statFields(pid)
	if !ok || len(fields) < 3 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(fields[1])
	pgrp, err2 := strconv.Atoi(fields[2])
	return ppid, pgrp, err1 == nil && err2 == nil
}

// cpuTime returns the CPU time pid has used, in user and kernel mode
// (/proc/PID/stat's utime and stime); known is false when /proc cannot say.
func cpuTime(pid int) (d time.Duration, known bool) {
	fields, ok := statFields(pid)
	if !ok || len(fields) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseUint(fields[11], 10, 64)
	stime, err2 := strconv.ParseUint(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * time.Second / userHZ, true
}
