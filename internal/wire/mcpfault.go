package wire

// What an MCP fault means lives here, in one table (MCPFaultMeanings): for
// each MCP fault name — the Fault of an MCPFault event — whether the tool
// ran, whether the fault's event ends the call, what the client sees, the
// words a report uses and what a ledger-stdio process does. The ledger, the
// ledger-stdio process, the run, the rules and the reports read the table;
// none of them names a fault to decide what it means.

// MCP fault names: the Fault of an MCPFault event, naming the fault that
// fired (see MCPEvent.IsFault). Each armed one is also its YAML name.
const (
	MCPFaultDelay             = "delay"
	MCPFaultDropAfterExecute  = "drop_after_execute"
	MCPFaultFailBeforeExecute = "fail_before_execute"
	// MCPFaultIsError answered the call with an isError result; it is
	// also the Fault of that MCPResult.
	MCPFaultIsError     = "is_error"
	MCPFaultChangeTools = "change_tools"
	// MCPFaultExpireSession forgot the call's session before it ran (404).
	MCPFaultExpireSession = "expire_session"
	// MCPFaultExpireSessionAfterExecute forgot the call's session after it
	// ran and closed the connection before the answer: the ambiguous case.
	MCPFaultExpireSessionAfterExecute = "expire_session_after_execute"
	// MCPFaultUnauthorized refused the call with 401.
	MCPFaultUnauthorized = "unauthorized"
	// MCPFaultDuplicateAnswer wrote the event answering the call twice on
	// its POST's stream; the call ran once.
	MCPFaultDuplicateAnswer = "duplicate_answer"
	// MCPFaultStdioExitAtStart made a ledger-stdio process exit as it
	// started, before serving (a crash loop when it fires N times).
	MCPFaultStdioExitAtStart = "stdio_exit_at_start"
	// MCPFaultStdioExitBeforeExecute made the ledger-stdio process carrying
	// the call exit before the call ran: nothing was written.
	MCPFaultStdioExitBeforeExecute = "stdio_exit_before_execute"
	// MCPFaultStdioExitAfterExecute made the ledger-stdio process carrying
	// the call exit after the call ran, before its answer: the ambiguous
	// case over stdio.
	MCPFaultStdioExitAfterExecute = "stdio_exit_after_execute"
	// MCPFaultStdioExitAfterAnswer made the ledger-stdio process exit right
	// after it answered the call.
	MCPFaultStdioExitAfterAnswer = "stdio_exit_after_answer"
	// MCPFaultStdioHang made the ledger-stdio process stop answering after
	// the call ran: the call's outcome is unknown to the client.
	MCPFaultStdioHang = "stdio_hang"
	// MCPFaultStdioMalformedLine made the ledger-stdio process write a line
	// that is not JSON-RPC on stdout after the call ran, before its answer.
	MCPFaultStdioMalformedLine = "stdio_malformed_line"
	// MCPFaultInputRequired answered the call with an input-required result
	// (MRTR) before the tool ran: the client is to retry it with its
	// answers and the request state, and that retry runs it.
	MCPFaultInputRequired = "input_required"
	// MCPFaultInputRequiredAfterExecute ran the tool, then answered the call
	// with an input-required result, so its retry runs it again: a server
	// bug.
	MCPFaultInputRequiredAfterExecute = "input_required_after_execute"
	// MCPFaultWriteFailed is the ledger's own failure to persist a write,
	// not an armed fault: the Fault of the MCPFault event and of the
	// MCPResult of that call, counted in MCPCounts.WriteFailures.
	MCPFaultWriteFailed = "write_failed"
	// MCPFaultCancelledBeforeCommit is a write tool's call whose client
	// gave up (its stream closed, or it cancelled the call) before the
	// write committed, on a ledger that honours cancellation
	// (ledger.Config.HonourCancellation): nothing was written. Not an armed
	// fault.
	MCPFaultCancelledBeforeCommit = "cancelled_before_commit"
	// MCPFaultForwardUnknown is a forwarding ledger's call whose answer
	// never came back from the real MCP server (its connection broke, or the
	// client gave up first): the call may have run. Not an armed fault.
	MCPFaultForwardUnknown = "forward_unknown"
	// MCPFaultCassetteMiss is a call a forwarding ledger replaying an MCP
	// cassette could not answer: no recorded call of the tool has its
	// arguments. It ran nothing and was answered with a JSON-RPC error
	// naming it; counted in MCPCounts.CassetteMisses. Not an armed fault.
	MCPFaultCassetteMiss = "cassette_miss"
	// MCPFaultForwardServerGone is a call a forwarding ledger refused
	// because the real server's process had already exited: nothing ran,
	// and it was answered with a JSON-RPC error naming the exit; counted in
	// MCPCounts.ServerGone. Not an armed fault.
	MCPFaultForwardServerGone = "forward_server_gone"
)

// ToolRan says whether a tools/call's tool ran, as a fault left it.
type ToolRan int

// Whether the tool ran.
const (
	// ToolRanYes: the tool ran (or its handler answered in its place, as
	// is_error does), and the client can tell from its answer.
	ToolRanYes ToolRan = iota
	// ToolRanNo: the call was refused before the tool ran (or there was no
	// call, as for a process that exits as it starts): nothing ran.
	ToolRanNo
	// ToolRanUnknown: the tool ran, or may have, and the client cannot tell:
	// the ambiguous case, where re-sending the call may replay it.
	ToolRanUnknown
)

// MCPClientSees is what the client of a tools/call sees when a fault fires
// on it.
type MCPClientSees int

// What the client sees.
const (
	// ClientSeesAnswer: the tool's answer.
	ClientSeesAnswer MCPClientSees = iota
	// ClientSeesLateAnswer: the tool's answer, held back.
	ClientSeesLateAnswer
	// ClientSeesAnswerTwice: the event carrying the answer, twice.
	ClientSeesAnswerTwice
	// ClientSeesIsError: a tool result with isError set.
	ClientSeesIsError
	// ClientSeesRPCError: a JSON-RPC error.
	ClientSeesRPCError
	// ClientSeesHTTPError: an HTTP error status, or a reset connection.
	ClientSeesHTTPError
	// ClientSeesUnauthorized: 401 with a WWW-Authenticate challenge.
	ClientSeesUnauthorized
	// ClientSeesSessionGone: 404 on its session id: it must initialize anew.
	ClientSeesSessionGone
	// ClientSeesNoAnswer: no answer — the connection closes, or the server
	// process exits or hangs, before it.
	ClientSeesNoAnswer
	// ClientSeesStrayLine: a line that is not JSON-RPC on the server's
	// stdout, then the answer.
	ClientSeesStrayLine
	// ClientSeesInputRequired: an input-required result (MRTR) asking for
	// input and carrying a request state, to retry the call with.
	ClientSeesInputRequired
)

// MCPFaultSource says what records an MCP fault.
type MCPFaultSource int

// The sources of MCP faults.
const (
	// FromArmed: an armed fault kind of the ledger (its YAML name names the
	// kind, or a setting of it).
	FromArmed MCPFaultSource = iota
	// FromLedger: the ledger's own failure, not an armed fault.
	FromLedger
	// FromForwarder: a forwarding ledger's record of what became of a
	// forwarded call, not an armed fault.
	FromForwarder
)

// StdioEffect is what a ledger-stdio process does when the ledger directs a
// fault at it (the fault's name in the result's _meta, or in the header that
// refuses its initialize).
type StdioEffect int

// The stdio effects.
const (
	// StdioNone: the fault does not act on a ledger-stdio process.
	StdioNone StdioEffect = iota
	// StdioExitAtStart: the process exits as it starts, before serving.
	StdioExitAtStart
	// StdioExitBeforeAnswer: the process exits instead of writing the answer.
	StdioExitBeforeAnswer
	// StdioExitAfterAnswer: the process writes the answer, then exits.
	StdioExitAfterAnswer
	// StdioHang: the process writes nothing more (this answer included)
	// until its stdin closes or the ledger ends its session.
	StdioHang
	// StdioMalformedLine: the process writes a line that is not JSON-RPC,
	// then the answer.
	StdioMalformedLine
)

// Answered reports whether a process obeying e still writes the answer.
func (e StdioEffect) Answered() bool {
	return e == StdioNone || e == StdioExitAfterAnswer || e == StdioMalformedLine
}

// Exits reports whether a process obeying e exits.
func (e StdioEffect) Exits() bool {
	return e == StdioExitAtStart || e == StdioExitBeforeAnswer || e == StdioExitAfterAnswer
}

// MCPFaultMeaning is what one MCP fault means: one row of MCPFaultMeanings.
type MCPFaultMeaning struct {
	// Name is the fault's name, the Fault of its MCPFault event.
	Name string
	// Source says what records it: an armed kind, the ledger, a forwarder.
	Source MCPFaultSource
	// Ran says whether the tool ran.
	Ran ToolRan
	// EndsCall is set when the fault's event ends the call: the fault
	// answered it (or cut its answer) in place of the tool's answer, so no
	// MCPResult follows.
	EndsCall bool
	// ClientSees is what the client sees.
	ClientSees MCPClientSees
	// Words say what the fault did to the call, for a report's timeline.
	Words string
	// Stdio is what a ledger-stdio process does when directed to carry the
	// fault out (StdioNone for a fault the ledger carries out itself).
	Stdio StdioEffect
}

// MCPFaultMeanings returns the table of MCP faults, one row per name. The
// slice is new on every call.
func MCPFaultMeanings() []MCPFaultMeaning {
	return []MCPFaultMeaning{
		{Name: MCPFaultFailBeforeExecute, Ran: ToolRanNo, EndsCall: true, ClientSees: ClientSeesHTTPError, Words: "refused before the tool ran"},
		{Name: MCPFaultDropAfterExecute, Ran: ToolRanUnknown, EndsCall: true, ClientSees: ClientSeesNoAnswer, Words: "connection dropped after the tool ran"},
		{Name: MCPFaultIsError, Ran: ToolRanYes, ClientSees: ClientSeesIsError, Words: "isError result"},
		{Name: MCPFaultDelay, Ran: ToolRanYes, ClientSees: ClientSeesLateAnswer, Words: "answer delayed"},
		{Name: MCPFaultChangeTools, Ran: ToolRanYes, ClientSees: ClientSeesAnswer, Words: "tool list changed"},
		{Name: MCPFaultExpireSession, Ran: ToolRanNo, EndsCall: true, ClientSees: ClientSeesSessionGone, Words: "session expired before the tool ran (404)"},
		{Name: MCPFaultExpireSessionAfterExecute, Ran: ToolRanUnknown, EndsCall: true, ClientSees: ClientSeesNoAnswer, Words: "session expired after the tool ran, connection closed"},
		{Name: MCPFaultUnauthorized, Ran: ToolRanNo, EndsCall: true, ClientSees: ClientSeesUnauthorized, Words: "refused: 401 unauthorized"},
		{Name: MCPFaultDuplicateAnswer, Ran: ToolRanYes, ClientSees: ClientSeesAnswerTwice, Words: "fault " + MCPFaultDuplicateAnswer},
		{Name: MCPFaultStdioExitAtStart, Ran: ToolRanNo, ClientSees: ClientSeesNoAnswer, Words: "stdio server told to exit as it starts", Stdio: StdioExitAtStart},
		{Name: MCPFaultStdioExitBeforeExecute, Ran: ToolRanNo, ClientSees: ClientSeesNoAnswer, Words: "stdio server told to exit before the tool ran", Stdio: StdioExitBeforeAnswer},
		{Name: MCPFaultStdioExitAfterExecute, Ran: ToolRanUnknown, ClientSees: ClientSeesNoAnswer, Words: "stdio server told to exit after the tool ran, before answering", Stdio: StdioExitBeforeAnswer},
		{Name: MCPFaultStdioExitAfterAnswer, Ran: ToolRanYes, ClientSees: ClientSeesAnswer, Words: "stdio server told to exit after answering", Stdio: StdioExitAfterAnswer},
		{Name: MCPFaultStdioHang, Ran: ToolRanUnknown, ClientSees: ClientSeesNoAnswer, Words: "stdio server told to hang: the answer is never written", Stdio: StdioHang},
		{Name: MCPFaultStdioMalformedLine, Ran: ToolRanUnknown, ClientSees: ClientSeesStrayLine, Words: "stdio server told to write a line that is not JSON-RPC before the answer", Stdio: StdioMalformedLine},
		{Name: MCPFaultInputRequired, Ran: ToolRanNo, ClientSees: ClientSeesInputRequired, Words: "input-required result before the tool ran (the retry runs it)"},
		{Name: MCPFaultInputRequiredAfterExecute, Ran: ToolRanYes, ClientSees: ClientSeesInputRequired, Words: "the tool ran, then an input-required result (the retry runs it again)"},
		{Name: MCPFaultWriteFailed, Source: FromLedger, Ran: ToolRanYes, ClientSees: ClientSeesIsError, Words: "the write failed"},
		{Name: MCPFaultCancelledBeforeCommit, Source: FromLedger, Ran: ToolRanNo, EndsCall: true, ClientSees: ClientSeesNoAnswer, Words: "the client gave up before the write committed: nothing was written (cancellation honoured)"},
		{Name: MCPFaultForwardUnknown, Source: FromForwarder, Ran: ToolRanUnknown, ClientSees: ClientSeesNoAnswer, Words: "the server's answer never came back — unknown whether it ran"},
		{Name: MCPFaultCassetteMiss, Source: FromForwarder, Ran: ToolRanNo, ClientSees: ClientSeesRPCError, Words: "fault " + MCPFaultCassetteMiss},
		{Name: MCPFaultForwardServerGone, Source: FromForwarder, Ran: ToolRanNo, ClientSees: ClientSeesRPCError, Words: "fault " + MCPFaultForwardServerGone},
	}
}

// MCPFaultMeaningOf returns the row of the MCP fault called name, and
// whether there is one; an unknown name (a newer history's) means nothing:
// the zero row, with Words "fault " + name.
func MCPFaultMeaningOf(name string) (MCPFaultMeaning, bool) {
	for _, m := range MCPFaultMeanings() {
		if m.Name == name {
			return m, true
		}
	}
	return MCPFaultMeaning{Name: name, Words: "fault " + name}, false
}

// FaultMeaning returns what the fault e records means, when e is the firing
// of an MCP fault (an MCPFault event) with a row in MCPFaultMeanings.
func (e MCPEvent) FaultMeaning() (MCPFaultMeaning, bool) {
	if e.Kind != MCPFault {
		return MCPFaultMeaning{}, false
	}
	return MCPFaultMeaningOf(e.Fault)
}
