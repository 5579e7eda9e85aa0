package retry

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brellium/brellium/request"
)

// The server's x-should-retry word is read whatever its case: "False" forbids a repeat as
// "false" does.
func TestShouldRetryIgnoresCase(t *testing.T) {
	cases := map[string]int{"true": 1, "True": 1, " TRUE ": 1, "false": -1, "False": -1, "FALSE": -1, "": 0, "maybe": 0, "1": 0}
	for v, want := range cases {
		h := http.Header{}
		if v != "" {
			h.Set("X-Should-Retry", v)
		}
		if got := ShouldRetry(h); got != want {
			t.Errorf("ShouldRetry(%q) = %d, want %d", v, got, want)
		}
	}
	h := http.Header{"Content-Type": {"application/json"}, "X-Should-Retry": {"False"}}
	r := NewResponse(503, "", "HTTP/1.1", h, []byte(`{"error":{"code":"UNAVAILABLE"}}`))
	if d := Decide(Attempt{Response: r, Class: safeClass()}); d.Verdict != Stop || !strings.Contains(d.Why, "x-should-retry: false") {
		t.Errorf("a safe 503 with X-Should-Retry: False: %+v, want stop", d)
	}
}

// A remaining count of 0 is a reading like any other: a 429 usually carries it.
func TestParseRateLimitKeepsZero(t *testing.T) {
	h := http.Header{}
	h.Set("RateLimit-Limit", "100")
	h.Set("RateLimit-Remaining", "0")
	h.Set("RateLimit-Reset", "0")
	rl := ParseRateLimit(h)
	if !rl.Present || !rl.HasRemaining || rl.Remaining != 0 || rl.Limit != 100 || rl.Reset != 0 {
		t.Errorf("ParseRateLimit = %+v, want limit 100, remaining 0 (read), reset 0", rl)
	}
	for _, bad := range []string{"-1", "x", "1.5", "99999999999"} {
		h.Set("RateLimit-Remaining", bad)
		if rl := ParseRateLimit(h); rl.HasRemaining {
			t.Errorf("RateLimit-Remaining %q was taken as %d", bad, rl.Remaining)
		}
	}
	if rl := ParseRateLimit(http.Header{}); rl.Present || rl.HasRemaining {
		t.Errorf("no headers gave %+v", rl)
	}
	only := http.Header{}
	only.Set("RateLimit-Reset", "3")
	if rl := ParseRateLimit(only); !rl.Present || rl.HasRemaining || rl.Reset != 3 {
		t.Errorf("RateLimit-Reset alone gave %+v", rl)
	}
}

func TestResponseStatusTextAndEnvelopeFrom400(t *testing.T) {
	h := http.Header{"Content-Type": {"application/json"}}
	r := NewResponse(400, "", "HTTP/1.1", h, []byte(`{"error":{"code":"INVALID_CONTENT_TYPE","message":"m"}}`))
	if r.StatusText != "400 Bad Request" || r.Code() != "INVALID_CONTENT_TYPE" || r.Bare() {
		t.Errorf("400: text %q code %q bare %v", r.StatusText, r.Code(), r.Bare())
	}
	if r := NewResponse(200, "200 Fine", "HTTP/1.1", h, []byte(`{"error":{"code":"X"}}`)); r.StatusText != "200 Fine" || r.Code() != "" {
		t.Errorf("a 2xx body is no error envelope, and a given status text is kept: %q %q", r.StatusText, r.Code())
	}
	if r := NewResponse(399, "", "HTTP/1.1", http.Header{}, nil); r.Bare() {
		t.Error("a 399 is not an error answer")
	}
	if r := NewResponse(400, "", "HTTP/1.1", http.Header{}, []byte("bad")); !r.Bare() {
		t.Error("a 400 without a JSON body is bare")
	}
	// The request id comes from the header first, then from the envelope.
	h2 := http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {" hdr-1 "}}
	if r := NewResponse(404, "", "HTTP/1.1", h2, []byte(`{"error":{"code":"N","request_id":"env-1"}}`)); r.RequestID != "hdr-1" {
		t.Errorf("request id = %q, want the header's", r.RequestID)
	}
}

// Retry-After-Ms and RateLimit-Reset take digits with at most one inner point: ".5" is refused.
func TestServerWaitRefusesALeadingPoint(t *testing.T) {
	for _, name := range []string{"Retry-After-Ms", "RateLimit-Reset"} {
		h := http.Header{}
		h.Set(name, ".5")
		if d, src, ok := ServerWait(h, time.Now()); ok {
			t.Errorf("%s .5 gave %v (%s)", name, d, src)
		}
		h.Set(name, "1.5")
		if _, _, ok := ServerWait(h, time.Now()); !ok {
			t.Errorf("%s 1.5 was refused", name)
		}
	}
}

func TestDefaultPolicyIsTheContracts(t *testing.T) {
	p := DefaultPolicy()
	if p.Retries != 4 || p.MaxTime != 60*time.Second || p.Timeout != 30*time.Second ||
		p.BackoffBase != 500*time.Millisecond || p.BackoffCap != 20*time.Second || p.FollowRedirects {
		t.Errorf("DefaultPolicy = %+v", p)
	}
}

func TestFormatDuration(t *testing.T) {
	cases := map[time.Duration]string{
		-time.Second:              "0s",
		0:                         "0s",
		1234567 * time.Nanosecond: "1ms",
		450 * time.Millisecond:    "450ms",
		999 * time.Millisecond:    "999ms",
		time.Second:               "1s",
		1260 * time.Millisecond:   "1.3s",
		59940 * time.Millisecond:  "59.9s",
		time.Minute:               "1m0s",
		90600 * time.Millisecond:  "1m31s",
	}
	for d, want := range cases {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// An attempt with no error and no answer says "no answer", never "<nil>".
func TestDecideNamesAMissingAnswer(t *testing.T) {
	d := Decide(Attempt{Class: safeClass()})
	if d.Verdict != Again || !strings.Contains(d.Why, "no connection made (no answer)") {
		t.Errorf("Decide with no answer and no error: %+v", d)
	}
}

func TestFailureLines(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{&APIError{Failure{Method: "GET", Path: "/v2/x", Status: 404, Code: "NOT_FOUND", Message: "no such audit", RequestID: "r-1", Reason: "retrying cannot fix it"}},
			"api error: GET /v2/x 404 NOT_FOUND: no such audit (retrying cannot fix it) request-id r-1"},
		{&ExhaustedError{Failure{Method: "GET", Path: "/v2/x", Cause: errors.New("connection refused")}},
			"gave up: GET /v2/x: connection refused"},
		{&ExhaustedError{Failure{Method: "GET", Path: "/v2/x", Cause: errors.New("connection refused"), Reason: "no connection made (connection refused)"}},
			"gave up: GET /v2/x (no connection made (connection refused))"},
		{&UnknownOutcomeError{Failure{Method: "POST", Path: "/v2/users", Status: 502, Cause: errors.New("ignored with a status")}},
			"outcome unknown: POST /v2/users 502"},
		{&BlockedError{Failure{Method: "GET", Path: "/"}}, "blocked: GET /"},
		{&AuthError{Failure{Method: "GET", Path: "/", Status: 401, Message: "expired"}}, "auth error: GET / 401: expired"},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q\n          want %q", got, c.want)
		}
	}
}

func TestOutcomeOfEachTypedError(t *testing.T) {
	f := Failure{}
	cases := map[Outcome]error{
		OK: nil, APIFailure: &APIError{f}, Exhausted: &ExhaustedError{f}, Blocked: &BlockedError{f},
		UnknownOutcome: &UnknownOutcomeError{f}, AuthFailure: &AuthError{f}, "": errors.New("not the engine's"),
	}
	for want, err := range cases {
		if got := OutcomeOf(err); got != want {
			t.Errorf("OutcomeOf(%T) = %s, want %s", err, got, want)
		}
		if err != nil && want != "" {
			if got := OutcomeOf(newCallError(want, f)); got != want {
				t.Errorf("newCallError(%s) is %s", want, got)
			}
		}
	}
}

func safeClass() request.Class { return request.Class{Safe: true} }
