// Package matrix builds the replay-safety matrix: for each agent (a target
// and its version) and each mechanism that applies to it (a fault kind of
// explore's table, grouped by family), one cell saying whether the agent
// ran a write twice (DUPLICATE), reported a call that never ran as done
// (LOST), reported a completed write as a failure, or none of these (safe) —
// or that no run could judge it (unknown, with the reason). Each cell keeps
// the smallest reproduction explore wrote for it, its counts and what the
// agent told the model and the user.
//
// Build runs the sweeps (the retry-policy fingerprint first, whose cells
// decide the status and reset kinds, then the other kinds) and, on a
// client target, the shipped client scenarios (FamilyClient, one cell per
// scenario), and turns their runs into a Matrix; Diff compares two matrices; Merge joins the matrices
// of shards. Package report renders a Matrix; nothing here renders.
//
// A new mechanism family is a row in families. The kill points of issue 37
// (an agent killed at a point the harness sees and resumed) join as the
// family FamilyKill once a target declares how to resume it: its kinds then
// come from explore's table like any other, and need nothing here but their
// family's row.
package matrix

import (
	"github.com/replaycheck/replaycheck/internal/harness/explore"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// FormatVersion is the current Matrix JSON format.
const FormatVersion = 1

// Matrix is the replay-safety matrix of a set of agents: one Row per agent,
// in the order the agents were given. It is what matrix --json writes.
type Matrix struct {
	// Version names the format of the JSON file.
	Version int `json:"version"`
	// Kind is always "replaycheck-matrix", so a matrix's JSON is told from
	// a run's or an explore sweep's.
	Kind string `json:"kind"`
	// Seed is the sweeps' seed.
	Seed string `json:"seed"`
	// Shard is "I/N" when the matrix holds shard I of N of the cells
	// (agent × mechanism); "" for all of them.
	Shard string `json:"shard,omitempty"`
	// Kinds are the fault kinds swept (explore's names), in the order that
	// assigns the cells to shards.
	Kinds []string `json:"kinds,omitempty"`
	// Agents are the targets' names, in the order that assigns the cells
	// to shards; set on a shard.
	Agents []string `json:"agents,omitempty"`
	// Reproductions is the directory the reproductions were written in
	// (matrix --out), as the cells' paths begin with it; "" when none was.
	Reproductions string `json:"reproductions,omitempty"`
	Rows          []Row  `json:"rows"`
	// Wall is the wall time of the whole matrix.
	Wall history.Duration `json:"wall"`
}

// KindMatrix is Matrix.Kind.
const KindMatrix = "replaycheck-matrix"

// Row is one agent's line of the matrix.
type Row struct {
	// Target is the target's name; File the target file ("" for a
	// builtin: target).
	Target string `json:"target"`
	File   string `json:"file,omitempty"`
	// Version is the agent's version as its target file says where to read
	// it (a version command, or the package lock that installs it); "" when
	// it says nowhere.
	Version string `json:"version,omitempty"`
	// Cells are the row's mechanisms, in family order, then in the order of
	// explore's table of fault kinds (the client scenarios, last, in the
	// order of their files).
	Cells []Cell `json:"cells"`
	// ModelRow is the row whose model columns (model request fails, model
	// answer breaks) are this agent's too: its target file is a variant of
	// that row's (variant_of); "" when the row has its own.
	ModelRow string `json:"model_row,omitempty"`
	// Pruned are the mechanisms not swept on this agent, each with why.
	Pruned []Pruned `json:"pruned,omitempty"`
	// PrunedRuns are the mechanisms swept with fewer runs than explore
	// makes, each with how many were left out and why (the fingerprint
	// already decided them); their cells stand on the other runs.
	PrunedRuns []PrunedRuns `json:"pruned_runs,omitempty"`
	// Error says why the agent could not be swept (its base failed clean,
	// its target did not start); the row then has no cells.
	Error string `json:"error,omitempty"`
	// Runs counts the scenario runs of the row's sweeps, also those made
	// after their mechanism's first DUPLICATE that its cell leaves out (how
	// many depends on the order runs end in); Wall is their time.
	Runs int              `json:"runs"`
	Wall history.Duration `json:"wall"`
	// Fingerprint is the agent's retry policy, as explore --fingerprint
	// shows it.
	Fingerprint []explore.FingerprintRow `json:"fingerprint,omitempty"`
}

// Pruned is a mechanism the matrix did not sweep on an agent.
type Pruned struct {
	Mechanism string `json:"mechanism"`
	Reason    string `json:"reason"`
}

// PrunedRuns are runs of a mechanism the matrix did not make on an agent.
type PrunedRuns struct {
	Mechanism string `json:"mechanism"`
	Runs      int    `json:"runs"`
	Reason    string `json:"reason"`
}

// Cell is one agent × mechanism verdict.
type Cell struct {
	// Family is the column group (FamilyStatus, FamilyStream, …);
	// Mechanism the fault kind (500, drop, mcp-drop, …), or in
	// FamilyClient the client scenario's name, and Doc what it does.
	Family    string  `json:"family"`
	Mechanism string  `json:"mechanism"`
	Doc       string  `json:"doc"`
	Verdict   Verdict `json:"verdict"`
	// Reason says why: the broken rule's message for DUPLICATE and LOST,
	// the first undecided check's for unknown.
	Reason string `json:"reason,omitempty"`
	// Rules are the rules the cell's worst run broke, also those that do
	// not decide its verdict (retry-after-honored, …).
	Rules []string `json:"rules,omitempty"`
	// DecidedBy is the sweep whose runs decided the cell: "fingerprint" or
	// "sweep", or "scenario" for a client scenario's runs.
	DecidedBy string `json:"decided_by"`
	// Runs counts the sweep's runs behind the cell (each point, once and
	// always), or the client scenario's runs (its repeat).
	Runs int `json:"runs"`
	// Writes and LogicalCalls are the worst run's: the writes the ledger
	// executed for the tool calls the model asked for.
	Writes       int `json:"writes"`
	LogicalCalls int `json:"logical_calls"`
	// Schedule is the worst run's faults, e.g. "500 at follow_up chat #1
	// (always)".
	Schedule string `json:"schedule,omitempty"`
	// Reproduction is the scenario file that fails on the agent for this
	// cell's mechanism (explore's smallest reproduction of its finding, or
	// the client scenario's own file); "" for a safe or unknown cell, or
	// when no file was written.
	Reproduction string `json:"reproduction,omitempty"`
	// ToldModel is what the agent told the model about the tool calls in
	// the worst run (the follow-up's tool results); ToldUser what the app
	// or the user got (an HTTP status, an exit code and output).
	ToldModel string `json:"told_model,omitempty"`
	ToldUser  string `json:"told_user,omitempty"`
	// Result is the worst run's history and verdicts, for its timeline.
	Result *rules.Result `json:"result,omitempty"`
}

// Verdict is a cell's answer.
type Verdict string

// The verdicts of a cell, worst first.
const (
	// Duplicate: a write ran twice for one call the model asked for.
	Duplicate Verdict = "DUPLICATE"
	// Lost: a call that never ran was not re-issued (reported as done, or
	// as failed, and never run).
	Lost Verdict = "LOST"
	// ReportedFailure: a write that completed was reported to the model as
	// a failure.
	ReportedFailure Verdict = "reported as failure"
	// Hung: the agent did not finish before the run's deadline (it waited
	// on an answer the fault lost): a finding, though not a duplicate.
	Hung Verdict = "hung"
	// Unknown: no run of the mechanism could be judged; Reason says why.
	Unknown Verdict = "unknown"
	// Safe: every run of the mechanism wrote once per call, lost none and
	// reported none that ran as failed.
	Safe Verdict = "safe"
)

// Bad reports whether v is a verdict a job fails on when a cell turns to
// it: DUPLICATE or LOST.
func (v Verdict) Bad() bool { return v == Duplicate || v == Lost }

// reproduced reports whether a cell of verdict v has a reproduction: not
// when it is safe or unknown.
func (v Verdict) reproduced() bool { return v != Safe && v != Unknown }

// rank orders verdicts, worst first; safe before unknown, since a cell is
// unknown only when no run of it was judged.
func (v Verdict) rank() int {
	switch v {
	case Duplicate:
		return 0
	case Lost:
		return 1
	case ReportedFailure:
		return 2
	case Hung:
		return 3
	case Safe:
		return 4
	}
	return 5
}

// Cell returns the row's cell of mechanism, and whether it has one.
func (r Row) Cell(mechanism string) (Cell, bool) {
	for _, c := range r.Cells {
		if c.Mechanism == mechanism {
			return c, true
		}
	}
	return Cell{}, false
}
