package retry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

// With rnd fixed at 0.5, backoff before retry n is half its ceiling, and jitter is 250 ms.
func fixedRand() float64 { return 0.5 }

type engineCase struct {
	name       string
	method     string
	path       string
	body       string
	idempotent bool
	key        string
	steps      []step
	policy     func(*Policy)
	auth       Authorizer

	wantAttempts int
	wantOutcome  Outcome
	wantWaits    []time.Duration
	wantBody     string // substring of the final body, when set
	wantWhy      string // substring of the error or result reason, when set
}

func TestRepeatTable(t *testing.T) {
	for _, tc := range repeatCases() {
		t.Run(tc.name, func(t *testing.T) { runEngineCase(t, tc) })
	}
}

// repeatCases is the contract's repeat table, row by row.
func repeatCases() []engineCase {
	users := `{"email":"a@example.com"}`
	docsOK := `{"documents":[{"external_id":"d1","file_name":"a.pdf"},{"external_id":"d2","file_name":"b.pdf"}]}`
	docsMissing := `{"documents":[{"external_id":"d1"},{"file_name":"b.pdf"}]}`
	return []engineCase{
		{name: "429 on GET waits Retry-After plus jitter", method: "GET", path: "/v2/audits/a",
			steps:        []step{apiErr(429, "RATE_LIMITED", "Retry-After", "1"), answer(200, `{"ok":true}`)},
			wantAttempts: 2, wantOutcome: OK, wantWaits: []time.Duration{1250 * ms}},
		{name: "429 on unsafe write is repeated", method: "POST", path: "/v2/users", body: users,
			steps:        []step{apiErr(429, "RATE_LIMITED", "Retry-After", "2"), answer(201, `{"id":"u1"}`)},
			wantAttempts: 2, wantOutcome: OK, wantWaits: []time.Duration{2250 * ms}},
		{name: "408 on GET backs off", method: "GET", path: "/v2/audits/a",
			steps:        []step{answer(408, ""), answer(200, `{}`)},
			wantAttempts: 2, wantOutcome: OK, wantWaits: []time.Duration{250 * ms}},
		{name: "408 on unsafe write is repeated", method: "POST", path: "/v2/users", body: users,
			steps:        []step{answer(408, ""), answer(201, `{}`)},
			wantAttempts: 2, wantOutcome: OK, wantWaits: []time.Duration{250 * ms}},
		{name: "5xx on GET backs off with full jitter", method: "GET", path: "/v2/audits/a",
			steps:        []step{apiErr(500, "INTERNAL"), apiErr(502, "BAD_GATEWAY"), apiErr(504, "TIMEOUT"), answer(200, `{"audit_id":"a"}`)},
			wantAttempts: 4, wantOutcome: OK, wantWaits: []time.Duration{250 * ms, 500 * ms, 1000 * ms}, wantBody: `"audit_id"`},
		{name: "503 with Retry-After on GET waits it", method: "GET", path: "/v2/audits/a",
			steps:        []step{apiErr(503, "UNAVAILABLE", "Retry-After", "3"), answer(200, `{}`)},
			wantAttempts: 2, wantOutcome: OK, wantWaits: []time.Duration{3250 * ms}},
		{name: "5xx on unsafe write is not repeated", method: "POST", path: "/v2/users", body: users,
			steps:        []step{apiErr(500, "INTERNAL")},
			wantAttempts: 1, wantOutcome: UnknownOutcome},
		{name: "501 is final", method: "GET", path: "/v2/audits/a",
			steps:        []step{apiErr(501, "NOT_IMPLEMENTED")},
			wantAttempts: 1, wantOutcome: APIFailure},
		{name: "505 is final", method: "GET", path: "/v2/audits/a",
			steps:        []step{answer(505, "")},
			wantAttempts: 1, wantOutcome: APIFailure},
		{name: "404 is final", method: "GET", path: "/v2/audits/nope",
			steps:        []step{apiErr(404, "NOT_FOUND")},
			wantAttempts: 1, wantOutcome: APIFailure},
		{name: "422 on a write is final", method: "POST", path: "/v2/users", body: users,
			steps:        []step{apiErr(422, "INVALID")},
			wantAttempts: 1, wantOutcome: APIFailure},
		{name: "bare 403 blocks", method: "GET", path: "/v2/audits/a",
			steps:        []step{answer(403, "Forbidden")},
			wantAttempts: 1, wantOutcome: Blocked},
		{name: "bare 413 is an API error", method: "POST", path: "/v2/audits/batch_update", body: `{}`,
			steps:        []step{answer(413, "")},
			wantAttempts: 1, wantOutcome: APIFailure},
		{name: "JSON 403 access_denied is an auth error", method: "POST", path: "/v2/oauth/token", body: `{}`,
			steps:        []step{apiErr(403, "access_denied")},
			wantAttempts: 1, wantOutcome: AuthFailure},
		{name: "401 with a static token stops", method: "GET", path: "/v2/audits/a", auth: StaticToken("t"),
			steps:        []step{apiErr(401, "UNAUTHORIZED")},
			wantAttempts: 1, wantOutcome: AuthFailure},
		{name: "401 re-mints once and repeats once", method: "GET", path: "/v2/audits/a", auth: &renewer{},
			steps:        []step{apiErr(401, "UNAUTHORIZED"), answer(200, `{}`)},
			wantAttempts: 2, wantOutcome: OK},
		{name: "401 after the re-mint stops", method: "POST", path: "/v2/users", body: users, auth: &renewer{},
			steps:        []step{apiErr(401, "UNAUTHORIZED"), apiErr(401, "UNAUTHORIZED")},
			wantAttempts: 2, wantOutcome: AuthFailure},
		{name: "409 idempotency_conflict with a key is repeated", method: "POST", path: "/v2/payments", body: `{}`, key: "k1",
			steps:        []step{apiErr(409, "idempotency_conflict"), answer(201, `{}`)},
			wantAttempts: 2, wantOutcome: OK, wantWaits: []time.Duration{250 * ms}},
		{name: "409 idempotency_conflict without a key is final", method: "POST", path: "/v2/payments", body: `{}`,
			steps:        []step{apiErr(409, "idempotency_conflict")},
			wantAttempts: 1, wantOutcome: APIFailure},
		{name: "connection refused on unsafe write is repeated", method: "POST", path: "/v2/users", body: users,
			steps:        []step{refused(), answer(201, `{}`)},
			wantAttempts: 2, wantOutcome: OK, wantWaits: []time.Duration{250 * ms}},
		{name: "dropped connection on unsafe write is not repeated", method: "POST", path: "/v2/users", body: users,
			steps:        []step{dropped()},
			wantAttempts: 1, wantOutcome: UnknownOutcome},
		{name: "dropped connection on GET is repeated", method: "GET", path: "/v2/audits/a",
			steps:        []step{dropped(), answer(200, `{}`)},
			wantAttempts: 2, wantOutcome: OK},
		{name: "PATCH audit is safe", method: "PATCH", path: "/v2/audits/a", body: `{"flags":[]}`,
			steps:        []step{apiErr(500, "INTERNAL"), answer(200, `{}`)},
			wantAttempts: 2, wantOutcome: OK},
		{name: "batch_update is safe", method: "POST", path: "/v2/audits/batch_update", body: `{"audits":[]}`,
			steps:        []step{dropped(), answer(200, `{}`)},
			wantAttempts: 2, wantOutcome: OK},
		{name: "documents with every external_id are safe", method: "POST", path: "/v2/documents", body: docsOK,
			steps:        []step{apiErr(502, "BAD_GATEWAY"), answer(201, `{}`)},
			wantAttempts: 2, wantOutcome: OK},
		{name: "documents missing an external_id are unsafe", method: "POST", path: "/v2/documents", body: docsMissing,
			steps:        []step{apiErr(502, "BAD_GATEWAY")},
			wantAttempts: 1, wantOutcome: UnknownOutcome},
		{name: "documents with an empty array are unsafe", method: "POST", path: "/v2/documents", body: `{"documents":[]}`,
			steps:        []step{dropped()},
			wantAttempts: 1, wantOutcome: UnknownOutcome},
		{name: "INVITE_FAILED is repeated and a 409 on the repeat means done", method: "POST", path: "/v2/users", body: users,
			steps:        []step{apiErr(502, "INVITE_FAILED"), apiErr(409, "INVITATION_PENDING")},
			wantAttempts: 2, wantOutcome: OK, wantWhy: "already done"},
		{name: "USER_EXISTS on the repeat also means done", method: "POST", path: "/v2/users", body: users,
			steps:        []step{apiErr(502, "INVITE_FAILED"), apiErr(409, "USER_EXISTS")},
			wantAttempts: 2, wantOutcome: OK},
		{name: "USER_EXISTS on a first attempt is an API error", method: "POST", path: "/v2/users", body: users,
			steps:        []step{apiErr(409, "USER_EXISTS")},
			wantAttempts: 1, wantOutcome: APIFailure},
		{name: "delete user: 404 after an unknown outcome means done", method: "DELETE", path: "/v2/users/u1",
			steps:        []step{dropped(), apiErr(404, "NOT_FOUND")},
			wantAttempts: 2, wantOutcome: OK},
		{name: "delete user: 404 at first is an API error", method: "DELETE", path: "/v2/users/u1",
			steps:        []step{apiErr(404, "NOT_FOUND")},
			wantAttempts: 1, wantOutcome: APIFailure},
		{name: "delete user: REVOKE_FAILED is repeated", method: "DELETE", path: "/v2/users/u1",
			steps:        []step{apiErr(502, "REVOKE_FAILED"), answer(204, "")},
			wantAttempts: 2, wantOutcome: OK},
		{name: "email recipient without --idempotent is not repeated", method: "POST", path: "/v2/email_recipients", body: `{"email":"r@example.com"}`,
			steps:        []step{apiErr(503, "UNAVAILABLE")},
			wantAttempts: 1, wantOutcome: UnknownOutcome},
		{name: "email recipient --idempotent: 409 after an unknown outcome fetches it", method: "POST", path: "/v2/email_recipients",
			body: `{"email":"r@example.com"}`, idempotent: true,
			steps: []step{dropped(), apiErr(409, "EMAIL_RECIPIENT_EXISTS"),
				answer(200, `{"object":"list","data":[]}`),
				answer(200, `{"object":"list","data":[{"id":"er_1","email":"R@example.com"}]}`)},
			wantAttempts: 4, wantOutcome: OK, wantBody: `{"id":"er_1","email":"R@example.com"}`,
			wantWaits: []time.Duration{250 * ms, 250 * ms}},
		{name: "other writes are unsafe", method: "PUT", path: "/v2/things/1", body: `{}`,
			steps:        []step{apiErr(500, "INTERNAL")},
			wantAttempts: 1, wantOutcome: UnknownOutcome},
		{name: "--idempotent makes a write safe", method: "PUT", path: "/v2/things/1", body: `{}`, idempotent: true,
			steps:        []step{apiErr(500, "INTERNAL"), answer(200, `{}`)},
			wantAttempts: 2, wantOutcome: OK},
		{name: "x-should-retry false forbids a repeat", method: "GET", path: "/v2/audits/a",
			steps:        []step{apiErr(503, "UNAVAILABLE", "X-Should-Retry", "false")},
			wantAttempts: 1, wantOutcome: APIFailure, wantWhy: "x-should-retry: false"},
		{name: "x-should-retry false on an unsafe 5xx is still unknown", method: "POST", path: "/v2/users", body: users,
			steps:        []step{apiErr(500, "INTERNAL", "X-Should-Retry", "false")},
			wantAttempts: 1, wantOutcome: UnknownOutcome},
		{name: "x-should-retry true allows a repeat", method: "POST", path: "/v2/users", body: users,
			steps:        []step{apiErr(500, "INTERNAL", "X-Should-Retry", "true"), answer(201, `{}`)},
			wantAttempts: 2, wantOutcome: OK},
		{name: "retries run out", method: "GET", path: "/v2/audits/a",
			steps:        []step{apiErr(500, "INTERNAL")},
			wantAttempts: 5, wantOutcome: Exhausted, wantWaits: []time.Duration{250 * ms, 500 * ms, 1000 * ms, 2000 * ms},
			wantWhy: "gave up after 5 attempts"},
		{name: "--retry 0 sends once", method: "GET", path: "/v2/audits/a", policy: func(p *Policy) { p.Retries = 0 },
			steps:        []step{apiErr(429, "RATE_LIMITED", "Retry-After", "1")},
			wantAttempts: 1, wantOutcome: Exhausted},
		{name: "backoff is capped", method: "GET", path: "/v2/audits/a",
			policy:       func(p *Policy) { p.Retries = 7; p.MaxTime = 0 },
			steps:        []step{answer(500, "")},
			wantAttempts: 8, wantOutcome: Exhausted,
			wantWaits: []time.Duration{250 * ms, 500 * ms, 1000 * ms, 2000 * ms, 4000 * ms, 8000 * ms, 10000 * ms}},
		{name: "token endpoint makes at most 3 attempts", method: "POST", path: "/v2/oauth/token", body: `{}`,
			steps:        []step{apiErr(502, "BAD_GATEWAY")},
			wantAttempts: 3, wantOutcome: Exhausted},
		{name: "redirect is not followed without -L", method: "GET", path: "/v2/audits/a",
			steps:        []step{answer(302, "", "Location", "/v2/other")},
			wantAttempts: 1, wantOutcome: APIFailure, wantWhy: "use -L"},
		{name: "Retry-After 30s with 12s left fails at once", method: "GET", path: "/v2/audits/a",
			policy:       func(p *Policy) { p.MaxTime = 12 * time.Second },
			steps:        []step{apiErr(429, "RATE_LIMITED", "Retry-After", "30")},
			wantAttempts: 1, wantOutcome: Exhausted, wantWaits: []time.Duration{},
			wantWhy: "Retry-After 30s exceeds the 12s left of --max-time"},
		{name: "negative Retry-After falls back to backoff", method: "GET", path: "/v2/audits/a",
			steps:        []step{apiErr(429, "RATE_LIMITED", "Retry-After", "-5"), answer(200, `{}`)},
			wantAttempts: 2, wantOutcome: OK, wantWaits: []time.Duration{250 * ms}},
		{name: "garbage Retry-After falls back to backoff", method: "GET", path: "/v2/audits/a",
			steps:        []step{apiErr(429, "RATE_LIMITED", "Retry-After", "soon"), answer(200, `{}`)},
			wantAttempts: 2, wantOutcome: OK, wantWaits: []time.Duration{250 * ms}},
		{name: "retry-after-ms is honoured", method: "GET", path: "/v2/audits/a",
			steps:        []step{apiErr(429, "RATE_LIMITED", "Retry-After-Ms", "1500"), answer(200, `{}`)},
			wantAttempts: 2, wantOutcome: OK, wantWaits: []time.Duration{1750 * ms}},
		{name: "RateLimit-Reset is the last resort", method: "GET", path: "/v2/audits/a",
			steps:        []step{apiErr(429, "RATE_LIMITED", "RateLimit-Reset", "2"), answer(200, `{}`)},
			wantAttempts: 2, wantOutcome: OK, wantWaits: []time.Duration{2250 * ms}},
		{name: "huge Retry-After fails at once", method: "GET", path: "/v2/audits/a",
			steps:        []step{apiErr(429, "RATE_LIMITED", "Retry-After", "99999999999999999999")},
			wantAttempts: 1, wantOutcome: Exhausted, wantWaits: []time.Duration{}},
	}
}

func runEngineCase(t *testing.T, tc engineCase) {
	t.Helper()
	clock := newFakeClock()
	tr := &fakeTransport{steps: tc.steps}
	e := &Engine{Transport: tr, Clock: clock, Rand: fixedRand, Auth: tc.auth}
	p := DefaultPolicy()
	if tc.policy != nil {
		tc.policy(&p)
	}
	spec := mustSpec(t, tc.method, tc.path, tc.body, tc.idempotent, tc.key)
	res, err := e.Do(context.Background(), spec, p)
	checkEngineCase(t, tc, clock, len(tr.reqs), res, err)
}

func checkEngineCase(t *testing.T, tc engineCase, clock *fakeClock, sent int, res *Result, err error) {
	t.Helper()
	if got := OutcomeOf(err); got != tc.wantOutcome {
		t.Fatalf("outcome = %s (err %v), want %s", got, err, tc.wantOutcome)
	}
	if sent != tc.wantAttempts {
		t.Errorf("requests sent = %d, want %d", sent, tc.wantAttempts)
	}
	if res == nil || res.Attempts != tc.wantAttempts {
		t.Errorf("result attempts = %+v, want %d", res, tc.wantAttempts)
	}
	if tc.wantWaits != nil {
		if got := clock.Sleeps(); !reflect.DeepEqual(append([]time.Duration{}, got...), tc.wantWaits) {
			t.Errorf("waits = %v, want %v", got, tc.wantWaits)
		}
	}
	if tc.wantBody != "" && (res == nil || res.Response == nil || !strings.Contains(string(res.Response.Body), tc.wantBody)) {
		t.Errorf("final body does not hold %s: %+v", tc.wantBody, res)
	}
	if tc.wantWhy != "" {
		why := ""
		if err != nil {
			why = err.Error()
		} else if res != nil {
			why = res.Why
		}
		if !strings.Contains(why, tc.wantWhy) {
			t.Errorf("reason %q does not say %q", why, tc.wantWhy)
		}
	}
	if r, ok := tc.auth.(*renewer); ok && tc.wantAttempts > 1 && r.renewals != 1 {
		t.Errorf("renewals = %d, want 1", r.renewals)
	}
}

func TestHTTPDateRetryAfter(t *testing.T) {
	clock := newFakeClock()
	clock.now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	date := clock.now.Add(5 * time.Second).Format(http.TimeFormat)
	tr := &fakeTransport{steps: []step{apiErr(429, "RATE_LIMITED", "Retry-After", date), answer(200, `{}`)}}
	e := &Engine{Transport: tr, Clock: clock, Rand: fixedRand}
	if _, err := e.Do(context.Background(), mustSpec(t, "GET", "/v2/audits/a", "", false, ""), DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	if got := clock.Sleeps(); len(got) != 1 || got[0] != 5250*ms {
		t.Fatalf("waits = %v, want [5.25s]", got)
	}
}

func TestEventsReportEveryAttempt(t *testing.T) {
	clock := newFakeClock()
	tr := &fakeTransport{steps: []step{
		apiErr(429, "RATE_LIMITED", "Retry-After", "1", "RateLimit-Limit", "100", "RateLimit-Remaining", "0", "RateLimit-Reset", "1"),
		apiErr(503, "UNAVAILABLE"),
		answer(200, `{}`, "X-Request-Id", "req-ok"),
	}}
	var events []Event
	e := &Engine{Transport: tr, Clock: clock, Rand: fixedRand, Sink: SinkFunc(func(ev Event) { events = append(events, ev) })}
	if _, err := e.Do(context.Background(), mustSpec(t, "GET", "/v2/audits/a?x=1", "", false, ""), DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	type brief struct {
		Attempt, Retry int
		Decision       string
		Status         int
		RequestID      string
		Wait           time.Duration
		Source         string
	}
	var got []brief
	for _, ev := range events {
		got = append(got, brief{ev.Attempt, ev.Retry, ev.Decision, ev.Response.Status, ev.Response.RequestID, ev.Wait, ev.WaitSource})
		if ev.Path != "/v2/audits/a?x=1" || ev.Method != "GET" || ev.Retries != 4 {
			t.Errorf("event names the call wrongly: %+v", ev)
		}
	}
	want := []brief{
		{1, 1, "retry", 429, "req-RATE_LIMITED", 1250 * ms, "Retry-After 1"},
		{2, 2, "retry", 503, "req-UNAVAILABLE", 500 * ms, "backoff"},
		{3, 0, "done", 200, "req-ok", 0, ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events:\n got %+v\nwant %+v", got, want)
	}
	if rl := events[0].Response.RateLimit; !rl.Present || rl.Limit != 100 || rl.Remaining != 0 || rl.Reset != 1 {
		t.Errorf("ratelimit triple = %+v", rl)
	}
}

func TestRequestsCarryBodyHeadersAndKeyOnEveryAttempt(t *testing.T) {
	tr := &fakeTransport{steps: []step{dropped(), answer(201, `{}`)}}
	e := &Engine{Transport: tr, Clock: newFakeClock(), Rand: fixedRand, Auth: StaticToken("secret")}
	spec := mustSpec(t, "POST", "/v2/payments", `{"amount":1}`, false, "key-1")
	if _, err := e.Do(context.Background(), spec, DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	for i, req := range tr.reqs {
		b, _ := req.GetBody()
		var buf strings.Builder
		_, _ = io.Copy(&buf, b)
		if buf.String() != `{"amount":1}` {
			t.Errorf("attempt %d body = %q", i+1, buf.String())
		}
		if req.Header.Get("Idempotency-Key") != "key-1" || req.Header.Get("Content-Type") != "application/json" || req.Header.Get("Authorization") != "Bearer secret" {
			t.Errorf("attempt %d headers = %v", i+1, req.Header)
		}
	}
}

func TestInterruptEndsAWaitAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	tr := &fakeTransport{steps: []step{apiErr(429, "RATE_LIMITED", "Retry-After", "10")}}
	e := &Engine{Transport: tr, Clock: SystemClock{}, Rand: fixedRand,
		Sink: SinkFunc(func(ev Event) {
			if ev.Decision == "retry" {
				cancel()
			}
		})}
	start := time.Now()
	_, err := e.Do(ctx, mustSpec(t, "GET", "/v2/audits/a", "", false, ""), DefaultPolicy())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("the wait was not cut short by the cancellation")
	}
}

func TestMaxTimeStopsBeforeANewAttempt(t *testing.T) {
	clock := newFakeClock()
	// Each answer takes the clock past most of the budget.
	slow := func(s step) step {
		return func(req *http.Request) (*http.Response, error) {
			clock.mu.Lock()
			clock.now = clock.now.Add(4 * time.Second)
			clock.mu.Unlock()
			return s(req)
		}
	}
	tr := &fakeTransport{steps: []step{slow(apiErr(500, "INTERNAL"))}}
	e := &Engine{Transport: tr, Clock: clock, Rand: func() float64 { return 0 }}
	p := DefaultPolicy()
	p.MaxTime = 10 * time.Second
	p.Retries = 10
	_, err := e.Do(context.Background(), mustSpec(t, "GET", "/v2/audits/a", "", false, ""), p)
	var ex *ExhaustedError
	if !errors.As(err, &ex) || !strings.Contains(ex.Reason, "--max-time 10s reached") {
		t.Fatalf("err = %v, want exhausted by --max-time", err)
	}
	if len(tr.reqs) != 3 {
		t.Fatalf("requests = %d, want 3 (at 0s, 4s, 8s)", len(tr.reqs))
	}
}
