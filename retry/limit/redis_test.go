package limit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"

	"github.com/brellium/brellium/internal/testredis"

	rt "github.com/brellium/brellium/internal/retrytest"
	"github.com/brellium/brellium/retry"
)

func TestRedisLimiterSharesOneBudget(t *testing.T) {
	url := testredis.URL(t)
	key := "test:" + t.Name()
	clock := rt.NewFakeClock()
	a, err := NewRedisLimiter(context.Background(), url, key, 5, 3, clock)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, _ := NewRedisLimiter(context.Background(), url, key, 5, 3, clock)
	defer b.Close()
	allowed := 0
	for _, l := range []*RedisLimiter{a, b, a, b, a} {
		res, err := l.lim.Allow(context.Background(), l.key, l.limit)
		if err != nil {
			t.Fatal(err)
		}
		allowed += res.Allowed
	}
	if allowed != 3 {
		t.Fatalf("two limiters on one key allowed %d at once, want the burst of 3", allowed)
	}
}

func TestRedisLimiterRefusesAnUnreachableServer(t *testing.T) {
	if _, err := NewRedisLimiter(context.Background(), "redis://127.0.0.1:1/0", "k", 5, 100, nil); err == nil {
		t.Fatal("an unreachable Redis was accepted")
	}
}

func TestRedisLimiterFallsBackWhenRedisGoesAway(t *testing.T) {
	url, stop := testredis.Start(t)
	l, err := NewRedisLimiter(context.Background(), url, "k", 5, 100, rt.NewFakeClock())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	stop()
	warned := 0
	l.OnWarn = func(error) { warned++ }
	for i := 0; i < 3; i++ {
		if err := l.Wait(context.Background()); err != nil {
			t.Fatalf("Wait with Redis gone: %v", err)
		}
	}
	if warned != 1 {
		t.Fatalf("warnings = %d, want 1", warned)
	}
}

// sleepingClock records each sleep and really sleeps it: Redis keeps its own time.
type sleepingClock struct {
	mu     sync.Mutex
	sleeps []time.Duration
}

func (c *sleepingClock) Now() time.Time { return time.Now() }
func (c *sleepingClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.mu.Unlock()
	return retry.SystemClock{}.Sleep(ctx, d)
}
func (c *sleepingClock) total() (n int, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.sleeps {
		d += s
	}
	return len(c.sleeps), d
}

func newRedisPair(t *testing.T, url string, perSecond float64, burst int, clock retry.Clock) (*RedisLimiter, *RedisLimiter) {
	t.Helper()
	key := "test:" + t.Name()
	a, err := NewRedisLimiter(context.Background(), url, key, perSecond, burst, clock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err := NewRedisLimiter(context.Background(), url, key, perSecond, burst, clock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}

func TestRedisLimiterWaitPacesAfterTheBurst(t *testing.T) {
	clock := &sleepingClock{}
	a, b := newRedisPair(t, testredis.URL(t), 5, 3, clock)
	for _, l := range []*RedisLimiter{a, b, a} {
		if err := l.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := clock.total(); n != 0 {
		t.Fatalf("the shared burst of 3 waited %d times", n)
	}
	if err := b.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, d := clock.total(); n == 0 || d <= 0 || d > 250*time.Millisecond {
		t.Fatalf("the fourth token waited %d times, %v in all; want about one refill at 5/s (200ms)", n, d)
	}
}

func TestRedisLimiterObserveAndDrainAreShared(t *testing.T) {
	url := testredis.URL(t)
	clock := &sleepingClock{}
	a, b := newRedisPair(t, url, 5, 100, clock)
	a.Observe(1)
	if err := b.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, _ := clock.total(); n != 0 {
		t.Fatal("the one token left after Observe(1) was not there")
	}
	if err := b.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, _ := clock.total(); n == 0 {
		t.Fatal("Observe(1) did not lower the shared budget: a second token came at once")
	}
	a.Observe(50) // above what the budget holds: no change, and no token spent
	clock2 := &sleepingClock{}
	c, d := newRedisPair(t, url, 5, 100, clock2)
	d.Drain()
	if err := c.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, _ := clock2.total(); n == 0 {
		t.Fatal("after Drain, a token came at once")
	}
	if !d.usable() || !a.usable() {
		t.Fatal("a Drain or an Observe that Redis answered counted as Redis going away")
	}
}

func TestRedisLimiterWithoutAClockUsesTheSystemClock(t *testing.T) {
	l, err := NewRedisLimiter(context.Background(), testredis.URL(t), "test:"+t.Name(), 5, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestRedisLimit(t *testing.T) {
	cases := []struct {
		rate  float64
		burst int
		want  redis_rate.Limit
	}{
		{5, 100, redis_rate.Limit{Rate: 5, Burst: 100, Period: time.Second}},
		{1, 1, redis_rate.Limit{Rate: 1, Burst: 1, Period: time.Second}},
		{2.5, 10, redis_rate.Limit{Rate: 2500, Burst: 10, Period: 1000 * time.Second}},
		{0.1, 20, redis_rate.Limit{Rate: 100, Burst: 20, Period: 1000 * time.Second}},
	}
	for _, c := range cases {
		if got := RedisLimit(c.rate, c.burst); got != c.want {
			t.Errorf("RedisLimit(%v, %d) = %+v, want %+v", c.rate, c.burst, got, c.want)
		}
	}
}

// A Redis that stops answering sends pacing to the fallback with one warning; Redis is tried
// again a second after the failure, not before.
func TestRedisLimiterComesBackToRedis(t *testing.T) {
	url := testredis.URL(t)
	proxied, cut := testredis.Proxy(t, url)
	clock := rt.NewFakeClock()
	key := "test:" + t.Name()
	// A slow refill, so that real time does not refill Redis during the test.
	l, err := NewRedisLimiter(context.Background(), proxied, key, 0.01, 10, clock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	peek, err := NewRedisLimiter(context.Background(), url, key, 0.01, 10, clock)
	if err != nil {
		t.Fatal(err)
	}
	defer peek.Close()
	left := func() int {
		res, err := peek.lim.AllowN(context.Background(), peek.key, peek.limit, 0)
		if err != nil {
			t.Fatal(err)
		}
		return res.Remaining
	}
	warned := 0
	l.OnWarn = func(error) { warned++ }
	wait := func() {
		t.Helper()
		if err := l.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	wait()
	if got := left(); got != 9 {
		t.Fatalf("Redis holds %d after one Wait, want 9", got)
	}
	cut(true)
	wait()
	wait()
	cut(false)
	clock.Advance(time.Second)
	wait() // a second after the failure: still the fallback
	if got := left(); got != 9 || warned != 1 {
		t.Fatalf("Redis holds %d (want 9: the fallback paced) after %d warnings (want 1)", got, warned)
	}
	clock.Advance(time.Millisecond)
	wait()
	if got := left(); got != 8 {
		t.Fatalf("Redis holds %d, want 8: the limiter did not come back to Redis", got)
	}
}
