// Package retry decides when to send again: outcome classification, backoff, Retry-After
// parsing, the engine loop and its attempt events, the typed errors, and the interfaces of what
// the engine needs (Sender, Limiter, Gate, Authorizer, Budget). It imports the standard library
// and request only. It never prints, reads flags or environment variables, or exits.
package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/brellium/brellium/request"
)

// Policy caps one call. The zero value sends one attempt with no time limit and no backoff;
// DefaultPolicy is the contract's defaults.
type Policy struct {
	// Retries is how many repeats may follow the first attempt.
	Retries int
	// MaxTime caps the whole call, waits included; 0 is no cap.
	MaxTime time.Duration
	// Since, when set, is when the command that makes this call began: MaxTime counts from it,
	// so that the polls or pages of one command share one --max-time.
	Since time.Time
	// Timeout caps each attempt; 0 is no cap. It is clipped to what is left of MaxTime.
	Timeout time.Duration
	// BackoffBase and BackoffCap shape the full-jitter backoff.
	BackoffBase, BackoffCap time.Duration
	// FollowRedirects follows 3xx answers (-L); a redirect to another origin drops Authorization.
	FollowRedirects bool
	// Body says where the bodies of final answers go; nil is DefaultBody. The body of an answer
	// that is not final (one that will be repeated) is never spilled.
	Body BodyPolicy
}

// DefaultPolicy returns the contract's defaults: 4 retries, 60 s in all, 30 s an attempt,
// backoff from 500 ms up to 20 s.
func DefaultPolicy() Policy {
	return Policy{Retries: 4, MaxTime: 60 * time.Second, Timeout: 30 * time.Second,
		BackoffBase: 500 * time.Millisecond, BackoffCap: 20 * time.Second}
}

// Sender puts one attempt on the wire and reads its answer.
type Sender interface {
	// Send sends o. sent reports whether any of the request may have reached the server; it is
	// exact unless o.Free says that it cannot change the decision. err is the transport's error
	// when no whole answer came: a *TimeoutError when the attempt ran out of time, a
	// *StaleConnectionError for a reused connection the server had closed, a
	// *HeadersTooLargeError; or, with the answer, what o.Body's Spill failed with, and a
	// *StreamWriteError when a spilled body could not be written out. A body cut short after it
	// was spilled comes back as the answer's StreamErr.
	Send(ctx context.Context, o *Outgoing) (resp *Response, sent bool, err error)
}

// Outgoing is one attempt to send.
type Outgoing struct {
	Spec *request.Spec
	// Header is the attempt's whole header, Authorization included.
	Header http.Header
	// Timeout caps the attempt; 0 is no cap.
	Timeout time.Duration
	// Free says that the call is repeated whatever became of an attempt without an answer, so
	// whether any of it was sent cannot change the decision.
	Free            bool
	FollowRedirects bool
	// Body says where the body goes: the policy's, for final answers only.
	Body BodyPolicy
}

// Authorizer gives the Authorization header of each attempt and renews it after a 401.
type Authorizer interface {
	// Authorization returns the header value to send; "" sends none.
	Authorization(ctx context.Context) (string, error)
	// Renewable reports whether Renew can mint a new credential.
	Renewable() bool
	// Renew mints a new credential after a 401.
	Renew(ctx context.Context) error
}

// Budget caps repeats after failures across many calls: a batch's --retry-budget.
type Budget interface {
	// Sent counts one request sent.
	Sent()
	// AllowRetry takes one repeat from the budget, or reports that none is left.
	AllowRetry() bool
}

// Gate is entered before every attempt. Enter may wait; it returns a function to call with
// whether the attempt failed (a 5xx or no answer).
type Gate interface {
	Enter(ctx context.Context) (done func(failed bool), err error)
}

// Event is one attempt and the decision taken on it.
type Event struct {
	// Line is the batch line of the call, 0 for a single call; the engine leaves it to sinks.
	Line              int
	Method, Path, URL string
	// Attempt is 1 for the first request of the call.
	Attempt int
	// Retry is the number of the repeat that follows when Decision is "retry", of Retries.
	Retry, Retries int
	// Response is the answer, nil when there was none (then Err says why).
	Response *Response
	Err      error
	// Sent says that the request may have reached the server.
	Sent bool
	// Decision is "done", "retry", "renew" or "stop" (and "poll" for a poll of --until that
	// goes on).
	Decision string
	// Outcome is how the call ends, for "done" and "stop".
	Outcome Outcome
	// Wait is the time before the next attempt, and WaitSource what set it
	// ("Retry-After 1", "backoff").
	Wait       time.Duration
	WaitSource string
	// Why says what led to the decision.
	Why string
	// Elapsed is the time since the call started.
	Elapsed time.Duration
	// RequestHeader is what was sent, Authorization included: sinks must redact it.
	RequestHeader http.Header
}

// Sink receives every attempt event as soon as its decision is made.
type Sink interface{ Attempt(Event) }

// SinkFunc adapts a function to Sink.
type SinkFunc func(Event)

// Attempt calls f.
func (f SinkFunc) Attempt(e Event) { f(e) }

// Result is how a call ended: the final answer and what it took.
type Result struct {
	// Response is the last answer, nil when none came.
	Response *Response
	Attempts int
	Elapsed  time.Duration
	// MayHaveRun says that an attempt may have taken effect on the server, so an unsafe call
	// that ended without a final answer must not be sent again.
	MayHaveRun bool
	// Why says why the call ended as it did.
	Why string
}

// Engine sends calls and repeats them as the contract says. Sender must be set; the zero value
// of the rest uses no limiter, the system clock and no Authorization.
type Engine struct {
	Sender  Sender
	Limiter Limiter
	Clock   Clock
	// Rand returns a uniform number in [0, 1) for jitter.
	Rand      func() float64
	Sink      Sink
	Auth      Authorizer
	UserAgent string
	// Budget, when set, caps the repeats after failures (not 429s) across every call that
	// shares it.
	Budget Budget
	// Gate, when set, is entered before every attempt: a circuit breaker that holds attempts
	// while the API is failing.
	Gate Gate
}

// Do sends the call until it is done, fails for good, or its caps run out. It returns the
// result (nil only when no attempt was made) and one of the typed errors, or ctx's error when
// the call was interrupted.
func (e *Engine) Do(ctx context.Context, spec *request.Spec, p Policy) (*Result, error) {
	c := e.newCall(spec, p)
	if d, ok := ctx.Deadline(); ok {
		c.outer, c.outerLeft = d, time.Until(d)
	}
	if p.MaxTime > 0 {
		// The context's deadline is on the real clock, so that attempts and waits that do not
		// go through c.clock end too; the engine's own checks use c.clock.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, max(c.left(c.start), 0))
		defer cancel()
	}
	res, err := c.run(ctx)
	if err == nil && c.converged && c.class.Rule != nil && c.class.Rule.Fetch != nil {
		res, err = c.fetch(ctx, res)
	}
	return res, err
}

type call struct {
	e        *Engine
	spec     *request.Spec
	p        Policy
	class    request.Class
	clock    Clock
	limiter  Limiter
	rnd      func() float64
	start    time.Time
	deadline time.Time
	attempts int
	// resp and cause are the last attempt's answer and transport error.
	resp      *Response
	cause     error
	converged bool
	ran       bool
	renewed   bool
	// retries counts the repeats so far.
	retries int
	// outer is the deadline of the caller's context, when it has one, and outerLeft the time
	// it left at the start (both on the real clock, as context deadlines are).
	outer     time.Time
	outerLeft time.Duration
}

// canRenew says that the credential can be re-minted and has not been yet in this call.
func (c *call) canRenew() bool {
	return !c.renewed && !c.spec.Upload && c.e.Auth != nil && c.e.Auth.Renewable()
}

// renewsFor says whether a 401 in r may re-mint: only one from the call's own origin (not one
// that a followed redirect reached).
func (c *call) renewsFor(r *Response) bool {
	return c.canRenew() && (r == nil || r.URL == nil || request.SameOrigin(r.URL, c.spec.URL))
}

func (e *Engine) newCall(spec *request.Spec, p Policy) *call {
	c := &call{e: e, spec: spec, p: p, class: spec.Class(),
		clock: e.Clock, limiter: e.Limiter, rnd: e.Rand}
	if c.clock == nil {
		c.clock = SystemClock{}
	}
	if c.limiter == nil || spec.Upload {
		// An upload goes to a storage host: the API's budget neither pays for it nor hears of it.
		c.limiter = noLimit{}
	}
	if c.rnd == nil {
		c.rnd = rand.Float64
	}
	c.start = c.clock.Now()
	if p.MaxTime > 0 {
		from := c.start
		if !p.Since.IsZero() {
			from = p.Since
		}
		c.deadline = from.Add(p.MaxTime)
	}
	return c
}

// noLimit is the limiter of an engine without one.
type noLimit struct{}

func (noLimit) Wait(ctx context.Context) error { return ctx.Err() }
func (noLimit) Observe(int)                    {}
func (noLimit) Drain()                         {}

func (c *call) left(now time.Time) time.Duration { return c.deadline.Sub(now) }

func (c *call) emit(ev Event) {
	if c.e.Sink == nil {
		return
	}
	ev.Method, ev.Path, ev.URL = c.spec.Method, c.spec.Path(), c.spec.URL.String()
	ev.Attempt, ev.Retries = c.attempts, c.maxRetries()
	ev.Elapsed = c.clock.Now().Sub(c.start)
	c.e.Sink.Attempt(ev)
}

func (c *call) maxRetries() int {
	n := max(c.p.Retries, 0)
	if r := c.class.Rule; r != nil && r.MaxAttempts > 0 {
		n = min(n, r.MaxAttempts-1)
	}
	return n
}

func (c *call) result(why string) *Result {
	return &Result{Response: c.resp, Attempts: c.attempts, Elapsed: c.clock.Now().Sub(c.start), MayHaveRun: c.ran, Why: why}
}

// end is every way a call ends but an interruption. ev, when set, is the event of the attempt
// that decided it: it is emitted with the decision ("done" for OK, else "stop") and, unless it
// has a reason of its own, why; so no stop goes unlogged. The error is the typed error of
// outcome o, nil for OK.
func (c *call) end(ev *Event, o Outcome, why string) (*Result, error) {
	if ev != nil {
		ev.Decision, ev.Outcome = "stop", o
		if ev.Why == "" {
			ev.Why = why
		}
		if o == OK {
			ev.Decision = "done"
		}
		c.emit(*ev)
	}
	if o == OK {
		return c.result(why), nil
	}
	f := Failure{Method: c.spec.Method, Path: c.spec.Path(), Reason: why, Attempts: c.attempts, Cause: c.cause}
	if r := c.resp; r != nil {
		f.Status, f.Code, f.Message, f.RequestID = r.Status, r.Code(), r.Message(), r.RequestID
	}
	return c.result(why), newCallError(o, f)
}

// interrupted ends a call stopped by its context: err is the context's error.
func (c *call) interrupted(err error) (*Result, error) { return c.result("interrupted"), err }

// maxTimeReached is the reason of a call stopped by --max-time, or by the time of the call it
// was made for (a mint for a call with less time left).
func (c *call) maxTimeReached() string {
	if !c.outer.IsZero() && (c.p.MaxTime <= 0 || c.outerLeft < c.p.MaxTime) {
		return fmt.Sprintf("the %s left to the call it was made for ran out", FormatDuration(c.outerLeft))
	}
	return fmt.Sprintf("--max-time %s reached", FormatDuration(c.p.MaxTime))
}

// MaxServerWait caps a wait that the server asks for when the call has no --max-time: a longer
// one ends the call.
const MaxServerWait = time.Hour

// maxStaleResends caps the attempts of one call sent again at once after a stale connection.
const maxStaleResends = 2

func (c *call) run(ctx context.Context) (*Result, error) {
	stale := 0
	resend := false // the last attempt met a stale connection: send again at once
	for {
		if !c.deadline.IsZero() && !c.clock.Now().Before(c.deadline) {
			return c.end(nil, Exhausted, c.maxTimeReached())
		}
		leave := func(bool) {}
		settle := func() {}
		if !resend {
			// A resend after a stale connection takes no token and passes no gate: the server
			// never acted on the request.
			if err := c.limiter.Wait(ctx); err != nil {
				var bw *BudgetWaitError
				switch {
				case errors.As(err, &bw):
					return c.end(nil, Exhausted, bw.Error())
				case errors.Is(err, context.DeadlineExceeded) && !c.deadline.IsZero():
					return c.end(nil, Exhausted, c.maxTimeReached()+" waiting for the client budget")
				case ctx.Err() != nil:
					return c.interrupted(ctx.Err())
				}
				return c.result(err.Error()), err
			}
			if s, ok := c.limiter.(Settler); ok {
				settle = sync.OnceFunc(s.Settled)
			}
			if c.e.Gate != nil && !c.spec.Upload {
				var err error
				if leave, err = c.e.Gate.Enter(ctx); err != nil {
					settle()
					if errors.Is(ctx.Err(), context.Canceled) {
						return c.interrupted(ctx.Err())
					}
					return c.end(nil, Exhausted, "circuit breaker: "+err.Error())
				}
			}
		}
		resend = false
		auth := ""
		if c.e.Auth != nil && !c.spec.Upload {
			var err error
			if auth, err = c.e.Auth.Authorization(ctx); err != nil {
				leave(false)
				settle()
				if errors.Is(ctx.Err(), context.Canceled) {
					return c.interrupted(ctx.Err())
				}
				// Whatever kept the credential from coming (the token endpoint failing or out
				// of time, the cache), the call ends as an auth error.
				var ae *AuthError
				if errors.As(err, &ae) {
					return c.result(err.Error()), err
				}
				c.cause = err
				return c.end(nil, AuthFailure, "no credential: "+err.Error())
			}
		}
		c.attempts++
		resp, sent, header, cause := c.send(ctx, auth)
		settle()
		c.resp, c.cause = resp, cause
		ev := &Event{Response: resp, Err: cause, Sent: sent, RequestHeader: header}
		var staleErr *StaleConnectionError
		if errors.As(cause, &staleErr) && stale < maxStaleResends && ctx.Err() == nil {
			stale++
			leave(false)
			ev.Decision, ev.Retry, ev.WaitSource = "retry", c.retries, "reused connection"
			ev.Why = staleErr.Error() + ": sent again at once on a new connection (not counted as a retry)"
			c.emit(*ev)
			resend = true
			continue
		}
		leave(resp == nil || resp.Status >= 500)
		var (
			swe *StreamWriteError
			btl *BodyTooLargeError
			bse *BodySourceError
		)
		if errors.As(cause, &bse) {
			// The body to send cannot be read as it was (a file changed or gone): no attempt
			// may send other bytes, so the call ends with the source's error.
			ev.Decision, ev.Why = "stop", bse.Error()
			c.emit(*ev)
			return c.result(bse.Error()), bse.Err
		}
		if errors.As(cause, &swe) || errors.As(cause, &btl) {
			// The answer came: the call ran, and its body could not be delivered.
			c.ran = true
			ev.Decision, ev.Why = "stop", cause.Error()
			c.emit(*ev)
			return c.result(cause.Error()), cause
		}
		if c.e.Budget != nil && (sent || resp != nil) {
			c.e.Budget.Sent()
		}
		if errors.Is(ctx.Err(), context.Canceled) {
			c.ran = c.ran || sent
			if sent {
				ev.Decision, ev.Why = "stop", "interrupted after it was sent"
				c.emit(*ev)
			}
			return c.interrupted(ctx.Err())
		}
		if resp != nil {
			if resp.RateLimit.HasRemaining {
				c.limiter.Observe(resp.RateLimit.Remaining)
			}
			if resp.Status == http.StatusTooManyRequests {
				c.limiter.Drain()
			}
		}
		if resp != nil && resp.StreamErr != nil {
			cut := Decide(Attempt{Err: resp.StreamErr, Sent: true, Class: c.class, Ran: c.ran})
			if !c.p.bodyPolicy().Restarts() || cut.Verdict != Again {
				c.ran = true
				c.cause = resp.StreamErr
				ev.Sent = true
				return c.end(ev, Exhausted, fmt.Sprintf("the %d body was cut short after %d bytes had been written out (%v): not repeated", resp.Status, resp.Streamed, resp.StreamErr))
			}
			// The spilled part is dropped and fetched again: a failed attempt like any other.
			resp, cause = nil, fmt.Errorf("%d answer cut short: %w", resp.Status, resp.StreamErr)
			c.resp, c.cause = nil, cause
			ev.Response, ev.Err, ev.Sent = nil, cause, true
		}
		canRenew := c.renewsFor(resp)
		d := Decide(Attempt{Response: resp, Err: cause, Sent: sent || ev.Sent, Class: c.class, Ran: c.ran, CanRenew: canRenew})
		c.ran = c.ran || d.Ran || (d.Verdict == Stop && d.Outcome == OK)

		switch d.Verdict {
		case Stop:
			c.converged = d.Outcome == OK && d.Converged
			return c.end(ev, d.Outcome, d.Why)
		case Renew:
			c.renewed = true
			if err := c.e.Auth.Renew(ctx); err != nil {
				if ctx.Err() != nil {
					return c.interrupted(ctx.Err())
				}
				c.cause = err
				return c.end(ev, AuthFailure, "401, and re-minting the token failed: "+err.Error())
			}
			ev.Decision, ev.Why = "renew", d.Why
			c.emit(*ev)
			continue
		}

		if c.retries >= c.maxRetries() {
			why := fmt.Sprintf("%s; gave up after %d attempts", d.Why, c.attempts)
			if c.maxRetries() == 0 {
				why = d.Why + "; retries are off (--retry 0)"
			}
			return c.end(ev, Exhausted, why)
		}
		if c.e.Budget != nil && (resp == nil || resp.Status != http.StatusTooManyRequests) && !c.e.Budget.AllowRetry() {
			return c.end(ev, Exhausted, d.Why+"; the retry budget of the batch is spent (--retry-budget)")
		}
		c.retries++
		w := c.wait(c.retries, resp, d.ServerWait)
		if c.deadline.IsZero() && w.base > MaxServerWait {
			why := fmt.Sprintf("%s %s exceeds the %s brellium waits without --max-time", w.name, FormatDuration(w.base), FormatDuration(MaxServerWait))
			ev.Why = d.Why + "; " + why
			return c.end(ev, Exhausted, why)
		}
		if now := c.clock.Now(); !c.deadline.IsZero() && now.Add(w.total).After(c.deadline) {
			why := fmt.Sprintf("%s %s exceeds the %s left of --max-time", w.name, FormatDuration(w.base), FormatDuration(c.left(now)))
			if c.left(now) <= 0 {
				why = c.maxTimeReached()
			}
			ev.Why = d.Why + "; " + why
			return c.end(ev, Exhausted, why)
		}
		ev.Decision, ev.Retry, ev.Wait, ev.WaitSource, ev.Why = "retry", c.retries, w.total, w.source, d.Why
		c.emit(*ev)
		if err := c.clock.Sleep(ctx, w.total); err != nil {
			if errors.Is(err, context.DeadlineExceeded) && !c.deadline.IsZero() {
				return c.end(nil, Exhausted, c.maxTimeReached())
			}
			return c.interrupted(err)
		}
	}
}

// waitChoice is the time before a retry: total is base plus jitter; name is the header that set
// base ("Retry-After") or "backoff"; source is what the attempt line shows ("Retry-After 1").
type waitChoice struct {
	total, base  time.Duration
	name, source string
}

// wait chooses the time before retry n: the server's wait plus jitter when it sent one and the
// answer allows it, else full-jitter backoff.
func (c *call) wait(n int, resp *Response, server bool) waitChoice {
	if server && resp != nil {
		if d, source, ok := ServerWait(resp.Header, c.clock.Now()); ok {
			name, _, _ := strings.Cut(source, " ")
			return waitChoice{total: d + time.Duration(c.rnd()*float64(Jitter)), base: d, name: name, source: source}
		}
	}
	d := Backoff(n, c.p.BackoffBase, c.p.BackoffCap, c.rnd())
	return waitChoice{total: d, base: d, name: "backoff", source: "backoff"}
}

// StreamWriteError is a failure to write a streamed body out (a closed pipe, a full disk).
type StreamWriteError struct{ Err error }

func (e *StreamWriteError) Error() string { return "writing the response body: " + e.Err.Error() }

// Unwrap returns the write error.
func (e *StreamWriteError) Unwrap() error { return e.Err }

// BodySourceError is a request body that could not be read for an attempt: a file gone or
// changed since the call started. Err is the reader's error (a *request.UsageError for a File).
type BodySourceError struct{ Err error }

func (e *BodySourceError) Error() string { return e.Err.Error() }

// Unwrap returns the reader's error.
func (e *BodySourceError) Unwrap() error { return e.Err }

// TimeoutError is an attempt that ran out of time.
type TimeoutError struct {
	After time.Duration
	Err   error
}

func (e *TimeoutError) Error() string { return "timeout after " + FormatDuration(e.After) }

// Unwrap returns the transport's own error.
func (e *TimeoutError) Unwrap() error { return e.Err }

// send makes one attempt through the engine's Sender, with the attempt's timeout clipped to
// what is left of --max-time.
func (c *call) send(ctx context.Context, auth string) (resp *Response, sent bool, header http.Header, err error) {
	timeout := c.p.Timeout
	if !c.deadline.IsZero() {
		if left := c.left(c.clock.Now()); timeout <= 0 || left < timeout {
			timeout = left
		}
	}
	// A call made for another (a mint for a call with less time left) has that one's cap too.
	if !c.outer.IsZero() {
		if left := time.Until(c.outer); timeout <= 0 || left < timeout {
			timeout = max(left, 0)
		}
	}
	header = c.requestHeader(auth)
	resp, sent, err = c.e.Sender.Send(ctx, &Outgoing{Spec: c.spec, Header: header, Timeout: timeout,
		Free: c.free(), FollowRedirects: c.p.FollowRedirects, Body: finalBody{c}})
	return resp, sent, header, err
}

func (p Policy) bodyPolicy() BodyPolicy {
	if p.Body == nil {
		return DefaultBody{}
	}
	return p.Body
}

// finalBody is the body policy that a call gives its sender: the policy's, but the body of an
// answer that will be repeated (the policy says so, and a retry is left) is never spilled.
type finalBody struct{ c *call }

func (b finalBody) Keep(status int) int64 { return b.c.p.bodyPolicy().Keep(status) }
func (b finalBody) Restarts() bool        { return b.c.p.bodyPolicy().Restarts() }

func (b finalBody) Spill(r *Response) (io.Writer, error) {
	c := b.c
	d := Decide(Attempt{Response: r, Sent: true, Class: c.class, Ran: c.ran, CanRenew: c.renewsFor(r)})
	if d.Verdict == Renew || (d.Verdict == Again && c.retries < c.maxRetries()) {
		return nil, nil
	}
	return c.p.bodyPolicy().Spill(r)
}

// free reports that the call is repeated whatever became of an attempt without an answer: it is
// safe, and no endpoint rule reads "it may have run" from it.
func (c *call) free() bool {
	if !c.class.Safe {
		return false
	}
	r := c.class.Rule
	return r == nil || len(r.DoneAfterRun) == 0
}

// requestHeader is the header of every attempt.
func (c *call) requestHeader(auth string) http.Header { return c.e.Header(c.spec, auth) }

// Header is the header an attempt of spec carries with the Authorization value auth: the call's
// own headers, then the defaults it lacks (Content-Type application/json for a body, Accept
// application/json, the engine's User-Agent, Authorization).
func (e *Engine) Header(spec *request.Spec, auth string) http.Header {
	h := spec.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	switch {
	case h.Get("Content-Type") != "":
	case spec.File != nil:
		h.Set("Content-Type", "application/octet-stream")
	case spec.Body != nil:
		h.Set("Content-Type", "application/json")
	}
	if h.Get("Accept") == "" && !spec.Upload {
		h.Set("Accept", "application/json")
	}
	if e.UserAgent != "" && h.Get("User-Agent") == "" {
		h.Set("User-Agent", e.UserAgent)
	}
	if auth != "" && h.Get("Authorization") == "" && !spec.Upload {
		h.Set("Authorization", auth)
	}
	return h
}

// fetch shows the resource that an "already done" answer refers to, polling the endpoint's
// list for a while because lists lag.
func (c *call) fetch(ctx context.Context, done *Result) (*Result, error) {
	f := c.class.Rule.Fetch
	q, ok := f.Query(c.spec.Body)
	if !ok {
		return done, nil
	}
	u, err := c.spec.URL.Parse(q)
	if err != nil {
		return done, nil
	}
	h := c.spec.Header.Clone()
	h.Del("Idempotency-Key")
	get := &request.Spec{Method: http.MethodGet, URL: u, Header: h}
	until := c.clock.Now().Add(f.Within)
	if !c.deadline.IsZero() && c.deadline.Before(until) {
		until = c.deadline
	}
	finish := func(r *Response, why string) *Result {
		res := c.result(why)
		res.Response = r
		return res
	}
	for n := 1; ; n++ {
		p := c.p
		p.MaxTime = max(until.Sub(c.clock.Now()), time.Millisecond)
		res, err := c.e.Do(ctx, get, p)
		if res != nil {
			c.attempts += res.Attempts
		}
		if err != nil {
			return finish(done.Response, done.Why), err
		}
		if item, ok := f.Pick(res.Response.Body, c.spec.Body); ok {
			r := *res.Response
			r.Body = item
			return finish(&r, done.Why+"; fetched with GET "+get.Path()), nil
		}
		wait := Backoff(n, c.p.BackoffBase, c.p.BackoffCap, c.rnd())
		if c.clock.Now().Add(wait).After(until) {
			return finish(done.Response, done.Why+"; GET "+get.Path()+" did not list it yet"), nil
		}
		if err := c.clock.Sleep(ctx, wait); err != nil {
			return finish(done.Response, done.Why), err
		}
	}
}
