package upstream

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// Truncate is the action that cuts a non-streamed 200 answer partway, as a
// proxy's idle timeout does: the status and headers go out as usual, with
// the whole body's Content-Length, then part of the body, and the
// connection closes, so the client reads an unexpected end of the body.
// When the body is no longer than the cut, or the answer is not a 200, it
// goes out whole (and the fault does not count as fired).
type Truncate struct {
	// AfterBytes is how many bytes of the body go out before the cut; 0 =
	// half the body.
	AfterBytes int `json:"after_bytes,omitempty" yaml:"after_bytes,omitempty" jsonschema:"minimum=0" jsonschema_description:"bytes of the body sent before the connection closes (default half the body)"`
}

// truncateKind is the kind table's row for truncate, for non-streamed
// answers only, with explore's truncate probe.
func truncateKind() kindRow {
	return kindRow{
		Name: "truncate",
		Get: func(f *Fault) kind {
			if f.Truncate == nil {
				return nil
			}
			return truncate{f.Truncate}
		},
		Traits: kindTraits{
			streams: plainOnly,
		},
		Probes: func() []fault.Probe[Fault] {
			return []fault.Probe[Fault]{
				{Name: "truncate", Doc: "send the 200 answer's headers and half its body, then close the connection", At: fault.AtPlain, Build: func(fault.Spot, fault.Settings) Fault {
					return Fault{Truncate: &Truncate{}}
				}},
			}
		},
	}
}

// truncate cuts a non-streamed answer's body.
type truncate struct{ t *Truncate }

func (k truncate) Check(f *Fault) error {
	if k.t.AfterBytes < 0 {
		return fmt.Errorf("after_bytes: %d must not be negative", k.t.AfterBytes)
	}
	if f.Stream != nil && *f.Stream {
		return fmt.Errorf("stream: truncate applies only to non-streamed requests; remove stream: true")
	}
	return nil
}

// Holds is zero: the cut comes with the body.
func (truncate) Holds(time.Duration) time.Duration { return 0 }

func (k truncate) describe(b *strings.Builder) {
	b.WriteString("truncate")
	if k.t.AfterBytes > 0 {
		b.WriteString(" after " + strconv.Itoa(k.t.AfterBytes) + " bytes")
	}
}

func (truncate) relayUnsupported() string { return "truncate" }

func (k truncate) writeBody(x *exchange, status int, body []byte) {
	n := k.t.AfterBytes
	if n == 0 {
		n = len(body) / 2
	}
	if status != http.StatusOK || n >= len(body) {
		x.finish(x.normalOutcome(), status)
		x.w.WriteHeader(status)
		_, _ = x.w.Write(body) // the client went away; nothing to do
		return
	}
	x.acted = true
	x.finish(wire.OutcomeTruncatedBody, status)
	x.w.WriteHeader(status)
	if _, err := x.w.Write(body[:n]); err == nil {
		_ = http.NewResponseController(x.w).Flush() // the connection is cut next either way
	}
	x.closeConn(false)
}
