package retry

import (
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// RateLimit is the server's view of the organization's token bucket, from the RateLimit-*
// headers. Present is false when the response carried none of them.
type RateLimit struct {
	Present   bool
	Limit     int
	Remaining int
	Reset     int
	// HasRemaining says that RateLimit-Remaining was sent and parsed.
	HasRemaining bool
}

// ParseRateLimit reads RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset. A header that
// is missing or not a non-negative integer is left at zero.
func ParseRateLimit(h http.Header) RateLimit {
	var rl RateLimit
	var ok bool
	if rl.Limit, ok = headerInt(h, "RateLimit-Limit"); ok {
		rl.Present = true
	}
	if rl.Remaining, ok = headerInt(h, "RateLimit-Remaining"); ok {
		rl.Present, rl.HasRemaining = true, true
	}
	if rl.Reset, ok = headerInt(h, "RateLimit-Reset"); ok {
		rl.Present = true
	}
	return rl
}

func headerInt(h http.Header, name string) (int, bool) {
	v := strings.TrimSpace(h.Get(name))
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 {
		return 0, false
	}
	return int(n), true
}

// Envelope is the API's error object: {"error":{"type","code","message","request_id"}}.
type Envelope struct {
	Type      string `json:"type"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"request_id"`
}

// ParseEnvelope returns the error object of a JSON error body, or nil when the body is not one.
func ParseEnvelope(body []byte) *Envelope {
	var v struct {
		Error *Envelope `json:"error"`
	}
	if json.Unmarshal(body, &v) != nil || v.Error == nil {
		return nil
	}
	if *v.Error == (Envelope{}) {
		return nil
	}
	return v.Error
}

// Response is one answer from the server, with its body read in full.
type Response struct {
	Status     int
	StatusText string // e.g. "200 OK"
	Proto      string
	Header     http.Header
	Body       []byte
	// Envelope is the parsed error object, when the body is one.
	Envelope *Envelope
	// RequestID is x-request-id, or the envelope's request_id when the header is missing.
	RequestID string
	RateLimit RateLimit
	// JSON says that the body is JSON with a JSON content type.
	JSON bool
	// Truncated says that Body holds only the first part of a body too large to keep.
	Truncated bool
	// Streamed is how many body bytes went to the policy's Stream instead of Body.
	Streamed int64
	// StreamErr is why a streamed body ended early, after Streamed bytes.
	StreamErr error
	// URL is where the answer came from when a followed redirect led elsewhere; nil otherwise.
	URL *url.URL
}

// NewResponse parses the parts of an answer that the retry policy reads.
func NewResponse(status int, statusText, proto string, h http.Header, body []byte) *Response {
	r := &Response{Status: status, StatusText: statusText, Proto: proto, Header: h, Body: body}
	if !strings.Contains(strings.TrimSpace(statusText), " ") {
		// A status line without a reason phrase: net/http gives the code alone, fasthttp nothing.
		r.StatusText = strconv.Itoa(status) + " " + http.StatusText(status)
	}
	r.JSON = isJSONType(h.Get("Content-Type")) && json.Valid(body)
	if r.JSON && status >= 400 {
		r.Envelope = ParseEnvelope(body)
	}
	r.RequestID = strings.TrimSpace(h.Get("X-Request-Id"))
	if r.RequestID == "" && r.Envelope != nil {
		r.RequestID = r.Envelope.RequestID
	}
	r.RateLimit = ParseRateLimit(h)
	return r
}

// Code returns the envelope's error code, or "".
func (r *Response) Code() string {
	if r.Envelope == nil {
		return ""
	}
	return r.Envelope.Code
}

// Message returns the envelope's error message, or "".
func (r *Response) Message() string {
	if r.Envelope == nil {
		return ""
	}
	return r.Envelope.Message
}

// Bare reports an error answer with no JSON body: for a 403 it means the client is blocked.
func (r *Response) Bare() bool { return r.Status >= 400 && !r.JSON }

// ShouldRetry returns the server's x-should-retry word: +1 for true, -1 for false, 0 if none.
func ShouldRetry(h http.Header) int {
	switch strings.ToLower(strings.TrimSpace(h.Get("X-Should-Retry"))) {
	case "true":
		return 1
	case "false":
		return -1
	}
	return 0
}

// maxWait bounds a parsed server wait so that arithmetic on it never overflows; any such wait is
// far past every deadline anyway.
const maxWait = 1000 * 24 * time.Hour

// ParseRetryAfter reads a Retry-After value: delta-seconds or an HTTP-date. It reports false for
// an empty, negative or unparsable value. A date in the past is a wait of zero.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		return parseSeconds(v, time.Second)
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now)
	if d < 0 {
		d = 0
	}
	return min(d, maxWait), true
}

// parseSeconds reads a non-negative decimal number of units, digits and at most one point.
func parseSeconds(v string, unit time.Duration) (time.Duration, bool) {
	for i, c := range v {
		if (c < '0' || c > '9') && !(c == '.' && i > 0) {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || math.IsNaN(f) {
		return 0, false
	}
	if f*float64(unit) >= float64(maxWait) {
		return maxWait, true
	}
	return time.Duration(f * float64(unit)), true
}

// ServerWait is how long the server asked the client to wait, and which header said so:
// Retry-After (delta-seconds or HTTP-date), then retry-after-ms, then RateLimit-Reset.
func ServerWait(h http.Header, now time.Time) (time.Duration, string, bool) {
	if v := h.Get("Retry-After"); v != "" {
		if d, ok := ParseRetryAfter(v, now); ok {
			return d, "Retry-After " + strings.TrimSpace(v), true
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if d, ok := parseSeconds(v, time.Millisecond); ok {
			return d, "retry-after-ms " + v, true
		}
	}
	if v := strings.TrimSpace(h.Get("RateLimit-Reset")); v != "" {
		if d, ok := parseSeconds(v, time.Second); ok && d > 0 {
			return d, "RateLimit-Reset " + v, true
		}
	}
	return 0, "", false
}

// Backoff is the full-jitter wait before retry n (n = 1, 2, …): a uniform time in
// [0, min(cap, base·2^(n-1))], with rnd in [0, 1).
func Backoff(n int, base, cap time.Duration, rnd float64) time.Duration {
	if n < 1 {
		n = 1
	}
	ceiling := cap
	// For a large n the power is +Inf, which is never below the cap.
	if c := float64(base) * math.Pow(2, float64(n-1)); c < float64(cap) {
		ceiling = time.Duration(c)
	}
	if ceiling < 0 {
		ceiling = 0
	}
	rnd = min(max(rnd, 0), 1)
	return time.Duration(rnd * float64(ceiling))
}

// Jitter is the random extra time added to a server-directed wait: up to half a second.
const Jitter = 500 * time.Millisecond

// isJSONType reports whether a Content-Type is application/json or a +json type, parameters
// aside.
func isJSONType(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}
