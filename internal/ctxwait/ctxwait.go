// Package ctxwait waits a duration or until a context ends.
package ctxwait

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx is done (its error). A d of zero or less
// returns at once, with ctx's error if it is done.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
