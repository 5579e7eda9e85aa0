// Package limit paces requests: an in-process token bucket (golang.org/x/time/rate), one shared
// by every process on the machine through a file, one shared between machines through Redis,
// none at all; and the circuit breaker that holds every worker while the API is failing. Each
// is a retry.Limiter (or retry.Gate); none knows anything of the API.
package limit

import (
	"context"
	"fmt"
	"math"
	"sync"

	"golang.org/x/time/rate"

	"github.com/brellium/brellium/retry"
)

// Off is a limiter that never waits.
type Off struct{}

// Wait returns at once.
func (Off) Wait(ctx context.Context) error { return ctx.Err() }

// Observe does nothing.
func (Off) Observe(int) {}

// Drain does nothing.
func (Off) Drain() {}

// Bucket is an in-process token bucket on golang.org/x/time/rate, safe for concurrent use.
type Bucket struct {
	mu    sync.Mutex
	lim   *rate.Limiter
	clock retry.Clock
}

// NewBucket returns a full bucket of burst tokens that refills at perSecond. A nil clock is the
// system clock.
func NewBucket(perSecond float64, burst int, clock retry.Clock) *Bucket {
	if clock == nil {
		clock = retry.SystemClock{}
	}
	return &Bucket{lim: rate.NewLimiter(rate.Limit(perSecond), burst), clock: clock}
}

// Wait takes one token, sleeping until it is there. A token that comes after ctx's deadline is
// not waited for: Wait returns a *BudgetWaitError at once.
func (b *Bucket) Wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := b.clock.Now()
	b.mu.Lock()
	res := b.lim.ReserveN(now, 1)
	b.mu.Unlock()
	if !res.OK() {
		return fmt.Errorf("the client budget has a burst of %d: no token can be taken", b.lim.Burst())
	}
	d := res.DelayFrom(now)
	if d == 0 {
		return nil
	}
	if deadline, ok := ctx.Deadline(); ok && now.Add(d).After(deadline) {
		res.CancelAt(now)
		return &retry.BudgetWaitError{Wait: d, Left: max(deadline.Sub(now), 0)}
	}
	if err := b.clock.Sleep(ctx, d); err != nil {
		res.CancelAt(b.clock.Now())
		return err
	}
	return nil
}

// SetRate changes the refill (RateSetter).
func (b *Bucket) SetRate(perSecond float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lim.SetLimitAt(b.clock.Now(), rate.Limit(perSecond))
}

// Tokens returns the tokens in the bucket now; negative when waiters hold future tokens.
func (b *Bucket) Tokens() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lim.TokensAt(b.clock.Now())
}

// Observe lowers the bucket to remaining tokens when it holds more.
func (b *Bucket) Observe(remaining int) {
	b.take(func(tokens float64) float64 { return tokens - float64(remaining) })
}

// Drain empties the bucket: the server refused a request, so no token is left.
func (b *Bucket) Drain() {
	b.take(func(tokens float64) float64 { return tokens })
}

// take removes excess(tokens) whole tokens, rounded up, when that is positive.
func (b *Bucket) take(excess func(tokens float64) float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	n := math.Ceil(excess(b.lim.TokensAt(now)))
	if n >= 1 {
		b.lim.ReserveN(now, int(n))
	}
}
