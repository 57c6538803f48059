package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// offerTools lists the MCP server's tools when the app offered the server;
// a failure to list is an attempt failure before any dispatch.
func (g *Gateway) offerTools(ctx context.Context, req *appRequest) ([]modelTool, error) {
	if !req.UseMCP {
		return nil, nil
	}
	tools, err := g.listTools(ctx)
	if err != nil {
		return nil, &mcpListError{label: g.cfg.ServerLabel, err: err}
	}
	return tools, nil
}

// mcpListError is an attempt that could not list the MCP server's tools.
type mcpListError struct {
	label string
	err   error
}

func (e *mcpListError) Error() string {
	return fmt.Sprintf("MCP server '%s' did not list its tools: %v", e.label, e.err)
}

func (e *mcpListError) Unwrap() error { return e.err }

// attempt runs the whole tool loop once, non-streamed: list the tools, call
// the model, run its MCP tool calls, send the follow-up with the results,
// and repeat until the model answers without calling the gateway's tools.
func (g *Gateway) attempt(ctx context.Context, rs *requestState, at *attemptState) (*modelTurn, error) {
	return g.toolLoop(ctx, rs, at, false, func(ctx context.Context, conv conversation, body []byte) (*modelTurn, error) {
		raw, err := g.callModel(ctx, conv.path(), body)
		if err != nil {
			return nil, err
		}
		turn, err := conv.parse(raw)
		if err != nil {
			return nil, badAnswer(conv.path(), err)
		}
		return turn, nil
	})
}

// toolLoop runs the tool loop of one attempt: it offers the MCP tools (the
// current list in every round),
// renders each model API call (stream asks for a streamed answer), gets the
// model's turn from callModel and runs the gateway's tool calls of that
// turn, until the model answers without calling them or maxToolRounds is
// reached. It returns that last turn. With RunToolsFromCutStream the
// complete tool calls of a cut stream run and the same call is sent again.
func (g *Gateway) toolLoop(ctx context.Context, rs *requestState, at *attemptState, stream bool,
	callModel func(ctx context.Context, conv conversation, body []byte) (*modelTurn, error)) (*modelTurn, error) {
	tools, err := g.offerTools(ctx, rs.req)
	if err != nil {
		return nil, err
	}
	conv := rs.d.conversation(rs.req)
	model := g.cfg.upstreamModel(at.group)
	for round := 0; ; round++ {
		if round > 0 && rs.req.UseMCP {
			// The server may have changed its tools since the last round
			// (notifications/tools/list_changed): offer the current list.
			// A failure to list keeps the last one.
			if fresh, err := g.listTools(ctx); err == nil {
				tools = fresh
			}
		}
		body, err := conv.body(model, tools, stream)
		if err != nil {
			return nil, &upstreamError{Status: http.StatusInternalServerError, Message: "rendering the model API call: " + err.Error(), Err: err}
		}
		turn, err := callModel(ctx, conv, body)
		var cut *cutStream
		if errors.As(err, &cut) && g.cfg.Bugs.Has(RunToolsFromCutStream) && ctx.Err() == nil &&
			ours(&modelTurn{Calls: cut.calls}, tools) && round < maxToolRounds {
			g.runToolsFromCutStream(ctx, rs, at, cut, tools)
			continue
		}
		if err != nil {
			return nil, err
		}
		if !ours(turn, tools) || round >= maxToolRounds {
			return turn, nil
		}
		conv.add(turn, g.runTools(ctx, rs, at, turn.Calls, tools))
	}
}

// runToolsFromCutStream is RunToolsFromCutStream: it runs the complete tool
// calls of a cut stream and drops their results, so the tool loop sends the
// same model call again without them. The calls count as dispatched, but
// not as logical actions: the call the model makes again gets the same
// idempotency key.
func (g *Gateway) runToolsFromCutStream(ctx context.Context, rs *requestState, at *attemptState, cut *cutStream, tools []modelTool) {
	g.cfg.Logger.Warn("stream cut after its tool calls; running them and sending the model call again",
		"request", rs.id, "attempt", at.number, "calls", len(cut.calls), "err", cut.err)
	n := at.calls
	g.runTools(ctx, rs, at, cut.calls, tools)
	at.calls = n
}
