package limit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/brellium/brellium/retry"
)

var errAttemptFailed = errors.New("attempt failed")

// Breaker is a circuit breaker shared by every worker of a batch: after Failures consecutive
// failed attempts (5xx or no answer) it holds every attempt for Cooldown, then lets one probe
// through; a good probe closes it, a failed one opens it again. It is built on
// github.com/sony/gobreaker/v2.
type Breaker struct {
	cb       *gobreaker.TwoStepCircuitBreaker[struct{}]
	clock    retry.Clock
	cooldown time.Duration
	failures int
	// OnChange, when set, hears why the breaker opened or closed, so that a batch that holds
	// every worker says so.
	OnChange func(open bool, why string)
}

// NewBreaker returns a closed breaker. A nil clock is the system clock; gobreaker keeps its own
// time, so the cool-down is real time.
func NewBreaker(failures int, cooldown time.Duration, clock retry.Clock) *Breaker {
	if clock == nil {
		clock = retry.SystemClock{}
	}
	b := &Breaker{clock: clock, cooldown: cooldown, failures: failures}
	b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:          "api",
		MaxRequests:   1,
		Timeout:       cooldown,
		ReadyToTrip:   func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= uint32(failures) },
		OnStateChange: func(_ string, from, to gobreaker.State) { b.changed(from, to) },
	})
	return b
}

// changed tells OnChange of an open or a close; the half-open step between is not news.
func (b *Breaker) changed(from, to gobreaker.State) {
	if b.OnChange == nil {
		return
	}
	hold := retry.FormatDuration(b.cooldown)
	switch {
	case to == gobreaker.StateOpen && from == gobreaker.StateHalfOpen:
		b.OnChange(true, "the probe failed too: every worker holds for another "+hold)
	case to == gobreaker.StateOpen:
		b.OnChange(true, fmt.Sprintf("%d attempts in a row failed (5xx or no answer): every worker holds for %s, then one probe decides", b.failures, hold))
	case to == gobreaker.StateClosed:
		b.OnChange(false, "the probe went through: every worker goes on")
	}
}

// Enter waits while the breaker is open (or while its one probe is out), then lets the attempt
// through.
func (b *Breaker) Enter(ctx context.Context) (func(failed bool), error) {
	poll := min(max(b.cooldown/10, 10*time.Millisecond), 250*time.Millisecond)
	for {
		done, err := b.cb.Allow()
		if err == nil {
			return func(failed bool) {
				if failed {
					done(errAttemptFailed)
				} else {
					done(nil)
				}
			}, nil
		}
		if !errors.Is(err, gobreaker.ErrOpenState) && !errors.Is(err, gobreaker.ErrTooManyRequests) {
			return nil, fmt.Errorf("circuit breaker: %w", err)
		}
		if err := b.clock.Sleep(ctx, poll); err != nil {
			return nil, err
		}
	}
}
