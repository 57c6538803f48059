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

// groupPIDs returns the processes of the group led by pgid, and the
// descendants of its leader that a wrapper moved to a group of their own,
// as /proc shows them; known is false when /proc cannot be read.
func groupPIDs(pgid int) (pids []int, known bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, false
	}
	parent := map[int]int{}
	group := map[int]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, pg, ok := procStat(pid); ok {
			parent[pid], group[pid] = ppid, pg
		}
	}
	ours := func(pid int) bool {
		if group[pid] == pgid {
			return true
		}
		for seen := 0; pid > 1 && seen < len(parent); seen++ {
			if pid == pgid {
				return true
			}
			pid = parent[pid]
		}
		return false
	}
	for pid := range parent {
		if ours(pid) {
			pids = append(pids, pid)
		}
	}
	return pids, true
}

// runDelay returns how long pid's main thread has waited for a CPU while
// runnable (/proc/PID/schedstat's second field); known is false when the
// system does not say.
func runDelay(pid int) (d time.Duration, known bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "schedstat"))
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(b))
	if len(fields) < 2 {
		return 0, false
	}
	ns, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return time.Duration(ns), true
}

// groupRunDelay returns the longest any live process of the group led by
// pgid (see groupPIDs) has waited for a CPU while runnable; known is false
// when the system cannot say for any of them.
func groupRunDelay(pgid int) (d time.Duration, known bool) {
	pids, ok := groupPIDs(pgid)
	if !ok {
		return 0, false
	}
	for _, pid := range pids {
		if w, ok := runDelay(pid); ok {
			d, known = max(d, w), true
		}
	}
	return d, known
}
