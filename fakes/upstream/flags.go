package upstream

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// Flag files of the seed rig, read from Config.FlagsDir on every follow-up.
const (
	// FlagFaultOn: while it exists every follow-up gets the injected 500.
	FlagFaultOn = "fault_on"
	// FlagFaultOnce: the next follow-up gets the injected 500 and the file is removed.
	FlagFaultOnce = "fault_once"
	// FlagDropStream: while it exists a streamed follow-up gets its headers, then the connection closes.
	FlagDropStream = "drop_stream"
)

// flagFault returns the fault the flags dir arms for this request, and a
// label naming the flag, exactly as the seed's forwarder.py: fault_on or
// fault_once (removed by the request it fires on; of concurrent requests only
// the one that removes it fires) give a follow-up the 500 with the message
// "injected follow-up failure"; drop_stream drops a streamed follow-up after
// its headers. Flag files are checked before armed faults; a flag that fires
// takes the request, and armed faults do not count it as an occurrence.
func (s *Server) flagFault(x *exchange) (*Fault, string) {
	dir := s.cfg.FlagsDir
	if dir == "" || x.kind != wire.KindFollowUp {
		return nil, ""
	}
	inject := &Fault{On: wire.KindFollowUp, Respond: &Respond{Status: 500, Message: "injected follow-up failure"}}
	if fileExists(filepath.Join(dir, FlagFaultOn)) {
		// forwarder.py unlinks fault_once on every injected 500, so an
		// injection under fault_on consumes it too.
		_ = os.Remove(filepath.Join(dir, FlagFaultOnce)) // absent is the usual case
		return inject, "flag " + FlagFaultOn
	}
	if err := os.Remove(filepath.Join(dir, FlagFaultOnce)); err == nil {
		return inject, "flag " + FlagFaultOnce
	}
	if x.req.Stream && fileExists(filepath.Join(dir, FlagDropStream)) {
		return &Fault{On: wire.KindFollowUp, Drop: &Drop{After: DropAfterHeaders}}, "flag " + FlagDropStream
	}
	return nil, ""
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}
