package retry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// An attempt that sent nothing does not undo what an earlier attempt may have done: after a
// DELETE was dropped and a repeat found no connection, a 404 still means "already done".
func TestRanSurvivesAnAttemptThatSentNothing(t *testing.T) {
	tc := engineCase{method: "DELETE", path: "/v2/users/u1",
		steps:        []step{dropped(), refused(), apiErr(404, "NOT_FOUND")},
		wantAttempts: 3, wantOutcome: OK, wantWhy: "already done"}
	runEngineCase(t, tc)
}

// A call stopped after its request went out may have run: the result says so, and the error
// is the cancellation (not an outcome of the call).
func TestCancelAfterSendingMarksTheCallMayHaveRun(t *testing.T) {
	for _, method := range []string{"POST", "GET"} {
		ctx, cancel := context.WithCancel(context.Background())
		tr := &fakeTransport{steps: []step{func(req *http.Request) (*http.Response, error) {
			wrote(req)
			cancel()
			return nil, req.Context().Err()
		}}}
		e := &Engine{Transport: tr, Clock: newFakeClock(), Rand: fixedRand}
		body := ""
		if method == "POST" {
			body = `{"email":"a@example.com"}`
		}
		res, err := e.Do(ctx, mustSpec(t, method, "/v2/users", body, false, ""), DefaultPolicy())
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
	tr := &fakeTransport{steps: []step{func(req *http.Request) (*http.Response, error) {
		cancel()
		return nil, req.Context().Err()
	}}}
	e := &Engine{Transport: tr, Clock: newFakeClock(), Rand: fixedRand}
	res, err := e.Do(ctx, mustSpec(t, "POST", "/v2/users", `{}`, false, ""), DefaultPolicy())
	if !errors.Is(err, context.Canceled) || res == nil || res.MayHaveRun {
		t.Fatalf("cancelled before sending: %+v %v", res, err)
	}
}

// Whether a call may have run follows its answers: a 2xx ran it, a 4xx did not.
func TestMayHaveRunFollowsTheAnswer(t *testing.T) {
	for _, c := range []struct {
		steps []step
		want  bool
	}{
		{[]step{answer(201, `{}`)}, true},
		{[]step{apiErr(422, "INVALID")}, false},
		{[]step{apiErr(429, "RATE_LIMITED", "Retry-After", "1"), apiErr(404, "NOT_FOUND")}, false},
		{[]step{apiErr(502, "BAD_GATEWAY")}, true},
	} {
		e := &Engine{Transport: &fakeTransport{steps: c.steps}, Clock: newFakeClock(), Rand: fixedRand}
		res, _ := e.Do(context.Background(), mustSpec(t, "POST", "/v2/things", `{}`, false, ""), DefaultPolicy())
		if res == nil || res.MayHaveRun != c.want {
			t.Errorf("%d steps ending %+v: MayHaveRun %v, want %v", len(c.steps), res, res != nil && res.MayHaveRun, c.want)
		}
	}
}

// The deadline check counts the jitter: Retry-After 12 plus 250 ms of jitter does not fit in
// 12.2 s, so the call ends at once without sleeping.
func TestDeadlineCheckCountsTheJitter(t *testing.T) {
	runEngineCase(t, engineCase{method: "GET", path: "/v2/audits/a",
		policy:       func(p *Policy) { p.MaxTime = 12200 * time.Millisecond },
		steps:        []step{apiErr(429, "RATE_LIMITED", "Retry-After", "12"), answer(200, `{}`)},
		wantAttempts: 1, wantOutcome: Exhausted, wantWaits: []time.Duration{},
		wantWhy: "Retry-After 12s exceeds the 12.2s left of --max-time"})
}

// When an attempt uses up the time to the deadline exactly, the reason says the cap was
// reached, not that a wait exceeds no time at all.
func TestAttemptEndingAtTheDeadlineSaysTheCapWasReached(t *testing.T) {
	clock := newFakeClock()
	tr := &fakeTransport{steps: []step{func(req *http.Request) (*http.Response, error) {
		clock.mu.Lock()
		clock.now = clock.now.Add(10 * time.Second)
		clock.mu.Unlock()
		return apiErr(503, "UNAVAILABLE")(req)
	}}}
	e := &Engine{Transport: tr, Clock: clock, Rand: fixedRand}
	p := DefaultPolicy()
	p.MaxTime = 10 * time.Second
	_, err := e.Do(context.Background(), mustSpec(t, "GET", "/v2/audits/a", "", false, ""), p)
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
		step   step
		failed bool
	}{
		{apiErr(500, "INTERNAL"), true}, {apiErr(503, "UNAVAILABLE"), true}, {answer(505, ""), true},
		{dropped(), true}, {refused(), true},
		{answer(200, `{}`), false}, {apiErr(404, "NOT_FOUND"), false}, {apiErr(429, "RATE_LIMITED"), false},
		{answer(499, ""), false},
	}
	for _, c := range cases {
		g := &recordingGate{}
		e := &Engine{Transport: &fakeTransport{steps: []step{c.step}}, Clock: newFakeClock(), Rand: fixedRand, Gate: g}
		p := DefaultPolicy()
		p.Retries = 0
		res, _ := e.Do(context.Background(), mustSpec(t, "GET", "/v2/audits/a", "", false, ""), p)
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
		steps               []step
		wantSent, wantAsked int
	}{
		{"429s", []step{apiErr(429, "RATE_LIMITED", "Retry-After", "1"), apiErr(429, "RATE_LIMITED", "Retry-After", "1"), answer(200, `{}`)}, 3, 0},
		{"503", []step{apiErr(503, "UNAVAILABLE"), answer(200, `{}`)}, 2, 1},
		{"dropped", []step{dropped(), answer(200, `{}`)}, 2, 1},
		{"refused twice", []step{refused(), refused(), answer(200, `{}`)}, 1, 2},
	}
	for _, c := range cases {
		b := &countingBudget{allow: true}
		e := &Engine{Transport: &fakeTransport{steps: c.steps}, Clock: newFakeClock(), Rand: fixedRand, Budget: b}
		if _, err := e.Do(context.Background(), mustSpec(t, "GET", "/v2/audits/a", "", false, ""), DefaultPolicy()); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if b.sent != c.wantSent || b.asked != c.wantAsked {
			t.Errorf("%s: budget heard %d sent and %d repeats asked, want %d and %d", c.name, b.sent, b.asked, c.wantSent, c.wantAsked)
		}
	}
	b := &countingBudget{allow: false}
	e := &Engine{Transport: &fakeTransport{steps: []step{apiErr(503, "UNAVAILABLE")}}, Clock: newFakeClock(), Rand: fixedRand, Budget: b}
	_, err := e.Do(context.Background(), mustSpec(t, "GET", "/v2/audits/a", "", false, ""), DefaultPolicy())
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
	tr := &fakeTransport{steps: []step{
		apiErr(503, "UNAVAILABLE", "RateLimit-Remaining", "7"),
		apiErr(429, "RATE_LIMITED", "Retry-After", "1", "RateLimit-Remaining", "0"),
		answer(200, `{}`),
	}}
	e := &Engine{Transport: tr, Clock: newFakeClock(), Rand: fixedRand, Limiter: l}
	if _, err := e.Do(context.Background(), mustSpec(t, "GET", "/v2/audits/a", "", false, ""), DefaultPolicy()); err != nil {
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
		return &Engine{Transport: &fakeTransport{steps: []step{answer(200, `{}`)}}, Clock: newFakeClock(), Rand: fixedRand}
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
		}, Internal, "limiter exploded"},
		{"a gate that fails", func(e *Engine) { e.Gate = &recordingGate{err: errors.New("tripped")} }, Exhausted, "circuit breaker: tripped"},
		{"no credential", func(e *Engine) { e.Auth = failingAuth{} }, Internal, "no token today"},
	}
	for _, c := range cases {
		e := spec()
		c.tune(e)
		res, err := e.Do(context.Background(), mustSpec(t, "GET", "/v2/audits/a", "", false, ""), DefaultPolicy())
		if OutcomeOf(err) != c.outcome || err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %v (outcome %s), want %s saying %q", c.name, err, OutcomeOf(err), c.outcome, c.why)
		}
		if res == nil || res.Attempts != 0 {
			t.Errorf("%s: result %+v, want no attempt", c.name, res)
		}
		if n := len(e.Transport.(*fakeTransport).reqs); n != 0 {
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
		_, err := e.Do(ctx, mustSpec(t, "GET", "/v2/audits/a", "", false, ""), DefaultPolicy())
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
	e := &Engine{Transport: &fakeTransport{steps: []step{apiErr(401, "UNAUTHORIZED")}}, Clock: newFakeClock(), Rand: fixedRand, Auth: failingRenewer{}}
	_, err := e.Do(context.Background(), mustSpec(t, "GET", "/v2/audits/a", "", false, ""), DefaultPolicy())
	if OutcomeOf(err) != AuthFailure || !strings.Contains(err.Error(), "re-minting the token failed: token endpoint down") {
		t.Fatalf("err = %v", err)
	}
}

// Each attempt carries the defaults a call lacks and keeps what the user set.
func TestRequestHeaderDefaults(t *testing.T) {
	tr := &fakeTransport{steps: []step{answer(200, `{}`)}}
	e := &Engine{Transport: tr, Clock: newFakeClock(), Rand: fixedRand, UserAgent: "brellium/test", Auth: StaticToken("tok")}
	if _, err := e.Do(context.Background(), mustSpec(t, "POST", "/v2/users", `{}`, false, ""), DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	h := tr.reqs[0].Header
	if h.Get("Accept") != "application/json" || h.Get("Content-Type") != "application/json" ||
		h.Get("User-Agent") != "brellium/test" || h.Get("Authorization") != "Bearer tok" {
		t.Errorf("defaults: %v", h)
	}
	tr = &fakeTransport{steps: []step{answer(200, `{}`)}}
	e.Transport = tr
	spec := mustSpec(t, "GET", "/v2/audits/a", "", false, "")
	spec.Header.Set("Accept", "text/csv")
	spec.Header.Set("User-Agent", "mine/1")
	spec.Header.Set("Authorization", "Basic abc")
	if _, err := e.Do(context.Background(), spec, DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	h = tr.reqs[0].Header
	if h.Get("Accept") != "text/csv" || h.Get("User-Agent") != "mine/1" || h.Get("Authorization") != "Basic abc" || h.Get("Content-Type") != "" {
		t.Errorf("the user's own headers were not kept: %v", h)
	}
}

// Each attempt's time is clipped to what is left of --max-time, and a timeout says how long
// the attempt had.
func TestAttemptTimeoutIsClippedToMaxTime(t *testing.T) {
	for _, timeout := range []time.Duration{0, 30 * time.Second} {
		tr := &fakeTransport{steps: []step{func(req *http.Request) (*http.Response, error) {
			<-req.Context().Done()
			return nil, req.Context().Err()
		}}}
		e := &Engine{Transport: tr, Clock: newFakeClock(), Rand: fixedRand}
		p := DefaultPolicy()
		p.Timeout, p.MaxTime, p.Retries = timeout, 40*time.Millisecond, 0
		_, err := e.Do(context.Background(), mustSpec(t, "GET", "/v2/audits/a", "", false, ""), p)
		var te *TimeoutError
		if !errors.As(err, &te) || te.After != 40*time.Millisecond || !strings.Contains(err.Error(), "timeout after 40ms") {
			t.Errorf("--timeout %v --max-time 40ms: %v, want a timeout after 40ms", timeout, err)
		}
	}
}

// The recipient's list is polled with growing backoff until it shows the recipient.
func TestFetchPollsWithGrowingBackoff(t *testing.T) {
	empty := answer(200, `{"object":"list","data":[]}`)
	runEngineCase(t, engineCase{method: "POST", path: "/v2/email_recipients", body: `{"email":"r@example.com"}`, idempotent: true,
		steps: []step{dropped(), apiErr(409, "EMAIL_RECIPIENT_EXISTS"), empty, empty, empty,
			answer(200, `{"object":"list","data":[{"id":"er_1","email":"r@example.com"}]}`)},
		wantAttempts: 6, wantOutcome: OK, wantBody: `"er_1"`,
		wantWaits: []time.Duration{250 * ms, 250 * ms, 500 * ms, 1000 * ms}})
}

func TestRedirectsStopAfterTen(t *testing.T) {
	var hops atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hops.Add(1)
		http.Redirect(w, r, fmt.Sprintf("/hop/%d", hops.Load()), http.StatusFound)
	}))
	defer srv.Close()
	base := mustSpec(t, "GET", "/start", "", false, "")
	base.URL.Scheme, base.URL.Host = "http", strings.TrimPrefix(srv.URL, "http://")
	e := &Engine{Transport: NewTransport(), Clock: newFakeClock(), Rand: fixedRand}
	p := DefaultPolicy()
	p.FollowRedirects, p.Retries = true, 0
	_, err := e.Do(context.Background(), base, p)
	if err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") || hops.Load() != 10 {
		t.Fatalf("err = %v after %d requests", err, hops.Load())
	}
}

// bigAnswer is a status with n bytes of body, its length unknown to the reader.
func bigAnswer(status, n int) step {
	return func(req *http.Request) (*http.Response, error) {
		wrote(req)
		return &http.Response{StatusCode: status, Proto: "HTTP/1.1", Header: http.Header{}, ContentLength: -1,
			Body: io.NopCloser(io.LimitReader(zeros{}, int64(n))), Request: req}, nil
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '0'
	}
	return len(p), nil
}

// Bodies are kept whole up to their limit (4 MiB for an error, 8 MiB for a 2xx), cut past it,
// and a 2xx over its limit is streamed when the policy takes streams.
func TestBodyLimits(t *testing.T) {
	cases := []struct {
		status, size int
		stream       bool
		wantKept     int
		wantCut      bool
		wantStreamed int
	}{
		{200, 5 << 20, false, 5 << 20, false, 0},
		{200, StreamAfter, false, StreamAfter, false, 0},
		{200, StreamAfter + 1, false, StreamAfter, true, 0},
		{299, StreamAfter + 10, true, 0, false, StreamAfter + 10},
		{300, 5 << 20, false, MaxErrorBody, true, 0},
		{404, MaxErrorBody, false, MaxErrorBody, false, 0},
		{404, 5 << 20, true, MaxErrorBody, true, 0},
	}
	for _, c := range cases {
		var out bytes.Buffer
		p := DefaultPolicy()
		p.Retries = 0
		if c.stream {
			p.Stream = func(*Response) (io.Writer, error) { return &out, nil }
		}
		e := &Engine{Transport: &fakeTransport{steps: []step{bigAnswer(c.status, c.size)}}, Clock: newFakeClock(), Rand: fixedRand}
		res, _ := e.Do(context.Background(), mustSpec(t, "GET", "/v2/audits/a", "", false, ""), p)
		if res == nil || res.Response == nil {
			t.Fatalf("%d of %d bytes: no response", c.status, c.size)
		}
		r := res.Response
		if len(r.Body) != c.wantKept || r.Truncated != c.wantCut || int(r.Streamed) != c.wantStreamed || out.Len() != c.wantStreamed {
			t.Errorf("%d of %d bytes (stream %v): kept %d cut %v streamed %d (%d out); want %d %v %d",
				c.status, c.size, c.stream, len(r.Body), r.Truncated, r.Streamed, out.Len(), c.wantKept, c.wantCut, c.wantStreamed)
		}
	}
}

// A failure to write a streamed body ends the call: it ran, and it is not repeated.
func TestStreamWriteFailureEndsTheCall(t *testing.T) {
	for _, failAt := range []string{"open", "first write", "later write"} {
		p := DefaultPolicy()
		writes := 0
		p.Stream = func(*Response) (io.Writer, error) {
			if failAt == "open" {
				return nil, errors.New("disk full")
			}
			return writerFunc(func(b []byte) (int, error) {
				writes++
				if failAt == "first write" || writes > 1 {
					return 0, errors.New("disk full")
				}
				return len(b), nil
			}), nil
		}
		tr := &fakeTransport{steps: []step{bigAnswer(200, StreamAfter+(1<<20))}}
		e := &Engine{Transport: tr, Clock: newFakeClock(), Rand: fixedRand}
		res, err := e.Do(context.Background(), mustSpec(t, "GET", "/v2/audits/a", "", false, ""), p)
		var swe *StreamWriteError
		if !errors.As(err, &swe) || !strings.Contains(err.Error(), "writing the response body: disk full") {
			t.Errorf("%s: err = %v", failAt, err)
		}
		if res == nil || !res.MayHaveRun || len(tr.reqs) != 1 {
			t.Errorf("%s: %+v after %d requests; want one request that may have run", failAt, res, len(tr.reqs))
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// failConn is a connection whose every write fails before a byte leaves.
type failConn struct{ net.Conn }

func (failConn) Write([]byte) (int, error) { return 0, errors.New("write: connection reset by peer") }
func (failConn) Read([]byte) (int, error)  { return 0, io.EOF }
func (failConn) Close() error              { return nil }

// A connection that takes no byte of the request counts as "nothing was sent", so even an
// unsafe write is repeated; the counting transport tells it apart from a request that left.
func TestAConnectionThatTookNoByteSentNothing(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	tr := NewTransport()
	dial := tr.DialContext
	var dials atomic.Int32
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) == 1 {
			return &countingConn{Conn: failConn{}}, nil
		}
		return dial(ctx, network, addr)
	}
	defer tr.CloseIdleConnections()
	spec := mustSpec(t, "POST", "/v2/users", `{"email":"a@example.com"}`, false, "")
	spec.URL.Scheme, spec.URL.Host = "http", strings.TrimPrefix(srv.URL, "http://")
	var events []Event
	e := &Engine{Transport: tr, Clock: newFakeClock(), Rand: fixedRand, Sink: SinkFunc(func(ev Event) { events = append(events, ev) })}
	res, err := e.Do(context.Background(), spec, DefaultPolicy())
	if err != nil || res.Attempts != 2 {
		t.Fatalf("err = %v, attempts %+v: a write that left no byte must be repeated", err, res)
	}
	if events[0].Sent || events[0].Decision != "retry" {
		t.Errorf("first attempt: %+v, want not sent and repeated", events[0])
	}
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
