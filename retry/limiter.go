package retry

import (
	"context"
	"fmt"
	"time"
)

// Limiter paces requests with the client's budget. Wait takes one token before an attempt;
// Observe lowers the budget to the server's RateLimit-Remaining when that is lower; Drain
// empties it after a 429.
type Limiter interface {
	Wait(ctx context.Context) error
	Observe(remaining int)
	Drain()
}

// Settler is a Limiter that wants to know when the attempt a token was taken for has ended
// (answered or not): the engine calls Settled once for each Wait that returned nil, before the
// answer's Observe. A limiter that keeps the server's level uses it to count requests in flight.
type Settler interface {
	Settled()
}

// BudgetWaitError says that the token the limiter would give comes after the context's
// deadline, so it was not waited for.
type BudgetWaitError struct {
	Wait, Left time.Duration
}

func (e *BudgetWaitError) Error() string {
	return fmt.Sprintf("the client budget's next token in %s exceeds the %s left of --max-time", FormatDuration(e.Wait), FormatDuration(e.Left))
}

// FormatDuration shows a duration the way the attempt lines do: 1.3s, 450ms, 30s, 2m0s.
func FormatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}
