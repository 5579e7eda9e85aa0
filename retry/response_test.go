package retry

import (
	"math"
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"1", time.Second, true},
		{" 30 ", 30 * time.Second, true},
		{"0", 0, true},
		{"1.5", 1500 * time.Millisecond, true},
		{"-1", 0, false},
		{"", 0, false},
		{"soon", 0, false},
		{"1e3", 0, false},
		{"NaN", 0, false},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"Sunday, 29-Nov-26 12:00:10 GMT", 10 * time.Second, true},
		{"99999999999999999999999", maxWait, true},
	}
	for _, c := range cases {
		got, ok := ParseRetryAfter(c.in, now)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestServerWaitOrder(t *testing.T) {
	now := time.Now()
	h := http.Header{}
	h.Set("RateLimit-Reset", "3")
	h.Set("Retry-After-Ms", "1200")
	h.Set("Retry-After", "2")
	if d, src, _ := ServerWait(h, now); d != 2*time.Second || src != "Retry-After 2" {
		t.Errorf("with all three: %v %q", d, src)
	}
	h.Set("Retry-After", "garbage")
	if d, src, _ := ServerWait(h, now); d != 1200*time.Millisecond || src != "retry-after-ms 1200" {
		t.Errorf("bad Retry-After: %v %q", d, src)
	}
	h.Del("Retry-After-Ms")
	if d, _, _ := ServerWait(h, now); d != 3*time.Second {
		t.Errorf("RateLimit-Reset only: %v", d)
	}
	h.Set("RateLimit-Reset", "0")
	if _, _, ok := ServerWait(h, now); ok {
		t.Error("RateLimit-Reset 0 is no wait hint")
	}
}

func TestBackoffIsFullJitterUnderTheCeiling(t *testing.T) {
	base, cap := 500*time.Millisecond, 20*time.Second
	for n := 1; n <= 80; n++ {
		ceiling := cap
		if f := float64(base) * math.Pow(2, float64(n-1)); f < float64(cap) {
			ceiling = time.Duration(f)
		}
		if got := Backoff(n, base, cap, 0.999999); got > ceiling || got < ceiling*99/100 {
			t.Errorf("Backoff(%d, rnd≈1) = %v, ceiling %v", n, got, ceiling)
		}
		if got := Backoff(n, base, cap, 0); got != 0 {
			t.Errorf("Backoff(%d, 0) = %v, want 0", n, got)
		}
	}
}

func TestResponseParsesEnvelopeAndBareness(t *testing.T) {
	h := http.Header{}
	h.Set("Content-Type", "application/json; charset=utf-8")
	r := NewResponse(404, "", "HTTP/1.1", h, []byte(`{"error":{"type":"not_found_error","code":"NOT_FOUND","message":"no audit","request_id":"rid-1"}}`))
	if r.Code() != "NOT_FOUND" || r.Message() != "no audit" || r.RequestID != "rid-1" || r.Bare() {
		t.Errorf("JSON 404 parsed as %+v", r)
	}
	bare := NewResponse(403, "", "HTTP/1.1", http.Header{}, []byte("Forbidden"))
	if !bare.Bare() || bare.Code() != "" {
		t.Errorf("bare 403 parsed as %+v", bare)
	}
	lying := NewResponse(500, "", "HTTP/1.1", h, []byte("<html>oops"))
	if !lying.Bare() || lying.Envelope != nil {
		t.Errorf("non-JSON body with a JSON content type parsed as %+v", lying)
	}
}
