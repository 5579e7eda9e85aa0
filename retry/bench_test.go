package retry

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/brellium/brellium/internal/testredis"
	"github.com/brellium/brellium/request"
)

func BenchmarkDecide(b *testing.B) {
	h := http.Header{"Content-Type": {"application/json"}, "Retry-After": {"1"}, "Ratelimit-Remaining": {"0"}}
	resp := NewResponse(429, "", "HTTP/1.1", h, []byte(`{"error":{"type":"rate_limit_error","code":"RATE_LIMITED","message":"Too many requests","request_id":"r"}}`))
	class := request.Class{Rule: request.Lookup("POST", "/v2/users")}
	b.ReportAllocs()
	for b.Loop() {
		_ = Decide(Attempt{Response: resp, Class: class})
	}
}

func BenchmarkParseResponse(b *testing.B) {
	h := http.Header{"Content-Type": {"application/json"}, "Retry-After": {"1"}, "Ratelimit-Limit": {"100"},
		"Ratelimit-Remaining": {"0"}, "Ratelimit-Reset": {"1"}, "X-Request-Id": {"9c3f1a7e-5b2d-4e8f-a1c6-2d7b8e9f0a1b"}}
	body := []byte(`{"error":{"type":"rate_limit_error","code":"RATE_LIMITED","message":"Too many requests","request_id":"9c3f1a7e-5b2d-4e8f-a1c6-2d7b8e9f0a1b"}}`)
	b.ReportAllocs()
	for b.Loop() {
		_ = NewResponse(429, "", "HTTP/1.1", h, body)
	}
}

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
