package retry

import (
	"context"
	"time"
)

// Clock tells the time and waits. The engine and the limiters take one so that tests can run
// every wait at once.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx is done, whichever comes first, and returns ctx.Err() then.
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep waits d on a timer, or until ctx is done.
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
