package upstream

import "github.com/replaycheck/replaycheck/fakes/fault"

// Probes returns the upstream fault kinds as explore sweeps them, in sweep
// order. The slice is new on every call.
func Probes() []fault.Probe[Fault] {
	status := func(code int, headers map[string]string, doc string) func(fault.Spot, fault.Settings) Fault {
		return func(fault.Spot, fault.Settings) Fault {
			return Fault{Respond: &Respond{Status: code, Headers: headers, Message: "replaycheck explore: " + doc}}
		}
	}
	return []fault.Probe[Fault]{
		{Name: "500", Doc: "answer 500", At: fault.AtRequest, Build: status(500, nil, "injected 500")},
		{Name: "502", Doc: "answer 502", At: fault.AtRequest, Build: status(502, nil, "injected 502")},
		{Name: "503", Doc: "answer 503", At: fault.AtRequest, Build: status(503, nil, "injected 503")},
		{Name: "529", Doc: "answer 529 (overloaded)", At: fault.AtRequest, Build: status(529, nil, "injected 529")},
		{Name: "429", Doc: "answer 429 without Retry-After", At: fault.AtRequest, Build: status(429, nil, "injected 429")},
		{Name: "429-retry-after", Doc: "answer 429 with Retry-After: 1", At: fault.AtRequest, Build: status(429, map[string]string{"Retry-After": "1"}, "injected 429 with Retry-After")},
		{Name: "500-no-retry", Doc: "answer 500 with x-should-retry: false", At: fault.AtRequest, Build: status(500, map[string]string{"x-should-retry": "false"}, "injected 500, x-should-retry false")},
		{Name: "400", Doc: "answer 400 (not retryable)", At: fault.AtRequest, Build: status(400, nil, "injected 400")},
		{Name: "408", Doc: "answer 408", At: fault.AtRequest, Build: status(408, nil, "injected 408")},
		{Name: "reset", Doc: "reset the connection before any byte", At: fault.AtRequest, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{Reset: true}
		}},
		{Name: "stall", Doc: "hold the answer back for --stall, then answer", Optional: true, At: fault.AtRequest, Build: func(_ fault.Spot, s fault.Settings) Fault {
			d := fault.Duration(s.Stall)
			return Fault{Delay: &d}
		}},
		{Name: "drop", Doc: "cut the stream at this point", At: fault.AtCut, Build: func(p fault.Spot, _ fault.Settings) Fault {
			return Fault{Drop: dropAt(p)}
		}},
		{Name: "drop-linger", Doc: "cut the stream at this point after --linger of silence", At: fault.AtCut, Build: func(p fault.Spot, s fault.Settings) Fault {
			d := dropAt(p)
			d.Linger = fault.Duration(s.Linger)
			return Fault{Drop: d}
		}},
		{Name: "stream-error", Doc: "end the 200 stream at this point with the dialect's in-stream error (overloaded_error, server_error)", At: fault.AtCut, Build: func(p fault.Spot, _ fault.Settings) Fault {
			d := dropAt(p)
			return Fault{StreamError: &StreamError{After: d.After, Events: d.Events, Message: "replaycheck explore: injected stream error"}}
		}},
		{Name: "stream-stall", Doc: "hold the stream silent at this point for --stall, then resume", Optional: true, At: fault.AtCut, Build: func(p fault.Spot, s fault.Settings) Fault {
			d := dropAt(p)
			return Fault{Stall: &Stall{After: d.After, Events: d.Events, For: fault.Duration(s.Stall)}}
		}},
		{Name: "stream-hang", Doc: "hold the stream silent at this point until the client gives up", Optional: true, At: fault.AtCut, Build: func(p fault.Spot, _ fault.Settings) Fault {
			d := dropAt(p)
			return Fault{Stall: &Stall{After: d.After, Events: d.Events, Forever: true}}
		}},
		{Name: "dribble", Doc: "wait --dribble before each event of the stream", Optional: true, At: fault.AtStream, Build: func(_ fault.Spot, s fault.Settings) Fault {
			d := fault.Duration(s.Dribble)
			return Fault{Dribble: &d}
		}},
		{Name: "serve-model", Doc: "answer normally, but naming another model than requested (a silent fallback)", At: fault.AtRequest, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{ServeModel: "replaycheck-fallback"}
		}},
	}
}

// dropAt is the drop that cuts a stream at p: after the headers, right
// after the tool call, or after p.Event events.
func dropAt(p fault.Spot) *Drop {
	switch {
	case p.Event == 0:
		return &Drop{After: DropAfterHeaders}
	case p.Event == p.ContentEvents && p.ContentEvents > 0:
		return &Drop{After: DropAfterToolCall}
	default:
		return &Drop{After: DropAfterEvents, Events: p.Event}
	}
}
