// Package retrytest holds what the tests of the engine, its senders and its limiters share: a
// fake clock, a fake sender that plays scripted answers, and the contract's repeat table as data
// that each can play (the engine against the fake sender, the senders over a real wire).
package retrytest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brellium/brellium/request"
	"github.com/brellium/brellium/retry"
)

// FakeClock runs every sleep at once and records it.
type FakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

// NewFakeClock returns a clock at the real time now.
func NewFakeClock() *FakeClock { return &FakeClock{now: time.Now()} }

// Now returns the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep records d and moves the clock by it, unless ctx is done.
func (c *FakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return nil
}

// Advance moves the clock by d without a sleep.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set puts the clock at t.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// Sleeps returns the sleeps so far.
func (c *FakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration{}, c.sleeps...)
}

// FixedRand makes backoff half its ceiling and jitter 250 ms.
func FixedRand() float64 { return 0.5 }

// Step is one scripted attempt: an answer (Status, Body, Headers), a request that went out and
// lost its connection (Drop), a connection that could not be made (Refuse), or, for the fake
// sender only, any function.
type Step struct {
	Status  int
	Body    string
	Headers []string // name, value, name, value, …
	Drop    bool
	Refuse  bool
	Func    func(ctx context.Context, o *retry.Outgoing) (*retry.Response, bool, error)
}

// Answer is a response; headers alternate name, value. A body that starts with { is JSON.
func Answer(status int, body string, headers ...string) Step {
	return Step{Status: status, Body: body, Headers: headers}
}

// APIErr is the API's error envelope for code, with x-request-id "req-CODE".
func APIErr(status int, code string, headers ...string) Step {
	body := `{"error":{"type":"api_error","code":"` + code + `","message":"` + code + ` happened","request_id":"req-` + code + `"}}`
	return Answer(status, body, append([]string{"X-Request-Id", "req-" + code}, headers...)...)
}

// Dropped writes the request, then loses the connection.
func Dropped() Step { return Step{Drop: true} }

// Refused fails before any byte is written.
func Refused() Step { return Step{Refuse: true} }

// Func is a step of the fake sender's that runs f.
func Func(f func(ctx context.Context, o *retry.Outgoing) (*retry.Response, bool, error)) Step {
	return Step{Func: f}
}

// Header is the step's answer header.
func (s Step) Header() http.Header {
	h := http.Header{}
	if strings.HasPrefix(s.Body, "{") {
		h.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(s.Headers); i += 2 {
		h.Set(s.Headers[i], s.Headers[i+1])
	}
	return h
}

// FakeSender plays its steps, one an attempt (the last one again once they run out), and keeps
// every attempt it was given.
type FakeSender struct {
	mu    sync.Mutex
	Steps []Step
	Sent  []*retry.Outgoing
}

// Send plays the next step.
func (f *FakeSender) Send(ctx context.Context, o *retry.Outgoing) (*retry.Response, bool, error) {
	f.mu.Lock()
	f.Sent = append(f.Sent, o)
	if len(f.Steps) == 0 {
		f.mu.Unlock()
		return nil, false, errors.New("fake sender: no step left")
	}
	s := f.Steps[0]
	if len(f.Steps) > 1 {
		f.Steps = f.Steps[1:]
	}
	f.mu.Unlock()
	switch {
	case s.Func != nil:
		return s.Func(ctx, o)
	case s.Refuse:
		return nil, false, errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	case s.Drop:
		return nil, true, io.ErrUnexpectedEOF
	}
	var body []byte
	if o.Spec.Method != http.MethodHead {
		body = []byte(s.Body)
	}
	return retry.NewResponse(s.Status, "", "HTTP/1.1", s.Header(), body), true, nil
}

// Attempts returns how many attempts were sent.
func (f *FakeSender) Attempts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.Sent)
}

// Renewer is an Authorizer that can be renewed and counts renewals.
type Renewer struct{ Renewals int }

func (r *Renewer) Authorization(context.Context) (string, error) { return "Bearer t", nil }
func (r *Renewer) Renewable() bool                               { return true }
func (r *Renewer) Renew(context.Context) error                   { r.Renewals++; return nil }

// StaticToken is a bearer token that cannot be renewed.
type StaticToken string

func (t StaticToken) Authorization(context.Context) (string, error) {
	return "Bearer " + string(t), nil
}
func (StaticToken) Renewable() bool             { return false }
func (StaticToken) Renew(context.Context) error { return errors.New("static") }

// Spec builds a call to base (https://api.brellium.test when nil).
func Spec(t testing.TB, base *url.URL, method, target, body string, idempotent bool, key string) *request.Spec {
	t.Helper()
	if base == nil {
		base, _ = url.Parse("https://api.brellium.test")
	}
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	s, err := request.New(base, request.Options{Method: method, Target: target, Body: b, Idempotent: idempotent, IdempotencyKey: key})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Case is one row of the repeat table: a call, the attempts it meets, and what must follow.
type Case struct {
	Name       string
	Method     string
	Path       string
	Body       string
	Idempotent bool
	Key        string
	Steps      []Step
	Policy     func(*retry.Policy)
	Auth       retry.Authorizer

	WantAttempts int
	WantOutcome  retry.Outcome
	WantWaits    []time.Duration
	WantBody     string // substring of the final body, when set
	WantWhy      string // substring of the error or result reason, when set
}

// HasRefused reports whether a step of the case is a refused connection, which a server cannot
// play.
func (tc Case) HasRefused() bool {
	for _, s := range tc.Steps {
		if s.Refuse {
			return true
		}
	}
	return false
}

// Fresh returns the case with an Auth of its own, so that runs count their renewals apart.
func (tc Case) Fresh() Case {
	if _, ok := tc.Auth.(*Renewer); ok {
		tc.Auth = &Renewer{}
	}
	return tc
}

// PolicyOf is the default policy with the case's changes.
func (tc Case) PolicyOf() retry.Policy {
	p := retry.DefaultPolicy()
	if tc.Policy != nil {
		tc.Policy(&p)
	}
	return p
}

// Check compares what a run of the case gave with what the case wants.
func (tc Case) Check(t *testing.T, clock *FakeClock, sent int, res *retry.Result, err error) {
	t.Helper()
	if got := retry.OutcomeOf(err); got != tc.WantOutcome {
		t.Fatalf("outcome = %q (err %v), want %s", got, err, tc.WantOutcome)
	}
	if sent != tc.WantAttempts {
		t.Errorf("requests sent = %d, want %d", sent, tc.WantAttempts)
	}
	if res == nil || res.Attempts != tc.WantAttempts {
		t.Errorf("result attempts = %+v, want %d", res, tc.WantAttempts)
	}
	if tc.WantWaits != nil {
		if got := clock.Sleeps(); !reflect.DeepEqual(got, tc.WantWaits) {
			t.Errorf("waits = %v, want %v", got, tc.WantWaits)
		}
	}
	if tc.WantBody != "" && (res == nil || res.Response == nil || !strings.Contains(string(res.Response.Body), tc.WantBody)) {
		t.Errorf("final body does not hold %s: %+v", tc.WantBody, res)
	}
	if tc.WantWhy != "" {
		why := ""
		if err != nil {
			why = err.Error()
		} else if res != nil {
			why = res.Why
		}
		if !strings.Contains(why, tc.WantWhy) {
			t.Errorf("reason %q does not say %q", why, tc.WantWhy)
		}
	}
	if r, ok := tc.Auth.(*Renewer); ok && tc.WantAttempts > 1 && r.Renewals != 1 {
		t.Errorf("renewals = %d, want 1", r.Renewals)
	}
}

// Cases is the contract's repeat table, row by row: what each sequence of answers leads to.
func Cases() []Case {
	users := `{"email":"a@example.com"}`
	docsOK := `{"documents":[{"external_id":"d1","file_name":"a.pdf"},{"external_id":"d2","file_name":"b.pdf"}]}`
	docsMissing := `{"documents":[{"external_id":"d1"},{"file_name":"b.pdf"}]}`
	return []Case{
		{Name: "429 on GET waits Retry-After plus jitter", Method: "GET", Path: "/v2/audits/a",
			Steps:        []Step{APIErr(429, "RATE_LIMITED", "Retry-After", "1"), Answer(200, `{"ok":true}`)},
			WantAttempts: 2, WantOutcome: retry.OK, WantWaits: []time.Duration{1250 * time.Millisecond}},
		{Name: "429 on unsafe write is repeated", Method: "POST", Path: "/v2/users", Body: users,
			Steps:        []Step{APIErr(429, "RATE_LIMITED", "Retry-After", "2"), Answer(201, `{"id":"u1"}`)},
			WantAttempts: 2, WantOutcome: retry.OK, WantWaits: []time.Duration{2250 * time.Millisecond}},
		{Name: "408 on GET backs off", Method: "GET", Path: "/v2/audits/a",
			Steps:        []Step{Answer(408, ""), Answer(200, `{}`)},
			WantAttempts: 2, WantOutcome: retry.OK, WantWaits: []time.Duration{250 * time.Millisecond}},
		{Name: "408 on unsafe write is repeated", Method: "POST", Path: "/v2/users", Body: users,
			Steps:        []Step{Answer(408, ""), Answer(201, `{}`)},
			WantAttempts: 2, WantOutcome: retry.OK, WantWaits: []time.Duration{250 * time.Millisecond}},
		{Name: "5xx on GET backs off with full jitter", Method: "GET", Path: "/v2/audits/a",
			Steps:        []Step{APIErr(500, "INTERNAL"), APIErr(502, "BAD_GATEWAY"), APIErr(504, "TIMEOUT"), Answer(200, `{"audit_id":"a"}`)},
			WantAttempts: 4, WantOutcome: retry.OK, WantWaits: []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, 1000 * time.Millisecond}, WantBody: `"audit_id"`},
		{Name: "503 with Retry-After on GET waits it", Method: "GET", Path: "/v2/audits/a",
			Steps:        []Step{APIErr(503, "UNAVAILABLE", "Retry-After", "3"), Answer(200, `{}`)},
			WantAttempts: 2, WantOutcome: retry.OK, WantWaits: []time.Duration{3250 * time.Millisecond}},
		{Name: "5xx on unsafe write is not repeated", Method: "POST", Path: "/v2/users", Body: users,
			Steps:        []Step{APIErr(500, "INTERNAL")},
			WantAttempts: 1, WantOutcome: retry.UnknownOutcome},
		{Name: "501 is final", Method: "GET", Path: "/v2/audits/a",
			Steps:        []Step{APIErr(501, "NOT_IMPLEMENTED")},
			WantAttempts: 1, WantOutcome: retry.APIFailure},
		{Name: "505 is final", Method: "GET", Path: "/v2/audits/a",
			Steps:        []Step{Answer(505, "")},
			WantAttempts: 1, WantOutcome: retry.APIFailure},
		{Name: "404 is final", Method: "GET", Path: "/v2/audits/nope",
			Steps:        []Step{APIErr(404, "NOT_FOUND")},
			WantAttempts: 1, WantOutcome: retry.APIFailure},
		{Name: "422 on a write is final", Method: "POST", Path: "/v2/users", Body: users,
			Steps:        []Step{APIErr(422, "INVALID")},
			WantAttempts: 1, WantOutcome: retry.APIFailure},
		{Name: "bare 403 blocks", Method: "GET", Path: "/v2/audits/a",
			Steps:        []Step{Answer(403, "Forbidden")},
			WantAttempts: 1, WantOutcome: retry.Blocked},
		{Name: "bare 413 is an API error", Method: "POST", Path: "/v2/audits/batch_update", Body: `{}`,
			Steps:        []Step{Answer(413, "")},
			WantAttempts: 1, WantOutcome: retry.APIFailure},
		{Name: "JSON 403 access_denied is an auth error", Method: "POST", Path: "/v2/oauth/token", Body: `{}`,
			Steps:        []Step{APIErr(403, "access_denied")},
			WantAttempts: 1, WantOutcome: retry.AuthFailure},
		{Name: "401 with a static token stops", Method: "GET", Path: "/v2/audits/a", Auth: StaticToken("t"),
			Steps:        []Step{APIErr(401, "UNAUTHORIZED")},
			WantAttempts: 1, WantOutcome: retry.AuthFailure},
		{Name: "401 re-mints once and repeats once", Method: "GET", Path: "/v2/audits/a", Auth: &Renewer{},
			Steps:        []Step{APIErr(401, "UNAUTHORIZED"), Answer(200, `{}`)},
			WantAttempts: 2, WantOutcome: retry.OK},
		{Name: "401 after the re-mint stops", Method: "POST", Path: "/v2/users", Body: users, Auth: &Renewer{},
			Steps:        []Step{APIErr(401, "UNAUTHORIZED"), APIErr(401, "UNAUTHORIZED")},
			WantAttempts: 2, WantOutcome: retry.AuthFailure},
		{Name: "409 idempotency_conflict with a key is repeated", Method: "POST", Path: "/v2/payments", Body: `{}`, Key: "k1",
			Steps:        []Step{APIErr(409, "idempotency_conflict"), Answer(201, `{}`)},
			WantAttempts: 2, WantOutcome: retry.OK, WantWaits: []time.Duration{250 * time.Millisecond}},
		{Name: "409 idempotency_conflict without a key is final", Method: "POST", Path: "/v2/payments", Body: `{}`,
			Steps:        []Step{APIErr(409, "idempotency_conflict")},
			WantAttempts: 1, WantOutcome: retry.APIFailure},
		{Name: "connection refused on unsafe write is repeated", Method: "POST", Path: "/v2/users", Body: users,
			Steps:        []Step{Refused(), Answer(201, `{}`)},
			WantAttempts: 2, WantOutcome: retry.OK, WantWaits: []time.Duration{250 * time.Millisecond}},
		{Name: "dropped connection on unsafe write is not repeated", Method: "POST", Path: "/v2/users", Body: users,
			Steps:        []Step{Dropped()},
			WantAttempts: 1, WantOutcome: retry.UnknownOutcome},
		{Name: "dropped connection on GET is repeated", Method: "GET", Path: "/v2/audits/a",
			Steps:        []Step{Dropped(), Answer(200, `{}`)},
			WantAttempts: 2, WantOutcome: retry.OK},
		{Name: "PATCH audit is safe", Method: "PATCH", Path: "/v2/audits/a", Body: `{"flags":[]}`,
			Steps:        []Step{APIErr(500, "INTERNAL"), Answer(200, `{}`)},
			WantAttempts: 2, WantOutcome: retry.OK},
		{Name: "batch_update is safe", Method: "POST", Path: "/v2/audits/batch_update", Body: `{"audits":[]}`,
			Steps:        []Step{Dropped(), Answer(200, `{}`)},
			WantAttempts: 2, WantOutcome: retry.OK},
		{Name: "documents with every external_id are safe", Method: "POST", Path: "/v2/documents", Body: docsOK,
			Steps:        []Step{APIErr(502, "BAD_GATEWAY"), Answer(201, `{}`)},
			WantAttempts: 2, WantOutcome: retry.OK},
		{Name: "documents missing an external_id are unsafe", Method: "POST", Path: "/v2/documents", Body: docsMissing,
			Steps:        []Step{APIErr(502, "BAD_GATEWAY")},
			WantAttempts: 1, WantOutcome: retry.UnknownOutcome},
		{Name: "documents with an empty array are unsafe", Method: "POST", Path: "/v2/documents", Body: `{"documents":[]}`,
			Steps:        []Step{Dropped()},
			WantAttempts: 1, WantOutcome: retry.UnknownOutcome},
		{Name: "INVITE_FAILED is repeated and a 409 on the repeat means done", Method: "POST", Path: "/v2/users", Body: users,
			Steps:        []Step{APIErr(502, "INVITE_FAILED"), APIErr(409, "INVITATION_PENDING")},
			WantAttempts: 2, WantOutcome: retry.OK, WantWhy: "already done"},
		{Name: "USER_EXISTS on the repeat also means done", Method: "POST", Path: "/v2/users", Body: users,
			Steps:        []Step{APIErr(502, "INVITE_FAILED"), APIErr(409, "USER_EXISTS")},
			WantAttempts: 2, WantOutcome: retry.OK},
		{Name: "USER_EXISTS on a first attempt is an API error", Method: "POST", Path: "/v2/users", Body: users,
			Steps:        []Step{APIErr(409, "USER_EXISTS")},
			WantAttempts: 1, WantOutcome: retry.APIFailure},
		{Name: "delete user: 404 after an unknown outcome means done", Method: "DELETE", Path: "/v2/users/u1",
			Steps:        []Step{Dropped(), APIErr(404, "NOT_FOUND")},
			WantAttempts: 2, WantOutcome: retry.OK},
		{Name: "delete user: 404 at first is an API error", Method: "DELETE", Path: "/v2/users/u1",
			Steps:        []Step{APIErr(404, "NOT_FOUND")},
			WantAttempts: 1, WantOutcome: retry.APIFailure},
		{Name: "delete user: REVOKE_FAILED is repeated", Method: "DELETE", Path: "/v2/users/u1",
			Steps:        []Step{APIErr(502, "REVOKE_FAILED"), Answer(204, "")},
			WantAttempts: 2, WantOutcome: retry.OK},
		{Name: "email recipient without --idempotent is not repeated", Method: "POST", Path: "/v2/email_recipients", Body: `{"email":"r@example.com"}`,
			Steps:        []Step{APIErr(503, "UNAVAILABLE")},
			WantAttempts: 1, WantOutcome: retry.UnknownOutcome},
		{Name: "email recipient --Idempotent: 409 after an unknown outcome fetches it", Method: "POST", Path: "/v2/email_recipients",
			Body: `{"email":"r@example.com"}`, Idempotent: true,
			Steps: []Step{Dropped(), APIErr(409, "EMAIL_RECIPIENT_EXISTS"),
				Answer(200, `{"object":"list","data":[]}`),
				Answer(200, `{"object":"list","data":[{"id":"er_1","email":"R@example.com"}]}`)},
			WantAttempts: 4, WantOutcome: retry.OK, WantBody: `{"id":"er_1","email":"R@example.com"}`,
			WantWaits: []time.Duration{250 * time.Millisecond, 250 * time.Millisecond}},
		{Name: "other writes are unsafe", Method: "PUT", Path: "/v2/things/1", Body: `{}`,
			Steps:        []Step{APIErr(500, "INTERNAL")},
			WantAttempts: 1, WantOutcome: retry.UnknownOutcome},
		{Name: "--idempotent makes a write safe", Method: "PUT", Path: "/v2/things/1", Body: `{}`, Idempotent: true,
			Steps:        []Step{APIErr(500, "INTERNAL"), Answer(200, `{}`)},
			WantAttempts: 2, WantOutcome: retry.OK},
		{Name: "x-should-retry false forbids a repeat", Method: "GET", Path: "/v2/audits/a",
			Steps:        []Step{APIErr(503, "UNAVAILABLE", "X-Should-Retry", "false")},
			WantAttempts: 1, WantOutcome: retry.APIFailure, WantWhy: "x-should-retry: false"},
		{Name: "x-should-retry false on an unsafe 5xx is still unknown", Method: "POST", Path: "/v2/users", Body: users,
			Steps:        []Step{APIErr(500, "INTERNAL", "X-Should-Retry", "false")},
			WantAttempts: 1, WantOutcome: retry.UnknownOutcome},
		{Name: "x-should-retry true allows a repeat", Method: "POST", Path: "/v2/users", Body: users,
			Steps:        []Step{APIErr(500, "INTERNAL", "X-Should-Retry", "true"), Answer(201, `{}`)},
			WantAttempts: 2, WantOutcome: retry.OK},
		{Name: "retries run out", Method: "GET", Path: "/v2/audits/a",
			Steps:        []Step{APIErr(500, "INTERNAL")},
			WantAttempts: 5, WantOutcome: retry.Exhausted, WantWaits: []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, 1000 * time.Millisecond, 2000 * time.Millisecond},
			WantWhy: "gave up after 5 attempts"},
		{Name: "--retry 0 sends once", Method: "GET", Path: "/v2/audits/a", Policy: func(p *retry.Policy) { p.Retries = 0 },
			Steps:        []Step{APIErr(429, "RATE_LIMITED", "Retry-After", "1")},
			WantAttempts: 1, WantOutcome: retry.Exhausted},
		{Name: "backoff is capped", Method: "GET", Path: "/v2/audits/a",
			Policy:       func(p *retry.Policy) { p.Retries = 7; p.MaxTime = 0 },
			Steps:        []Step{Answer(500, "")},
			WantAttempts: 8, WantOutcome: retry.Exhausted,
			WantWaits: []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, 1000 * time.Millisecond, 2000 * time.Millisecond, 4000 * time.Millisecond, 8000 * time.Millisecond, 10000 * time.Millisecond}},
		{Name: "token endpoint makes at most 3 attempts", Method: "POST", Path: "/v2/oauth/token", Body: `{}`,
			Steps:        []Step{APIErr(502, "BAD_GATEWAY")},
			WantAttempts: 3, WantOutcome: retry.Exhausted},
		{Name: "redirect is not followed without -L", Method: "GET", Path: "/v2/audits/a",
			Steps:        []Step{Answer(302, "", "Location", "/v2/other")},
			WantAttempts: 1, WantOutcome: retry.APIFailure, WantWhy: "use -L"},
		{Name: "Retry-After 30s with 12s left fails at once", Method: "GET", Path: "/v2/audits/a",
			Policy:       func(p *retry.Policy) { p.MaxTime = 12 * time.Second },
			Steps:        []Step{APIErr(429, "RATE_LIMITED", "Retry-After", "30")},
			WantAttempts: 1, WantOutcome: retry.Exhausted, WantWaits: []time.Duration{},
			WantWhy: "Retry-After 30s exceeds the 12s left of --max-time"},
		{Name: "negative Retry-After falls back to backoff", Method: "GET", Path: "/v2/audits/a",
			Steps:        []Step{APIErr(429, "RATE_LIMITED", "Retry-After", "-5"), Answer(200, `{}`)},
			WantAttempts: 2, WantOutcome: retry.OK, WantWaits: []time.Duration{250 * time.Millisecond}},
		{Name: "garbage Retry-After falls back to backoff", Method: "GET", Path: "/v2/audits/a",
			Steps:        []Step{APIErr(429, "RATE_LIMITED", "Retry-After", "soon"), Answer(200, `{}`)},
			WantAttempts: 2, WantOutcome: retry.OK, WantWaits: []time.Duration{250 * time.Millisecond}},
		{Name: "retry-after-ms is honoured", Method: "GET", Path: "/v2/audits/a",
			Steps:        []Step{APIErr(429, "RATE_LIMITED", "Retry-After-Ms", "1500"), Answer(200, `{}`)},
			WantAttempts: 2, WantOutcome: retry.OK, WantWaits: []time.Duration{1750 * time.Millisecond}},
		{Name: "RateLimit-Reset is the last resort", Method: "GET", Path: "/v2/audits/a",
			Steps:        []Step{APIErr(429, "RATE_LIMITED", "RateLimit-Reset", "2"), Answer(200, `{}`)},
			WantAttempts: 2, WantOutcome: retry.OK, WantWaits: []time.Duration{2250 * time.Millisecond}},
		{Name: "huge Retry-After fails at once", Method: "GET", Path: "/v2/audits/a",
			Steps:        []Step{APIErr(429, "RATE_LIMITED", "Retry-After", "99999999999999999999")},
			WantAttempts: 1, WantOutcome: retry.Exhausted, WantWaits: []time.Duration{}},
	}
}

// FakeAnswer is the response a fake sender gives for Answer(status, body, headers…).
func FakeAnswer(status int, body string, headers ...string) *retry.Response {
	return retry.NewResponse(status, "", "HTTP/1.1", Answer(status, body, headers...).Header(), []byte(body))
}
