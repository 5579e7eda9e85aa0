package retry_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	rt "github.com/brellium/brellium/internal/retrytest"
	. "github.com/brellium/brellium/retry"
)

// An attempt that sent nothing does not undo what an earlier attempt may have done: after a
// DELETE was dropped and a repeat found no connection, a 404 still means "already done".
func TestRanSurvivesAnAttemptThatSentNothing(t *testing.T) {
	runCase(t, rt.Case{Method: "DELETE", Path: "/v2/users/u1",
		Steps:        []rt.Step{rt.Dropped(), rt.Refused(), rt.APIErr(404, "NOT_FOUND")},
		WantAttempts: 3, WantOutcome: OK, WantWhy: "already done"})
}

// A call stopped after its request went out may have run: the result says so, and the error
// is the cancellation (not an outcome of the call).
func TestCancelAfterSendingMarksTheCallMayHaveRun(t *testing.T) {
	cancelling := func(cancel context.CancelFunc, sent bool) rt.Step {
		return rt.Func(func(ctx context.Context, _ *Outgoing) (*Response, bool, error) {
			cancel()
			return nil, sent, ctx.Err()
		})
	}
	for _, method := range []string{"POST", "GET"} {
		ctx, cancel := context.WithCancel(context.Background())
		e := &Engine{Sender: &rt.FakeSender{Steps: []rt.Step{cancelling(cancel, true)}}, Clock: rt.NewFakeClock(), Rand: rt.FixedRand}
		body := ""
		if method == "POST" {
			body = `{"email":"a@example.com"}`
		}
		res, err := e.Do(ctx, rt.Spec(t, nil, method, "/v2/users", body, false, ""), DefaultPolicy())
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: err = %v, want context.Canceled", method, err)
		}
		if res == nil || !res.MayHaveRun || res.Attempts != 1 {
			t.Fatalf("%s: result %+v: a call cancelled after it was sent may have run", method, res)
		}
		cancel()
	}
	// Cancelled before anything was written: it did not run.
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{Sender: &rt.FakeSender{Steps: []rt.Step{cancelling(cancel, false)}}, Clock: rt.NewFakeClock(), Rand: rt.FixedRand}
	res, err := e.Do(ctx, rt.Spec(t, nil, "POST", "/v2/users", `{}`, false, ""), DefaultPolicy())
	if !errors.Is(err, context.Canceled) || res == nil || res.MayHaveRun {
		t.Fatalf("cancelled before sending: %+v %v", res, err)
	}
}

// Whether a call may have run follows its answers: a 2xx ran it, a 4xx did not.
func TestMayHaveRunFollowsTheAnswer(t *testing.T) {
	for _, c := range []struct {
		steps []rt.Step
		want  bool
	}{
		{[]rt.Step{rt.Answer(201, `{}`)}, true},
		{[]rt.Step{rt.APIErr(422, "INVALID")}, false},
		{[]rt.Step{rt.APIErr(429, "RATE_LIMITED", "Retry-After", "1"), rt.APIErr(404, "NOT_FOUND")}, false},
		{[]rt.Step{rt.APIErr(502, "BAD_GATEWAY")}, true},
	} {
		e := &Engine{Sender: &rt.FakeSender{Steps: c.steps}, Clock: rt.NewFakeClock(), Rand: rt.FixedRand}
		res, _ := e.Do(context.Background(), rt.Spec(t, nil, "POST", "/v2/things", `{}`, false, ""), DefaultPolicy())
		if res == nil || res.MayHaveRun != c.want {
			t.Errorf("%d steps ending %+v: MayHaveRun %v, want %v", len(c.steps), res, res != nil && res.MayHaveRun, c.want)
		}
	}
}

// The deadline check counts the jitter: Retry-After 12 plus 250 ms of jitter does not fit in
// 12.2 s, so the call ends at once without sleeping.
func TestDeadlineCheckCountsTheJitter(t *testing.T) {
	runCase(t, rt.Case{Method: "GET", Path: "/v2/audits/a",
		Policy:       func(p *Policy) { p.MaxTime = 12200 * time.Millisecond },
		Steps:        []rt.Step{rt.APIErr(429, "RATE_LIMITED", "Retry-After", "12"), rt.Answer(200, `{}`)},
		WantAttempts: 1, WantOutcome: Exhausted, WantWaits: []time.Duration{},
		WantWhy: "Retry-After 12s exceeds the 12.2s left of --max-time"})
}

// When an attempt uses up the time to the deadline exactly, the reason says the cap was
// reached, not that a wait exceeds no time at all.
func TestAttemptEndingAtTheDeadlineSaysTheCapWasReached(t *testing.T) {
	clock := rt.NewFakeClock()
	tr := &rt.FakeSender{Steps: []rt.Step{rt.Func(func(context.Context, *Outgoing) (*Response, bool, error) {
		clock.Advance(10 * time.Second)
		return rt.FakeAnswer(503, `{"error":{"code":"UNAVAILABLE"}}`), true, nil
	})}}
	e := &Engine{Sender: tr, Clock: clock, Rand: rt.FixedRand}
	p := DefaultPolicy()
	p.MaxTime = 10 * time.Second
	_, err := e.Do(context.Background(), rt.Spec(t, nil, "GET", "/v2/audits/a", "", false, ""), p)
	var ex *ExhaustedError
	if !errors.As(err, &ex) || !strings.Contains(ex.Reason, "--max-time 10s reached") || strings.Contains(ex.Reason, "exceeds") {
		t.Fatalf("err = %v, want --max-time 10s reached", err)
	}
}

// recordingGate is a Gate that records whether each attempt counted as a failure.
type recordingGate struct {
	mu     sync.Mutex
	failed []bool
	err    error
}

func (g *recordingGate) Enter(context.Context) (func(bool), error) {
	if g.err != nil {
		return nil, g.err
	}
	return func(f bool) { g.mu.Lock(); g.failed = append(g.failed, f); g.mu.Unlock() }, nil
}

// The breaker hears every 5xx and every attempt without an answer as a failure, and nothing
// else.
func TestBreakerHearsEachFailure(t *testing.T) {
	cases := []struct {
		step   rt.Step
		failed bool
	}{
		{rt.APIErr(500, "INTERNAL"), true}, {rt.APIErr(503, "UNAVAILABLE"), true}, {rt.Answer(505, ""), true},
		{rt.Dropped(), true}, {rt.Refused(), true},
		{rt.Answer(200, `{}`), false}, {rt.APIErr(404, "NOT_FOUND"), false}, {rt.APIErr(429, "RATE_LIMITED"), false},
		{rt.Answer(499, ""), false},
	}
	for _, c := range cases {
		g := &recordingGate{}
		e := &Engine{Sender: &rt.FakeSender{Steps: []rt.Step{c.step}}, Clock: rt.NewFakeClock(), Rand: rt.FixedRand, Gate: g}
		p := DefaultPolicy()
		p.Retries = 0
		res, _ := e.Do(context.Background(), rt.Spec(t, nil, "GET", "/v2/audits/a", "", false, ""), p)
		status := 0
		if res != nil && res.Response != nil {
			status = res.Response.Status
		}
		if len(g.failed) != 1 || g.failed[0] != c.failed {
			t.Errorf("status %d: the gate heard %v, want [%v]", status, g.failed, c.failed)
		}
	}
}

// countingBudget is a Budget that counts what the engine asks of it.
type countingBudget struct {
	sent, asked int
	allow       bool
}

func (b *countingBudget) Sent()            { b.sent++ }
func (b *countingBudget) AllowRetry() bool { b.asked++; return b.allow }

// The retry budget is charged for repeats after failures, never for 429s (the limiter paces
// those); it counts the requests that reached the server, not those that found no connection.
func TestRetryBudgetChargesFailuresOnly(t *testing.T) {
	cases := []struct {
		name                string
		steps               []rt.Step
		wantSent, wantAsked int
	}{
		{"429s", []rt.Step{rt.APIErr(429, "RATE_LIMITED", "Retry-After", "1"), rt.APIErr(429, "RATE_LIMITED", "Retry-After", "1"), rt.Answer(200, `{}`)}, 3, 0},
		{"503", []rt.Step{rt.APIErr(503, "UNAVAILABLE"), rt.Answer(200, `{}`)}, 2, 1},
		{"dropped", []rt.Step{rt.Dropped(), rt.Answer(200, `{}`)}, 2, 1},
		{"refused twice", []rt.Step{rt.Refused(), rt.Refused(), rt.Answer(200, `{}`)}, 1, 2},
	}
	for _, c := range cases {
		b := &countingBudget{allow: true}
		e := &Engine{Sender: &rt.FakeSender{Steps: c.steps}, Clock: rt.NewFakeClock(), Rand: rt.FixedRand, Budget: b}
		if _, err := e.Do(context.Background(), rt.Spec(t, nil, "GET", "/v2/audits/a", "", false, ""), DefaultPolicy()); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if b.sent != c.wantSent || b.asked != c.wantAsked {
			t.Errorf("%s: budget heard %d sent and %d repeats asked, want %d and %d", c.name, b.sent, b.asked, c.wantSent, c.wantAsked)
		}
	}
	b := &countingBudget{allow: false}
	e := &Engine{Sender: &rt.FakeSender{Steps: []rt.Step{rt.APIErr(503, "UNAVAILABLE")}}, Clock: rt.NewFakeClock(), Rand: rt.FixedRand, Budget: b}
	_, err := e.Do(context.Background(), rt.Spec(t, nil, "GET", "/v2/audits/a", "", false, ""), DefaultPolicy())
	if OutcomeOf(err) != Exhausted || !strings.Contains(err.Error(), "--retry-budget") {
		t.Fatalf("a spent budget: %v", err)
	}
}

func TestRetryBudgetAllowsItsMinimumThenItsShare(t *testing.T) {
	b := &RetryBudget{Ratio: 0.2, Min: 10}
	for i := 1; i <= 10; i++ {
		if !b.AllowRetry() {
			t.Fatalf("repeat %d refused: the minimum is 10", i)
		}
	}
	if b.AllowRetry() {
		t.Fatal("an 11th repeat was allowed with nothing sent")
	}
	for i := 0; i < 60; i++ {
		b.Sent()
	}
	// 20 % of 60 is 12: two more.
	if !b.AllowRetry() || !b.AllowRetry() || b.AllowRetry() {
		t.Fatal("after 60 requests the budget should allow exactly 12 repeats in all")
	}
}

// recordingLimiter counts what the engine tells the limiter.
type recordingLimiter struct {
	waits, drains int
	observed      []int
	err           error
}

func (l *recordingLimiter) Wait(ctx context.Context) error {
	l.waits++
	if l.err != nil {
		return l.err
	}
	return ctx.Err()
}
func (l *recordingLimiter) Observe(n int) { l.observed = append(l.observed, n) }
func (l *recordingLimiter) Drain()        { l.drains++ }

func TestLimiterHearsRemainingAndOnly429sDrainIt(t *testing.T) {
	l := &recordingLimiter{}
	tr := &rt.FakeSender{Steps: []rt.Step{
		rt.APIErr(503, "UNAVAILABLE", "RateLimit-Remaining", "7"),
		rt.APIErr(429, "RATE_LIMITED", "Retry-After", "1", "RateLimit-Remaining", "0"),
		rt.Answer(200, `{}`),
	}}
	e := &Engine{Sender: tr, Clock: rt.NewFakeClock(), Rand: rt.FixedRand, Limiter: l}
	if _, err := e.Do(context.Background(), rt.Spec(t, nil, "GET", "/v2/audits/a", "", false, ""), DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	if l.waits != 3 || l.drains != 1 || fmt.Sprint(l.observed) != "[7 0]" {
		t.Errorf("limiter heard %d waits, %d drains, observed %v; want 3, 1, [7 0]", l.waits, l.drains, l.observed)
	}
}

// Each way the limiter, the gate or the credential can refuse an attempt ends the call with
// the right outcome and reason.
func TestRefusalsBeforeAnAttempt(t *testing.T) {
	spec := func() *Engine {
		return &Engine{Sender: &rt.FakeSender{Steps: []rt.Step{rt.Answer(200, `{}`)}}, Clock: rt.NewFakeClock(), Rand: rt.FixedRand}
	}
	cases := []struct {
		name    string
		tune    func(*Engine)
		outcome Outcome
		why     string
	}{
		{"budget token past the deadline", func(e *Engine) {
			e.Limiter = &recordingLimiter{err: &BudgetWaitError{Wait: 10 * time.Second, Left: time.Second}}
		}, Exhausted, "the client budget's next token in 10s exceeds the 1s left of --max-time"},
		{"deadline while waiting for a token", func(e *Engine) {
			e.Limiter = &recordingLimiter{err: context.DeadlineExceeded}
		}, Exhausted, "--max-time 1m0s reached waiting for the client budget"},
		{"a broken limiter", func(e *Engine) {
			e.Limiter = &recordingLimiter{err: errors.New("limiter exploded")}
		}, "", "limiter exploded"},
		{"a gate that fails", func(e *Engine) { e.Gate = &recordingGate{err: errors.New("tripped")} }, Exhausted, "circuit breaker: tripped"},
		{"no credential", func(e *Engine) { e.Auth = failingAuth{} }, AuthFailure, "no credential: no token today"},
	}
	for _, c := range cases {
		e := spec()
		c.tune(e)
		res, err := e.Do(context.Background(), rt.Spec(t, nil, "GET", "/v2/audits/a", "", false, ""), DefaultPolicy())
		if OutcomeOf(err) != c.outcome || err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %v (outcome %s), want %s saying %q", c.name, err, OutcomeOf(err), c.outcome, c.why)
		}
		if res == nil || res.Attempts != 0 {
			t.Errorf("%s: result %+v, want no attempt", c.name, res)
		}
		if n := len(e.Sender.(*rt.FakeSender).Sent); n != 0 {
			t.Errorf("%s: %d requests sent", c.name, n)
		}
	}
	// An interruption while waiting for the gate or the credential is the interruption.
	for name, tune := range map[string]func(*Engine){
		"gate": func(e *Engine) { e.Gate = &recordingGate{err: context.Canceled} },
		"auth": func(e *Engine) { e.Auth = failingAuth{} },
	} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		e := spec()
		tune(e)
		// The limiter lets the attempt through although ctx is done, to reach the gate or auth.
		e.Limiter = passLimiter{}
		_, err := e.Do(ctx, rt.Spec(t, nil, "GET", "/v2/audits/a", "", false, ""), DefaultPolicy())
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v, want context.Canceled", name, err)
		}
	}
}

type passLimiter struct{}

func (passLimiter) Wait(context.Context) error { return nil }
func (passLimiter) Observe(int)                {}
func (passLimiter) Drain()                     {}

type failingAuth struct{}

func (failingAuth) Authorization(ctx context.Context) (string, error) {
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	return "", errors.New("no token today")
}
func (failingAuth) Renewable() bool             { return false }
func (failingAuth) Renew(context.Context) error { return nil }

// failingRenewer can be renewed, but the mint fails.
type failingRenewer struct{}

func (failingRenewer) Authorization(context.Context) (string, error) { return "Bearer t", nil }
func (failingRenewer) Renewable() bool                               { return true }
func (failingRenewer) Renew(context.Context) error                   { return errors.New("token endpoint down") }

func TestFailedRenewIsAnAuthError(t *testing.T) {
	e := &Engine{Sender: &rt.FakeSender{Steps: []rt.Step{rt.APIErr(401, "UNAUTHORIZED")}}, Clock: rt.NewFakeClock(), Rand: rt.FixedRand, Auth: failingRenewer{}}
	_, err := e.Do(context.Background(), rt.Spec(t, nil, "GET", "/v2/audits/a", "", false, ""), DefaultPolicy())
	if OutcomeOf(err) != AuthFailure || !strings.Contains(err.Error(), "re-minting the token failed: token endpoint down") {
		t.Fatalf("err = %v", err)
	}
}

// Each attempt carries the defaults a call lacks and keeps what the user set.
func TestRequestHeaderDefaults(t *testing.T) {
	tr := &rt.FakeSender{Steps: []rt.Step{rt.Answer(200, `{}`)}}
	e := &Engine{Sender: tr, Clock: rt.NewFakeClock(), Rand: rt.FixedRand, UserAgent: "brellium/test", Auth: rt.StaticToken("tok")}
	if _, err := e.Do(context.Background(), rt.Spec(t, nil, "POST", "/v2/users", `{}`, false, ""), DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	h := tr.Sent[0].Header
	if h.Get("Accept") != "application/json" || h.Get("Content-Type") != "application/json" ||
		h.Get("User-Agent") != "brellium/test" || h.Get("Authorization") != "Bearer tok" {
		t.Errorf("defaults: %v", h)
	}
	tr = &rt.FakeSender{Steps: []rt.Step{rt.Answer(200, `{}`)}}
	e.Sender = tr
	spec := rt.Spec(t, nil, "GET", "/v2/audits/a", "", false, "")
	spec.Header.Set("Accept", "text/csv")
	spec.Header.Set("User-Agent", "mine/1")
	spec.Header.Set("Authorization", "Basic abc")
	if _, err := e.Do(context.Background(), spec, DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	h = tr.Sent[0].Header
	if h.Get("Accept") != "text/csv" || h.Get("User-Agent") != "mine/1" || h.Get("Authorization") != "Basic abc" || h.Get("Content-Type") != "" {
		t.Errorf("the user's own headers were not kept: %v", h)
	}
}

// Each attempt's time is clipped to what is left of --max-time; a call with no time cap gives
// each attempt its own.
func TestAttemptTimeoutIsClippedToMaxTime(t *testing.T) {
	cases := []struct{ timeout, maxTime, want time.Duration }{
		{0, 40 * time.Millisecond, 40 * time.Millisecond},
		{30 * time.Second, 40 * time.Millisecond, 40 * time.Millisecond},
		{30 * time.Second, time.Minute, 30 * time.Second},
		{30 * time.Second, 0, 30 * time.Second},
		{0, 0, 0},
	}
	for _, c := range cases {
		tr := &rt.FakeSender{Steps: []rt.Step{rt.Answer(200, `{}`)}}
		e := &Engine{Sender: tr, Clock: rt.NewFakeClock(), Rand: rt.FixedRand}
		p := DefaultPolicy()
		p.Timeout, p.MaxTime = c.timeout, c.maxTime
		if _, err := e.Do(context.Background(), rt.Spec(t, nil, "GET", "/v2/audits/a", "", false, ""), p); err != nil {
			t.Fatal(err)
		}
		if got := tr.Sent[0].Timeout; got != c.want {
			t.Errorf("--timeout %v --max-time %v: the attempt had %v, want %v", c.timeout, c.maxTime, got, c.want)
		}
	}
}

// The engine tells the sender which calls repeat whatever became of an attempt without an
// answer (Free): safe calls, but not those whose endpoint reads "it may have run" from a later
// answer.
func TestFreeCallsAreTheSafeOnesWithoutARanRule(t *testing.T) {
	cases := []struct {
		method, path, body string
		free               bool
	}{
		{"GET", "/v2/audits/a", "", true},
		{"PATCH", "/v2/audits/a", `{"flags":[]}`, true},
		{"DELETE", "/v2/users/u1", "", false},
		{"POST", "/v2/users", `{}`, false},
		{"PUT", "/v2/things/1", `{}`, false},
	}
	for _, c := range cases {
		tr := &rt.FakeSender{Steps: []rt.Step{rt.Answer(200, `{}`)}}
		e := &Engine{Sender: tr, Clock: rt.NewFakeClock()}
		p := DefaultPolicy()
		p.FollowRedirects = true
		if _, err := e.Do(context.Background(), rt.Spec(t, nil, c.method, c.path, c.body, false, ""), p); err != nil {
			t.Fatal(err)
		}
		if o := tr.Sent[0]; o.Free != c.free || !o.FollowRedirects {
			t.Errorf("%s %s: free %v follow %v, want free %v", c.method, c.path, o.Free, o.FollowRedirects, c.free)
		}
	}
}

// The recipient's list is polled with growing backoff until it shows the recipient.
func TestFetchPollsWithGrowingBackoff(t *testing.T) {
	empty := rt.Answer(200, `{"object":"list","data":[]}`)
	runCase(t, rt.Case{Method: "POST", Path: "/v2/email_recipients", Body: `{"email":"r@example.com"}`, Idempotent: true,
		Steps: []rt.Step{rt.Dropped(), rt.APIErr(409, "EMAIL_RECIPIENT_EXISTS"), empty, empty, empty,
			rt.Answer(200, `{"object":"list","data":[{"id":"er_1","email":"r@example.com"}]}`)},
		WantAttempts: 6, WantOutcome: OK, WantBody: `"er_1"`,
		WantWaits: []time.Duration{250 * ms, 250 * ms, 500 * ms, 1000 * ms}})
}

func TestSystemClockSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	if err := (SystemClock{}).Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep(1h) with a context cancelled after 10ms = %v", err)
	}
	for i := 0; i < 50; i++ {
		if err := (SystemClock{}).Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
			t.Fatalf("Sleep(0) with a done context = %v", err)
		}
	}
	if err := (SystemClock{}).Sleep(context.Background(), -time.Second); err != nil {
		t.Fatal(err)
	}
}
