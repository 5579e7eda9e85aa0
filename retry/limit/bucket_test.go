package limit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	rt "github.com/brellium/brellium/internal/retrytest"
	"github.com/brellium/brellium/retry"
)

func TestBucketPacesAfterTheBurst(t *testing.T) {
	clock := rt.NewFakeClock()
	b := NewBucket(5, 3, clock)
	for i := 0; i < 3; i++ {
		if err := b.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if len(clock.Sleeps()) != 0 {
		t.Fatalf("the burst waited: %v", clock.Sleeps())
	}
	if err := b.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := clock.Sleeps(); len(got) != 1 || got[0] != 200*time.Millisecond {
		t.Fatalf("fourth token waited %v, want 200ms at 5/s", got)
	}
}

func TestBucketObserveLowersToTheServersRemaining(t *testing.T) {
	clock := rt.NewFakeClock()
	b := NewBucket(5, 100, clock)
	b.Observe(10)
	if got := b.Tokens(); got > 10 || got < 9 {
		t.Fatalf("tokens after Observe(10) = %v, want 10", got)
	}
	b.Observe(50) // higher than the local view: no change
	if got := b.Tokens(); got > 10 {
		t.Fatalf("Observe raised the bucket to %v", got)
	}
}

func TestBucketDrainEmptiesIt(t *testing.T) {
	clock := rt.NewFakeClock()
	b := NewBucket(5, 100, clock)
	b.Drain()
	if got := b.Tokens(); got > 0 || got <= -1 {
		t.Fatalf("tokens after Drain = %v, want in (-1, 0]", got)
	}
	if err := b.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := clock.Sleeps(); len(got) != 1 || got[0] <= 0 || got[0] > 200*time.Millisecond {
		t.Fatalf("wait after a drain = %v, want one refill (≤200ms)", got)
	}
}

func TestBucketRefusesATokenPastTheDeadline(t *testing.T) {
	clock := rt.NewFakeClock()
	b := NewBucket(0.1, 1, clock) // one token every 10 s
	_ = b.Wait(context.Background())
	ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(time.Second))
	defer cancel()
	err := b.Wait(ctx)
	var bw *retry.BudgetWaitError
	if !errors.As(err, &bw) || bw.Wait != 10*time.Second {
		t.Fatalf("err = %v, want a BudgetWaitError of 10s", err)
	}
	if len(clock.Sleeps()) != 0 {
		t.Fatal("waited for a token past the deadline")
	}
	// The refused reservation was given back: the token is there 10 s after the first.
	clock.Advance(10 * time.Second)
	if got := b.Tokens(); math.Abs(got-1) > 1e-9 {
		t.Fatalf("tokens = %v, want 1: the cancelled reservation leaked", got)
	}
}

func TestEngineDrainsTheLimiterOn429AndObservesRemaining(t *testing.T) {
	clock := rt.NewFakeClock()
	b := NewBucket(5, 100, clock)
	tr := &rt.FakeSender{Steps: []rt.Step{rt.Answer(200, `{}`, "RateLimit-Remaining", "40")}}
	e := &retry.Engine{Sender: tr, Clock: clock, Rand: rt.FixedRand, Limiter: b}
	if _, err := e.Do(context.Background(), rt.Spec(t, nil, "GET", "/v2/audits/a", "", false, ""), retry.DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	if got := b.Tokens(); got > 40 {
		t.Fatalf("tokens = %v after RateLimit-Remaining 40", got)
	}
	tr.Steps = []rt.Step{rt.APIErr(429, "RATE_LIMITED", "Retry-After", "1"), rt.Answer(200, `{}`)}
	if _, err := e.Do(context.Background(), rt.Spec(t, nil, "GET", "/v2/audits/a", "", false, ""), retry.DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	// Drained at the 429, then 1.25 s of refill (6.25 tokens), less the token of the repeat.
	if got := b.Tokens(); got > 6 {
		t.Fatalf("tokens = %v after a 429: the bucket was not drained", got)
	}
}

// A bucket of one token is emptied by a 429 too: the next attempt waits a whole refill.
func TestBucketOfOneDrains(t *testing.T) {
	clock := rt.NewFakeClock()
	b := NewBucket(2, 1, clock)
	b.Drain()
	if err := b.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := clock.Sleeps(); len(got) != 1 || got[0] != 500*time.Millisecond {
		t.Fatalf("wait after draining a full bucket of 1 = %v, want [500ms]", got)
	}
}

// A token waited for is spent; a wait cut short gives its token back.
func TestBucketWaitSpendsOrGivesBack(t *testing.T) {
	clock := rt.NewFakeClock()
	b := NewBucket(5, 1, clock)
	_ = b.Wait(context.Background())
	if err := b.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := b.Tokens(); math.Abs(got) > 1e-9 {
		t.Fatalf("tokens after a waited-for token = %v, want 0", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stopped := NewBucket(5, 1, &stoppedClock{FakeClock: clock})
	_ = stopped.Wait(context.Background())
	if err := stopped.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if got := stopped.Tokens(); math.Abs(got) > 1e-9 {
		t.Fatalf("tokens after an interrupted wait = %v, want 0 (the token given back)", got)
	}
}

// stoppedClock's sleeps end with the context's error at once, without time passing.
type stoppedClock struct{ *rt.FakeClock }

func (c *stoppedClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.FakeClock.Sleep(ctx, d)
}

func TestBreakerHoldsAttemptsThenProbes(t *testing.T) {
	clock := rt.NewFakeClock()
	b := NewBreaker(2, 30*time.Millisecond, clock)
	var changes []string
	b.OnChange = func(open bool, why string) { changes = append(changes, fmt.Sprintf("%v %s", open, why)) }
	for i := 0; i < 2; i++ {
		done, err := b.Enter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		done(true)
	}
	if len(clock.Sleeps()) != 0 {
		t.Fatal("the breaker held an attempt before it tripped")
	}
	// Open: an interrupted wait ends with the interruption.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Enter(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Enter on an open breaker with a done context = %v", err)
	}
	// After the cool-down one probe goes through; a good one closes the breaker.
	done, err := b.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(clock.Sleeps()) == 0 {
		t.Fatal("the open breaker let an attempt through without holding it")
	}
	done(false)
	held := len(clock.Sleeps())
	for i := 0; i < 3; i++ {
		d, err := b.Enter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		d(false)
	}
	if len(clock.Sleeps()) != held {
		t.Fatal("a closed breaker held attempts")
	}
	// The log hears the open and the close, not the half-open step between.
	want := []string{"true 2 attempts in a row failed (5xx or no answer): every worker holds for 30ms, then one probe decides",
		"false the probe went through: every worker goes on"}
	if strings.Join(changes, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes %q", changes)
	}
	// A probe that fails opens it again, and says so.
	for i := 0; i < 2; i++ {
		d, _ := b.Enter(context.Background())
		d(true)
	}
	d, _ := b.Enter(context.Background())
	d(true)
	if len(changes) != 4 || changes[3] != "true the probe failed too: every worker holds for another 30ms" {
		t.Errorf("changes %q", changes)
	}
}
