package retry

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

func TestBucketPacesAfterTheBurst(t *testing.T) {
	clock := newFakeClock()
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
	clock := newFakeClock()
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
	clock := newFakeClock()
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
	clock := newFakeClock()
	b := NewBucket(0.1, 1, clock) // one token every 10 s
	_ = b.Wait(context.Background())
	ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(time.Second))
	defer cancel()
	err := b.Wait(ctx)
	var bw *BudgetWaitError
	if !errors.As(err, &bw) || bw.Wait != 10*time.Second {
		t.Fatalf("err = %v, want a BudgetWaitError of 10s", err)
	}
	if len(clock.Sleeps()) != 0 {
		t.Fatal("waited for a token past the deadline")
	}
	// The refused reservation was given back: the token is there 10 s after the first.
	clock.now = clock.now.Add(10 * time.Second)
	if got := b.Tokens(); math.Abs(got-1) > 1e-9 {
		t.Fatalf("tokens = %v, want 1: the cancelled reservation leaked", got)
	}
}

func TestEngineDrainsTheLimiterOn429AndObservesRemaining(t *testing.T) {
	clock := newFakeClock()
	b := NewBucket(5, 100, clock)
	tr := &fakeTransport{steps: []step{
		answer(200, `{}`, "RateLimit-Remaining", "40"),
	}}
	e := &Engine{Transport: tr, Clock: clock, Rand: fixedRand, Limiter: b}
	if _, err := e.Do(context.Background(), mustSpec(t, "GET", "/v2/audits/a", "", false, ""), DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	if got := b.Tokens(); got > 40 {
		t.Fatalf("tokens = %v after RateLimit-Remaining 40", got)
	}
	tr.steps = []step{apiErr(429, "RATE_LIMITED", "Retry-After", "1"), answer(200, `{}`)}
	if _, err := e.Do(context.Background(), mustSpec(t, "GET", "/v2/audits/a", "", false, ""), DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	// Drained at the 429, then 1.25 s of refill (6.25 tokens), less the token of the repeat.
	if got := b.Tokens(); got > 6 {
		t.Fatalf("tokens = %v after a 429: the bucket was not drained", got)
	}
}
