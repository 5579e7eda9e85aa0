package retry

import (
	"context"
	"testing"

	"github.com/brellium/brellium/internal/testredis"
)

func TestRedisLimiterSharesOneBudget(t *testing.T) {
	url := testredis.URL(t)
	key := "test:" + t.Name()
	clock := newFakeClock()
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
	l, err := NewRedisLimiter(context.Background(), url, "k", 5, 100, newFakeClock())
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
