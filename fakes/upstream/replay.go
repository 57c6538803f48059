package upstream

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/tidwall/gjson"

	"github.com/replaycheck/replaycheck/fakes/upstream/cassette"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// What a replay does with a request no cassette entry matches (Config.Miss).
const (
	// MissError answers 404 in the dialect's error shape, naming the
	// closest entry and what differs, recorded as cassette_miss.
	MissError = "error"
	// MissRelay relays the request (Config.Relay) and records the exchange
	// (Config.Record), which later requests then match.
	MissRelay = "relay"
)

// checkReplay reports a replay configuration that cannot work.
func checkReplay(cfg *Config) error {
	switch cfg.Miss {
	case "", MissError:
	case MissRelay:
		if cfg.Cassette == nil || cfg.Relay == "" {
			return fmt.Errorf("upstream: miss %q needs a cassette and a relay URL", MissRelay)
		}
	default:
		return fmt.Errorf("upstream: miss %q: want %s or %s", cfg.Miss, MissError, MissRelay)
	}
	if cfg.Record != nil && cfg.Relay == "" {
		return errors.New("upstream: recording needs a relay URL: only relayed exchanges are recorded")
	}
	return nil
}

// cassetteRequest is the exchange's request as a cassette keys it: each
// item of the dialect's conversation fields and the tool definitions,
// hashed in a canonical form (object keys sorted, whitespace dropped), so a
// client that orders keys differently still matches. When the body carries
// the exchange's run token, the token is hashed as cassette.TokenPlaceholder
// and named in Token, so the same conversation matches in a run with
// another token (a prompt with {{entry}}, the tool call and result that
// repeat it).
func (x *exchange) cassetteRequest() cassette.Request {
	r := cassette.Request{
		Dialect:  x.de.name,
		Kind:     x.kind,
		Model:    x.req.Model,
		Stream:   x.req.Stream,
		Tools:    offeredNames(x.req.Tools),
		Messages: []string{},
	}
	if x.token != "" && bytes.Contains(x.body, []byte(x.token)) {
		r.Token = x.token
	}
	canonical := func(raw string) []byte {
		b := wire.CanonicalJSON([]byte(raw))
		if r.Token != "" {
			b = bytes.ReplaceAll(b, []byte(r.Token), []byte(cassette.TokenPlaceholder))
		}
		return b
	}
	root := gjson.ParseBytes(x.body)
	var tools []byte
	for _, f := range x.de.tools {
		if v := root.Get(f); v.Exists() && v.Type != gjson.Null {
			tools = append(tools, f...)
			tools = append(tools, canonical(v.Raw)...)
		}
	}
	if len(tools) > 0 {
		r.ToolsHash = shortHash(tools)
	}
	for _, f := range x.de.conversation {
		v := root.Get(f)
		switch {
		case !v.Exists() || v.Type == gjson.Null:
		case v.IsArray():
			v.ForEach(func(_, item gjson.Result) bool {
				r.Messages = append(r.Messages, itemRole(item)+":"+shortHash(canonical(item.Raw)))
				return true
			})
		default:
			r.Messages = append(r.Messages, f+":"+shortHash(canonical(v.Raw)))
		}
	}
	return r
}

// itemRole names a conversation item: its role, else its type, else "item".
func itemRole(item gjson.Result) string {
	for _, k := range []string{"role", "type"} {
		if v := item.Get(k); v.Type == gjson.String && v.Str != "" {
			return v.Str
		}
	}
	return "item"
}

// shortHash is the first 12 hex digits of b's SHA-256.
func shortHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// replay answers from player (Config.Cassette, or the run's own armed by
// ArmCassette): the recorded answer of the matching entry, with the run's
// token where the recorded request's was, after the faults that fired, as
// the scripted answer would be. A stream is written by writeStream, so a
// drop cuts it at the same points. With missRelay a request no entry
// matches is relayed (Config.Miss).
func (s *Server) replay(x *exchange, player *cassette.Player, missRelay bool) {
	e, src, err := player.Find(x.cassetteRequest())
	if err != nil {
		var miss *cassette.MissError
		if errors.As(err, &miss) && missRelay {
			s.relay(x)
			return
		}
		x.writeError(wire.OutcomeCassetteMiss, http.StatusNotFound, err.Error(), nil)
		return
	}
	x.rec.Replayed = src.String()
	if x.token != "" {
		e.Answer = e.Answer.WithToken(e.Request.Token, x.token)
	}
	id, calls := recordedAnswer(e.Request.Dialect, &e.Answer)
	x.rec.ResponseID = id
	x.rec.SetCalls(calls, nil)
	a := &e.Answer
	if s.cfg.ReplayTiming && !x.pace(time.Duration(a.HeadersMS)*time.Millisecond) {
		return
	}
	h := x.w.Header()
	for k, v := range a.Headers {
		h.Set(k, v)
	}
	if !a.Stream() {
		x.writeBody(a.Status, []byte(a.Body))
		return
	}
	events := make([]sseEvent, len(a.Events))
	contentEnd := -1
	for i, ev := range a.Events {
		events[i] = sseEvent{name: ev.Name, data: []byte(ev.Data)}
		if contentEnd < 0 && x.de.d.terminal(events[i]) {
			contentEnd = i
		}
	}
	if contentEnd < 0 {
		contentEnd = len(events)
	}
	if s.cfg.ReplayTiming {
		x.gaps = make([]time.Duration, len(events))
		prev := int64(0)
		for i, ev := range a.Events {
			x.gaps[i] = time.Duration(max(ev.AtMS-prev, 0)) * time.Millisecond
			prev = max(prev, ev.AtMS)
		}
	}
	x.rec.Events, x.rec.ContentEvents = len(events), contentEnd
	x.writeStream(events, contentEnd)
}

// pace waits d before a replayed answer goes on (Config.ReplayTiming); a
// client that leaves meanwhile is recorded client_gone and the connection
// closed, as during a delay.
func (x *exchange) pace(d time.Duration) bool {
	wait := waitCtx
	if x.s.replayWait != nil {
		wait = x.s.replayWait
	}
	return x.pause(d, wait)
}
