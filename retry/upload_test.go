package retry_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rt "github.com/brellium/brellium/internal/retrytest"
	"github.com/brellium/brellium/request"
	. "github.com/brellium/brellium/retry"
)

// countingLimiter counts what the engine asks of the client budget.
type countingLimiter struct{ waits, observes, drains int }

func (l *countingLimiter) Wait(ctx context.Context) error { l.waits++; return ctx.Err() }
func (l *countingLimiter) Observe(int)                    { l.observes++ }
func (l *countingLimiter) Drain()                         { l.drains++ }

type countingAuth struct{ calls int }

func (a *countingAuth) Authorization(context.Context) (string, error) {
	a.calls++
	return "Bearer secret", nil
}
func (a *countingAuth) Renewable() bool             { return true }
func (a *countingAuth) Renew(context.Context) error { return nil }

type countingGate struct{ enters int }

func (g *countingGate) Enter(context.Context) (func(bool), error) {
	g.enters++
	return func(bool) {}, nil
}

func uploadSpec(t *testing.T, size int) *request.Spec {
	t.Helper()
	path := filepath.Join(t.TempDir(), "visit.pdf")
	if err := os.WriteFile(path, []byte(strings.Repeat("x", size)), 0o600); err != nil {
		t.Fatal(err)
	}
	file, err := request.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := request.NewUpload("https://uploads.example.com/u/doc_1?expires=1&sig=0123456789abcdef", file, nil)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// An upload goes to a storage host: it carries no Authorization, neither waits for nor informs
// the API's budget (a 429 there drains nothing), and does not pass the API's circuit breaker.
// It is repeated like any safe call.
func TestUploadsBypassTheAPIsCredentialsBudgetAndBreaker(t *testing.T) {
	lim, auth, gate := &countingLimiter{}, &countingAuth{}, &countingGate{}
	fs := &rt.FakeSender{Steps: []rt.Step{rt.Answer(429, "slow down", "Retry-After", "1", "RateLimit-Remaining", "0"),
		rt.Dropped(), rt.Answer(503, ""), rt.Answer(408, ""), rt.Answer(200, "")}}
	e := &Engine{Sender: fs, Clock: rt.NewFakeClock(), Rand: rt.FixedRand, Limiter: lim, Auth: auth, Gate: gate}
	res, err := e.Do(context.Background(), uploadSpec(t, 10), DefaultPolicy())
	if err != nil || res.Attempts != 5 {
		t.Fatalf("err %v, result %+v: want done after 5 attempts", err, res)
	}
	if lim.waits+lim.observes+lim.drains != 0 || auth.calls != 0 || gate.enters != 0 {
		t.Errorf("limiter %+v, auth %d, gate %d: an upload touches none", lim, auth.calls, gate.enters)
	}
	for i, o := range fs.Sent {
		if o.Header.Get("Authorization") != "" || o.Header.Get("Accept") != "" || o.Header.Get("Content-Type") != "application/pdf" || !o.Free {
			t.Errorf("attempt %d: header %v free %v", i+1, o.Header, o.Free)
		}
	}
}

// A 403 or 401 from the upload host is its refusal of the URL, not a Brellium block or a token
// problem: exit 3, not repeated, and the way to a new URL is said.
func TestUploadRefusalIsAnAPIErrorThatSaysHowToGetANewURL(t *testing.T) {
	for _, status := range []int{403, 401} {
		fs := &rt.FakeSender{Steps: []rt.Step{rt.Answer(status, "<Error><Code>AccessDenied</Code></Error>", "Content-Type", "application/xml")}}
		e := &Engine{Sender: fs, Clock: rt.NewFakeClock(), Rand: rt.FixedRand, Auth: &countingAuth{}}
		res, err := e.Do(context.Background(), uploadSpec(t, 1), DefaultPolicy())
		var api *APIError
		if !errors.As(err, &api) || res.Attempts != 1 || !strings.Contains(err.Error(), "repeating POST /v2/documents with the same external_id") {
			t.Errorf("%d: %v after %d attempts", status, err, res.Attempts)
		}
	}
	// The same bare 403 from the API is a block.
	fs := &rt.FakeSender{Steps: []rt.Step{rt.Answer(403, "Forbidden")}}
	e := &Engine{Sender: fs, Clock: rt.NewFakeClock(), Rand: rt.FixedRand}
	if _, err := e.Do(context.Background(), rt.Spec(t, nil, "GET", "/v2/audits/a", "", false, ""), DefaultPolicy()); OutcomeOf(err) != Blocked {
		t.Errorf("a bare 403 from the API: %v, want blocked", err)
	}
}

// A body that cannot be read as it was ends the call with the reader's error at once: no attempt
// sends other bytes, and nothing is repeated.
func TestBodySourceErrorEndsTheCall(t *testing.T) {
	bad := request.Usagef("visit.pdf changed while it was being uploaded")
	fs := &rt.FakeSender{Steps: []rt.Step{rt.Answer(503, ""), rt.Func(func(context.Context, *Outgoing) (*Response, bool, error) {
		return nil, false, &BodySourceError{Err: bad}
	}), rt.Answer(200, "")}}
	var events []Event
	e := &Engine{Sender: fs, Clock: rt.NewFakeClock(), Rand: rt.FixedRand, Sink: SinkFunc(func(ev Event) { events = append(events, ev) })}
	res, err := e.Do(context.Background(), uploadSpec(t, 1), DefaultPolicy())
	var usage *request.UsageError
	if !errors.As(err, &usage) || res.Attempts != 2 || fs.Attempts() != 2 {
		t.Fatalf("err %v, %d attempts: want the usage error after 2", err, fs.Attempts())
	}
	if last := events[len(events)-1]; last.Decision != "stop" || !strings.Contains(last.Why, "changed") {
		t.Errorf("last event %+v", last)
	}
}

// Polls of one command share one --max-time: with Since, the cap counts from it.
func TestSinceMakesMaxTimeCountFromTheCommandsStart(t *testing.T) {
	clock := rt.NewFakeClock()
	start := clock.Now()
	clock.Advance(50 * time.Second)
	fs := &rt.FakeSender{Steps: []rt.Step{rt.Answer(503, "", "Retry-After", "12"), rt.Answer(200, "")}}
	e := &Engine{Sender: fs, Clock: clock, Rand: rt.FixedRand}
	p := DefaultPolicy()
	p.Since = start
	_, err := e.Do(context.Background(), rt.Spec(t, nil, "GET", "/v2/audits/a", "", false, ""), p)
	if OutcomeOf(err) != Exhausted || !strings.Contains(err.Error(), "exceeds the 10s left of --max-time") {
		t.Errorf("err %v: 50 s of 60 gone, a wait of 12 s does not fit", err)
	}
	clock.Advance(20 * time.Second)
	fs = &rt.FakeSender{Steps: []rt.Step{rt.Answer(200, "")}}
	e.Sender = fs
	if _, err := e.Do(context.Background(), rt.Spec(t, nil, "GET", "/v2/audits/a", "", false, ""), p); OutcomeOf(err) != Exhausted || fs.Attempts() != 0 ||
		!strings.Contains(err.Error(), "--max-time 1m0s reached") {
		t.Errorf("past the cap: %v after %d attempts, want exhausted before sending", err, fs.Attempts())
	}
}
