package retry_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	rt "github.com/brellium/brellium/internal/retrytest"
	. "github.com/brellium/brellium/retry"
)

const ms = time.Millisecond

func TestRepeatTable(t *testing.T) {
	for _, tc := range rt.Cases() {
		t.Run(tc.Name, func(t *testing.T) { runCase(t, tc) })
	}
}

// runCase plays a repeat-table case against the fake sender.
func runCase(t *testing.T, tc rt.Case) {
	t.Helper()
	clock := rt.NewFakeClock()
	tr := &rt.FakeSender{Steps: tc.Steps}
	e := &Engine{Sender: tr, Clock: clock, Rand: rt.FixedRand, Auth: tc.Auth}
	spec := rt.Spec(t, nil, tc.Method, tc.Path, tc.Body, tc.Idempotent, tc.Key)
	res, err := e.Do(context.Background(), spec, tc.PolicyOf())
	tc.Check(t, clock, tr.Attempts(), res, err)
}

func TestHTTPDateRetryAfter(t *testing.T) {
	clock := rt.NewFakeClock()
	clock.Set(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	date := clock.Now().Add(5 * time.Second).Format(http.TimeFormat)
	tr := &rt.FakeSender{Steps: []rt.Step{rt.APIErr(429, "RATE_LIMITED", "Retry-After", date), rt.Answer(200, `{}`)}}
	e := &Engine{Sender: tr, Clock: clock, Rand: rt.FixedRand}
	if _, err := e.Do(context.Background(), rt.Spec(t, nil, "GET", "/v2/audits/a", "", false, ""), DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	if got := clock.Sleeps(); len(got) != 1 || got[0] != 5250*ms {
		t.Fatalf("waits = %v, want [5.25s]", got)
	}
}

func TestEventsReportEveryAttempt(t *testing.T) {
	clock := rt.NewFakeClock()
	tr := &rt.FakeSender{Steps: []rt.Step{
		rt.APIErr(429, "RATE_LIMITED", "Retry-After", "1", "RateLimit-Limit", "100", "RateLimit-Remaining", "0", "RateLimit-Reset", "1"),
		rt.APIErr(503, "UNAVAILABLE"),
		rt.Answer(200, `{}`, "X-Request-Id", "req-ok"),
	}}
	var events []Event
	e := &Engine{Sender: tr, Clock: clock, Rand: rt.FixedRand, Sink: SinkFunc(func(ev Event) { events = append(events, ev) })}
	if _, err := e.Do(context.Background(), rt.Spec(t, nil, "GET", "/v2/audits/a?x=1", "", false, ""), DefaultPolicy()); err != nil {
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
	tr := &rt.FakeSender{Steps: []rt.Step{rt.Dropped(), rt.Answer(201, `{}`)}}
	e := &Engine{Sender: tr, Clock: rt.NewFakeClock(), Rand: rt.FixedRand, Auth: rt.StaticToken("secret")}
	spec := rt.Spec(t, nil, "POST", "/v2/payments", `{"amount":1}`, false, "key-1")
	if _, err := e.Do(context.Background(), spec, DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	for i, o := range tr.Sent {
		if string(o.Spec.Body) != `{"amount":1}` {
			t.Errorf("attempt %d body = %q", i+1, o.Spec.Body)
		}
		if o.Header.Get("Idempotency-Key") != "key-1" || o.Header.Get("Content-Type") != "application/json" || o.Header.Get("Authorization") != "Bearer secret" {
			t.Errorf("attempt %d headers = %v", i+1, o.Header)
		}
	}
	if len(tr.Sent) != 2 {
		t.Errorf("%d attempts, want 2", len(tr.Sent))
	}
}

func TestInterruptEndsAWaitAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	tr := &rt.FakeSender{Steps: []rt.Step{rt.APIErr(429, "RATE_LIMITED", "Retry-After", "10")}}
	e := &Engine{Sender: tr, Clock: SystemClock{}, Rand: rt.FixedRand,
		Sink: SinkFunc(func(ev Event) {
			if ev.Decision == "retry" {
				cancel()
			}
		})}
	start := time.Now()
	_, err := e.Do(ctx, rt.Spec(t, nil, "GET", "/v2/audits/a", "", false, ""), DefaultPolicy())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("the wait was not cut short by the cancellation")
	}
}

func TestMaxTimeStopsBeforeANewAttempt(t *testing.T) {
	clock := rt.NewFakeClock()
	// Each answer takes the clock past most of the budget.
	slow := rt.Func(func(context.Context, *Outgoing) (*Response, bool, error) {
		clock.Advance(4 * time.Second)
		return rt.FakeAnswer(500, `{"error":{"code":"INTERNAL"}}`), true, nil
	})
	tr := &rt.FakeSender{Steps: []rt.Step{slow}}
	e := &Engine{Sender: tr, Clock: clock, Rand: func() float64 { return 0 }}
	p := DefaultPolicy()
	p.MaxTime = 10 * time.Second
	p.Retries = 10
	_, err := e.Do(context.Background(), rt.Spec(t, nil, "GET", "/v2/audits/a", "", false, ""), p)
	var ex *ExhaustedError
	if !errors.As(err, &ex) || !strings.Contains(ex.Reason, "--max-time 10s reached") {
		t.Fatalf("err = %v, want exhausted by --max-time", err)
	}
	if tr.Attempts() != 3 {
		t.Fatalf("requests = %d, want 3 (at 0s, 4s, 8s)", tr.Attempts())
	}
}

// A call made for another (a token mint for a call with little time left) runs under the
// caller's deadline: when that is the shorter one, the reason names it, not --max-time.
func TestMaxTimeReasonNamesTheShorterDeadline(t *testing.T) {
	for _, c := range []struct {
		outer time.Duration
		want  string
	}{
		{time.Hour, "--max-time 10s reached"},
		{5 * time.Second, "left to the call it was made for ran out"},
	} {
		clock := rt.NewFakeClock()
		slow := rt.Func(func(context.Context, *Outgoing) (*Response, bool, error) {
			clock.Advance(4 * time.Second)
			return rt.FakeAnswer(500, `{"error":{"code":"INTERNAL"}}`), true, nil
		})
		e := &Engine{Sender: &rt.FakeSender{Steps: []rt.Step{slow}}, Clock: clock, Rand: func() float64 { return 0 }}
		p := DefaultPolicy()
		p.MaxTime, p.Retries = 10*time.Second, 10
		ctx, cancel := context.WithTimeout(context.Background(), c.outer)
		_, err := e.Do(ctx, rt.Spec(t, nil, "GET", "/v2/audits/a", "", false, ""), p)
		cancel()
		var ex *ExhaustedError
		if !errors.As(err, &ex) || !strings.Contains(ex.Reason, c.want) {
			t.Errorf("caller's deadline %v: err = %v, want %q", c.outer, err, c.want)
		}
	}
}
