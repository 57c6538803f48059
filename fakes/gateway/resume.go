package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// beginTurn gives rs a turn in the checkpoint and records its app request
// there; nothing without a checkpoint.
func (g *Gateway) beginTurn(rs *requestState, path string, body []byte) error {
	if g.ckpt == nil {
		return nil
	}
	rs.turn = fmt.Sprintf("%s-%d", g.instance, rs.seq)
	return g.ckpt.write(CheckpointRecord{Turn: rs.turn, Path: path, Body: json.RawMessage(body)})
}

// route runs the attempts of rs (routeAttempts) and records the end of its
// turn in the checkpoint: with CheckpointAtTurnEnd, the turn's calls first.
func (g *Gateway) route(ctx context.Context, rs *requestState, run attemptFunc) (*modelTurn, error) {
	turn, err := g.routeAttempts(ctx, rs, run)
	if g.ckpt == nil || rs.turn == "" {
		return turn, err
	}
	for _, c := range rs.unsaved {
		g.saveCall(rs, c)
	}
	rs.unsaved = nil
	end := CheckpointRecord{Turn: rs.turn, End: true, Resumed: rs.restored != nil}
	if err != nil {
		end.Error = err.Error()
	} else if turn != nil {
		end.Answer = turn.Text
	}
	if werr := g.ckpt.write(end); werr != nil {
		g.cfg.Logger.Error("checkpointing the end of a turn", "request", rs.id, "err", werr)
	}
	return turn, err
}

// callSent records in the checkpoint that the index-th call of rs's turn
// is about to be sent, unless CheckpointAtTurnEnd defers it.
func (g *Gateway) callSent(rs *requestState, index int, tool string) {
	if g.ckpt == nil || rs.turn == "" || g.cfg.Bugs.Has(CheckpointAtTurnEnd) {
		return
	}
	g.saveCall(rs, CheckpointCall{Index: index, Tool: tool})
}

// callDone records the output of the index-th call of rs's turn before
// the model gets it; with CheckpointAtTurnEnd it is kept for the turn's
// end.
func (g *Gateway) callDone(rs *requestState, index int, tool, output string) {
	if g.ckpt == nil || rs.turn == "" {
		return
	}
	c := CheckpointCall{Index: index, Tool: tool, Output: output, Done: true}
	if g.cfg.Bugs.Has(CheckpointAtTurnEnd) {
		rs.unsaved = append(rs.unsaved, c)
		return
	}
	g.saveCall(rs, c)
}

// saveCall writes c of rs's turn to the checkpoint, logging a failure.
func (g *Gateway) saveCall(rs *requestState, c CheckpointCall) {
	if err := g.ckpt.write(CheckpointRecord{Turn: rs.turn, Call: &c}); err != nil {
		g.cfg.Logger.Error("checkpointing a tool call", "request", rs.id, "tool", c.Tool, "err", err)
	}
}

// restoredOutput returns what the model is told of the index-th call of a
// resumed turn, from its checkpoint, and whether the checkpoint holds the
// call: its output when it was answered, an unknown outcome when it was
// sent and the gateway died before its answer (it is not sent again).
func (rs *requestState) restoredOutput(index int, tool, label string) (string, bool) {
	c, ok := rs.restored[index]
	if !ok || c.Tool != tool {
		return "", false
	}
	if c.Done {
		return c.Output, true
	}
	return fmt.Sprintf("MCP tool call %s: outcome unknown. The gateway was stopped after sending it to MCP server '%s' and before its answer came back, so it may have run; the resumed gateway did not send it again. Check before calling it again.", tool, label), true
}

// ResumedTurn is a pending turn a resumed gateway finished: its final
// answer's text, or the error that ended it.
type ResumedTurn struct {
	ID     string
	Answer string
	Err    error
}

// Resume continues the turns the checkpoint holds as pending (begun, not
// ended: the gateway that ran them was killed), one after another,
// non-streamed, as the requests they began with: a call whose checkpoint
// holds its output is not sent again, one sent without an output is
// reported to the model as of unknown outcome (see CheckpointAtTurnEnd for
// the gateway that checkpoints late). Each turn's end is recorded. Without
// a checkpoint it resumes nothing.
func (g *Gateway) Resume(ctx context.Context) ([]ResumedTurn, error) {
	if g.ckpt == nil {
		return nil, nil
	}
	turns, err := ReadCheckpoint(g.ckpt.path)
	if err != nil {
		return nil, err
	}
	var out []ResumedTurn
	for _, t := range Pending(turns) {
		d, ok := g.routes[t.Path]
		if !ok {
			return out, fmt.Errorf("resuming turn %s: unknown endpoint %s", t.ID, t.Path)
		}
		req, err := parseAppRequest(d, g.cfg.ServerLabel, t.Body)
		if err != nil {
			return out, fmt.Errorf("resuming turn %s: %w", t.ID, err)
		}
		req.Stream = false // no app is there to stream to
		seq := g.seq.Add(1)
		rs := &requestState{id: fmt.Sprintf("req-%d", seq), seq: seq, req: req, d: d, turn: t.ID, restored: t.Calls}
		g.cfg.Logger.Info("resuming turn", "request", rs.id, "turn", t.ID, "checkpointed_calls", len(t.Calls))
		turn, err := g.route(ctx, rs, func(ctx context.Context, at *attemptState) (*modelTurn, error) {
			return g.attempt(ctx, rs, at)
		})
		r := ResumedTurn{ID: t.ID, Err: err}
		if turn != nil {
			r.Answer = turn.Text
		}
		out = append(out, r)
		if errors.Is(ctx.Err(), context.Canceled) {
			return out, ctx.Err()
		}
	}
	return out, nil
}
