package report

import (
	"bytes"
	"fmt"
	"io"

	"github.com/replaycheck/replaycheck/internal/secret"
)

// scrubbed calls write with a buffer, then writes what it wrote to w (the
// report called what, for the error of that write) with
// every credential found by name, place or shape replaced by secret.Mark
// (secret.Scrub): the last pass over every report, whatever its strings
// came from (an error naming a forwarded server's command or URL, a
// target's output, a saved report rendered again). Errors of the sources
// that know the credentials' values are scrubbed of those where they are
// made; this pass knows none. What write wrote before an error is written
// too.
func scrubbed(w io.Writer, what string, write func(io.Writer) error) error {
	var b bytes.Buffer
	err := write(&b)
	if _, werr := io.WriteString(w, secret.Scrub(b.String(), nil, secret.Mark)); werr != nil && err == nil {
		err = fmt.Errorf("writing %s: %w", what, werr)
	}
	return err
}
