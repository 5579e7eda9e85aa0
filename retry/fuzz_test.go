package retry

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"1", "0", "-1", "1.5", "", "soon", "Sun, 29 Nov 2026 12:00:05 GMT", "99999999999999999999", "1e9", ".5", "5."} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := ParseRetryAfter(v, now)
		if d < 0 || d > maxWait {
			t.Fatalf("ParseRetryAfter(%q) = %v, out of [0, maxWait]", v, d)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) failed but gave %v", v, d)
		}
	})
}

func FuzzServerWait(f *testing.F) {
	f.Add("1", "1500", "2")
	f.Add("", "abc", "-3")
	f.Add("Sun, 29 Nov 2026 12:00:05 GMT", "", "0")
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, ra, ms, reset string) {
		h := http.Header{}
		h["Retry-After"] = []string{ra}
		h["Retry-After-Ms"] = []string{ms}
		h["Ratelimit-Reset"] = []string{reset}
		d, _, _ := ServerWait(h, now)
		if d < 0 {
			t.Fatalf("negative wait %v", d)
		}
		rl := ParseRateLimit(h)
		if rl.Reset < 0 {
			t.Fatalf("negative reset %v", rl.Reset)
		}
	})
}

func FuzzParseEnvelope(f *testing.F) {
	f.Add([]byte(`{"error":{"type":"rate_limit_error","code":"RATE_LIMITED","message":"Too many requests","request_id":"9c3f"}}`))
	f.Add([]byte(`{"error":null}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"error":{"code":5}}`))
	f.Add([]byte(`{"error":{"code":"A","message":"m","extra":[1,2]},"x":1}`))
	f.Add([]byte(`{"error":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		h := http.Header{}
		h.Set("Content-Type", "application/json")
		r := NewResponse(429, "", "HTTP/1.1", h, b)
		if r.JSON != json.Valid(b) || r.Bare() == r.JSON {
			t.Fatalf("%q: JSON %v, bare %v", b, r.JSON, r.Bare())
		}
		// What the envelope says is what the body's error object holds, field by field.
		var v struct {
			Error map[string]any `json:"error"`
		}
		_ = json.Unmarshal(b, &v)
		// encoding/json matches keys whatever their case; a body whose error object has two
		// keys that match one field, or a field that is not a string, is left to the unit tests.
		fields := map[string]string{}
		for k, val := range v.Error {
			for _, name := range []string{"type", "code", "message", "request_id"} {
				if !strings.EqualFold(k, name) {
					continue
				}
				str, ok := val.(string)
				if _, dup := fields[name]; dup || !ok {
					return
				}
				fields[name] = str
			}
		}
		field := func(k string) string { return fields[k] }
		if r.Envelope == nil {
			if r.Code() != "" || r.Message() != "" || r.RequestID != "" {
				t.Fatalf("%q: no envelope, yet code %q message %q request id %q", b, r.Code(), r.Message(), r.RequestID)
			}
			if field("code") != "" && r.JSON {
				t.Fatalf("%q: an error object with a code was not read", b)
			}
			return
		}
		if r.Code() != field("code") || r.Message() != field("message") || r.RequestID != field("request_id") || r.Envelope.Type != field("type") {
			t.Fatalf("%q: envelope %+v does not match the body", b, r.Envelope)
		}
	})
}
