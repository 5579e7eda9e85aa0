package retry

import (
	"net/http"
	"testing"

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
