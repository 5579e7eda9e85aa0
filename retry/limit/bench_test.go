package limit

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/brellium/brellium/internal/testredis"
)

// The limiters' Wait with a budget that never runs dry: the cost of taking a token.
func BenchmarkBucketWait(b *testing.B) {
	l := NewBucket(1e12, 1<<30, nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_ = l.Wait(ctx)
	}
}

// BenchmarkFileLimiterWait is the machine-wide limiter's lock-and-update: flock, read the state,
// refill and take, write it back, unlock.
func BenchmarkFileLimiterWait(b *testing.B) {
	l, err := NewFileLimiter(filepath.Join(b.TempDir(), "s"), 1e12, 1<<30, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_ = l.Wait(ctx)
	}
}

func BenchmarkRedisLimiterWait(b *testing.B) {
	l, err := NewRedisLimiter(context.Background(), testredis.URL(b), "bench", 1e9, 1<<30, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_ = l.Wait(ctx)
	}
}
