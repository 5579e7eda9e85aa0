// Package retry decides when to send again: outcome classification, backoff, Retry-After
// parsing, the limiters, the engine loop and its attempt events. It never prints, reads flags or
// environment variables, or exits.
package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
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
	// Timeout caps each attempt; 0 is no cap. It is clipped to what is left of MaxTime.
	Timeout time.Duration
	// BackoffBase and BackoffCap shape the full-jitter backoff.
	BackoffBase, BackoffCap time.Duration
	// FollowRedirects follows 3xx answers (-L); a redirect to another origin drops Authorization.
	FollowRedirects bool
	// Stream, when set, takes a 2xx body larger than StreamAfter as it arrives: it is called with
	// the answer (status and headers) and returns where the body goes. Such a body is not kept,
	// and when it is cut short the call is not repeated (the output already holds part of it).
	Stream func(r *Response) (io.Writer, error)
}

// DefaultPolicy returns the contract's defaults: 4 retries, 60 s in all, 30 s an attempt,
// backoff from 500 ms up to 20 s.
func DefaultPolicy() Policy {
	return Policy{Retries: 4, MaxTime: 60 * time.Second, Timeout: 30 * time.Second,
		BackoffBase: 500 * time.Millisecond, BackoffCap: 20 * time.Second}
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

// StaticToken is a bearer token used as is; it cannot be renewed.
type StaticToken string

// Authorization returns "Bearer TOKEN", or "" for an empty token.
func (t StaticToken) Authorization(context.Context) (string, error) {
	if t == "" {
		return "", nil
	}
	return "Bearer " + string(t), nil
}

// Renewable is false: a static token cannot be re-minted.
func (StaticToken) Renewable() bool { return false }

// Renew fails: a static token cannot be re-minted.
func (StaticToken) Renew(context.Context) error {
	return errors.New("a static access token cannot be renewed")
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
	// Decision is "done", "retry", "renew" or "stop".
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

// Engine sends calls and repeats them as the contract says. Its zero value uses
// http.DefaultTransport, no limiter, the system clock and no Authorization.
type Engine struct {
	Transport http.RoundTripper
	Limiter   Limiter
	Clock     Clock
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
	// Fast, when set, carries the attempts that it can: calls to its origin that are repeated
	// whatever became of an attempt without an answer, sent without -L.
	Fast *FastClient
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

// Do sends the call until it is done, fails for good, or its caps run out. It returns the
// result (nil only when no attempt was made) and one of the typed errors, or ctx's error when
// the call was interrupted.
func (e *Engine) Do(ctx context.Context, spec *request.Spec, p Policy) (*Result, error) {
	c := e.newCall(spec, p)
	if p.MaxTime > 0 {
		// The context's deadline is on the real clock, so that attempts and waits that do not
		// go through c.clock end too; the engine's own checks use c.clock.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.MaxTime)
		defer cancel()
	}
	res, err := c.run(ctx)
	if err == nil && c.converged && c.class.Rule != nil && c.class.Rule.Fetch != nil {
		res, err = c.fetch(ctx, res)
	}
	return res, err
}

type call struct {
	e         *Engine
	spec      *request.Spec
	p         Policy
	class     request.Class
	clock     Clock
	limiter   Limiter
	rnd       func() float64
	start     time.Time
	deadline  time.Time
	attempts  int
	converged bool
	ran       bool
}

func (e *Engine) newCall(spec *request.Spec, p Policy) *call {
	c := &call{e: e, spec: spec, p: p, class: request.Classify(spec),
		clock: e.Clock, limiter: e.Limiter, rnd: e.Rand}
	if c.clock == nil {
		c.clock = SystemClock{}
	}
	if c.limiter == nil {
		c.limiter = Off{}
	}
	if c.rnd == nil {
		c.rnd = rand.Float64
	}
	c.start = c.clock.Now()
	if p.MaxTime > 0 {
		c.deadline = c.start.Add(p.MaxTime)
	}
	return c
}

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

func (c *call) result(resp *Response, why string) *Result {
	return &Result{Response: resp, Attempts: c.attempts, Elapsed: c.clock.Now().Sub(c.start), MayHaveRun: c.ran, Why: why}
}

// fail builds the typed error for outcome o from the last attempt.
func (c *call) fail(o Outcome, resp *Response, cause error, why string) error {
	f := Failure{Method: c.spec.Method, Path: c.spec.Path(), Reason: why, Attempts: c.attempts, Cause: cause}
	if resp != nil {
		f.Status, f.Code, f.Message, f.RequestID = resp.Status, resp.Code(), resp.Message(), resp.RequestID
	}
	return newCallError(o, f)
}

func (c *call) run(ctx context.Context) (*Result, error) {
	var (
		resp    *Response
		cause   error
		retries int
		renewed bool
	)
	for {
		if !c.deadline.IsZero() && !c.clock.Now().Before(c.deadline) {
			why := fmt.Sprintf("--max-time %s reached", FormatDuration(c.p.MaxTime))
			return c.result(resp, why), c.fail(Exhausted, resp, cause, why)
		}
		if err := c.limiter.Wait(ctx); err != nil {
			var bw *BudgetWaitError
			switch {
			case errors.As(err, &bw):
				return c.result(resp, bw.Error()), c.fail(Exhausted, resp, cause, bw.Error())
			case errors.Is(err, context.DeadlineExceeded) && !c.deadline.IsZero():
				why := fmt.Sprintf("--max-time %s reached waiting for the client budget", FormatDuration(c.p.MaxTime))
				return c.result(resp, why), c.fail(Exhausted, resp, cause, why)
			case ctx.Err() != nil:
				return c.result(resp, "interrupted"), ctx.Err()
			}
			return c.result(resp, err.Error()), err
		}
		leave := func(bool) {}
		if c.e.Gate != nil {
			var err error
			if leave, err = c.e.Gate.Enter(ctx); err != nil {
				if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
					return c.result(resp, "interrupted"), ctx.Err()
				}
				why := "circuit breaker: " + err.Error()
				return c.result(resp, why), c.fail(Exhausted, resp, cause, why)
			}
		}
		auth := ""
		if c.e.Auth != nil {
			var err error
			if auth, err = c.e.Auth.Authorization(ctx); err != nil {
				leave(false)
				if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
					return c.result(resp, "interrupted"), ctx.Err()
				}
				return c.result(resp, "no credential: "+err.Error()), err
			}
		}
		c.attempts++
		var sent bool
		var reqHeader http.Header
		resp, sent, reqHeader, cause = c.send(ctx, auth)
		leave(resp == nil || resp.Status >= 500)
		var swe *StreamWriteError
		if errors.As(cause, &swe) {
			c.ran = true
			return c.result(resp, swe.Error()), swe
		}
		if c.e.Budget != nil && (sent || resp != nil) {
			c.e.Budget.Sent()
		}
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
			c.ran = c.ran || sent
			return c.result(resp, "interrupted"), ctx.Err()
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
			c.ran = true
			why := fmt.Sprintf("the %d body was cut short after %d bytes had been written out (%v): not repeated", resp.Status, resp.Streamed, resp.StreamErr)
			c.emit(Event{Response: resp, Sent: true, Decision: "stop", Outcome: Exhausted, Why: why, RequestHeader: reqHeader})
			return c.result(resp, why), c.fail(Exhausted, resp, resp.StreamErr, why)
		}
		canRenew := !renewed && c.e.Auth != nil && c.e.Auth.Renewable()
		d := Decide(Attempt{Response: resp, Err: cause, Sent: sent, Class: c.class, Ran: c.ran, CanRenew: canRenew})
		c.ran = c.ran || d.Ran || (d.Verdict == Stop && d.Outcome == OK)
		ev := Event{Response: resp, Err: cause, Sent: sent, Why: d.Why, RequestHeader: reqHeader}

		switch d.Verdict {
		case Stop:
			ev.Outcome = d.Outcome
			if d.Outcome == OK {
				ev.Decision = "done"
				c.emit(ev)
				c.converged = d.Converged
				return c.result(resp, d.Why), nil
			}
			ev.Decision = "stop"
			c.emit(ev)
			return c.result(resp, d.Why), c.fail(d.Outcome, resp, cause, d.Why)

		case Renew:
			renewed = true
			if err := c.e.Auth.Renew(ctx); err != nil {
				if ctx.Err() != nil {
					return c.result(resp, "interrupted"), ctx.Err()
				}
				why := "401, and re-minting the token failed: " + err.Error()
				ev.Decision, ev.Outcome, ev.Why = "stop", AuthFailure, why
				c.emit(ev)
				return c.result(resp, why), c.fail(AuthFailure, resp, err, why)
			}
			ev.Decision = "renew"
			c.emit(ev)
			continue
		}

		if retries >= c.maxRetries() {
			why := fmt.Sprintf("%s; gave up after %d attempts", d.Why, c.attempts)
			if c.maxRetries() == 0 {
				why = d.Why + "; retries are off (--retry 0)"
			}
			ev.Decision, ev.Outcome, ev.Why = "stop", Exhausted, why
			c.emit(ev)
			return c.result(resp, why), c.fail(Exhausted, resp, cause, why)
		}
		if c.e.Budget != nil && (resp == nil || resp.Status != http.StatusTooManyRequests) && !c.e.Budget.AllowRetry() {
			why := d.Why + "; the retry budget of the batch is spent (--retry-budget)"
			ev.Decision, ev.Outcome, ev.Why = "stop", Exhausted, why
			c.emit(ev)
			return c.result(resp, why), c.fail(Exhausted, resp, cause, why)
		}
		retries++
		w := c.wait(retries, resp, d.ServerWait)
		if now := c.clock.Now(); !c.deadline.IsZero() && now.Add(w.total).After(c.deadline) {
			why := fmt.Sprintf("%s %s exceeds the %s left of --max-time", w.name, FormatDuration(w.base), FormatDuration(c.left(now)))
			if c.left(now) <= 0 {
				why = fmt.Sprintf("--max-time %s reached", FormatDuration(c.p.MaxTime))
			}
			ev.Decision, ev.Outcome, ev.Why = "stop", Exhausted, d.Why+"; "+why
			c.emit(ev)
			return c.result(resp, why), c.fail(Exhausted, resp, cause, why)
		}
		wait := w.total
		ev.Decision, ev.Retry, ev.Wait, ev.WaitSource = "retry", retries, wait, w.source
		c.emit(ev)
		if err := c.clock.Sleep(ctx, wait); err != nil {
			if errors.Is(err, context.DeadlineExceeded) && !c.deadline.IsZero() {
				why := fmt.Sprintf("--max-time %s reached", FormatDuration(c.p.MaxTime))
				return c.result(resp, why), c.fail(Exhausted, resp, cause, why)
			}
			return c.result(resp, "interrupted"), err
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

// maxDrain bounds how much of an unread body is read so the connection can be reused.
const maxDrain = 64 << 10

// Body limits: an error body is kept up to MaxErrorBody bytes; a 2xx body is kept in memory up
// to StreamAfter bytes and, when the policy has a Stream, streamed past that.
const (
	MaxErrorBody = 4 << 20
	StreamAfter  = 8 << 20
)

// StreamWriteError is a failure to write a streamed body out (a closed pipe, a full disk).
type StreamWriteError struct{ Err error }

func (e *StreamWriteError) Error() string { return "writing the response body: " + e.Err.Error() }

// Unwrap returns the write error.
func (e *StreamWriteError) Unwrap() error { return e.Err }

// send makes one attempt. sent reports whether any of the request may have reached the server:
// with a transport from NewTransport, whether any byte of it was written to the connection.
func (c *call) send(ctx context.Context, auth string) (resp *Response, sent bool, header http.Header, err error) {
	timeout := c.p.Timeout
	if !c.deadline.IsZero() {
		if left := c.left(c.clock.Now()); timeout <= 0 || left < timeout {
			timeout = left
		}
	}
	header = c.requestHeader(auth)
	if c.fast(header) {
		resp, sent, err = c.sendFast(ctx, c.e.Fast, header, timeout)
		return resp, sent, header, err
	}
	actx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var w written
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(actx, w.trace()), c.spec.Method, c.spec.URL.String(), c.spec.NewBody())
	if err != nil {
		return nil, false, nil, err
	}
	// Nothing writes to the request's headers after this, so events can share them.
	req.Header = header
	var hr *http.Response
	if c.p.FollowRedirects {
		hr, err = (&http.Client{Transport: c.e.Transport, CheckRedirect: c.checkRedirect}).Do(req)
	} else {
		// Without -L a 3xx is the answer: the transport alone does the round trip.
		hr, err = c.transport().RoundTrip(req)
	}
	if err != nil {
		return nil, w.sent(), header, describeTransportError(err, actx, timeout)
	}
	defer hr.Body.Close()
	a := reply{status: hr.StatusCode, statusText: hr.Status, proto: hr.Proto, header: hr.Header,
		contentLength: hr.ContentLength, body: hr.Body}
	resp, err = c.readReply(a, func(err error) error { return describeTransportError(err, actx, timeout) })
	return resp, true, header, err
}

// requestHeader is the header of every attempt: the call's own, then the defaults it lacks.
func (c *call) requestHeader(auth string) http.Header {
	h := c.spec.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if c.spec.Body != nil {
		h.Set("Content-Type", "application/json")
	}
	if h.Get("Accept") == "" {
		h.Set("Accept", "application/json")
	}
	if c.e.UserAgent != "" && h.Get("User-Agent") == "" {
		h.Set("User-Agent", c.e.UserAgent)
	}
	if auth != "" && h.Get("Authorization") == "" {
		h.Set("Authorization", auth)
	}
	return h
}

// fast reports whether the attempt goes through the engine's FastClient: a call to its origin
// that is repeated whatever became of an attempt without an answer (so "sent" cannot change the
// decision), without -L, and without a framing header of the user's (Host, Content-Length,
// Transfer-Encoding), which net/http ignores and fasthttp would obey.
func (c *call) fast(header http.Header) bool {
	f := c.e.Fast
	if f == nil || c.p.FollowRedirects || !c.class.Safe || !f.Serves(c.spec.URL) {
		return false
	}
	if r := c.class.Rule; r != nil && len(r.DoneAfterRun) > 0 {
		return false
	}
	for _, k := range [...]string{"Host", "Content-Length", "Transfer-Encoding"} {
		if _, set := header[k]; set {
			return false
		}
	}
	return true
}

// reply is a status line and headers, with the body still to read.
type reply struct {
	status            int
	statusText, proto string
	header            http.Header
	contentLength     int64 // -1 when unknown
	body              io.Reader
}

// readReply reads the body as the policy says: in full up to a limit, then streamed out or
// cut. describe turns a read error into what the engine reports.
func (c *call) readReply(a reply, describe func(error) error) (*Response, error) {
	if c.spec.Method == http.MethodHead {
		_, _ = io.CopyN(io.Discard, a.body, maxDrain)
		return NewResponse(a.status, a.statusText, a.proto, a.header, nil), nil
	}
	limit := int64(MaxErrorBody)
	if a.status >= 200 && a.status < 300 {
		limit = StreamAfter
	}
	body, err := readBody(a.body, a.contentLength, limit)
	if err != nil {
		return nil, fmt.Errorf("%d answer cut short: %w", a.status, describe(err))
	}
	if int64(len(body)) <= limit {
		return NewResponse(a.status, a.statusText, a.proto, a.header, body), nil
	}
	if limit == MaxErrorBody || c.p.Stream == nil {
		// Too large to keep: keep the first part, drop the rest.
		r := NewResponse(a.status, a.statusText, a.proto, a.header, body[:limit])
		r.Truncated = true
		_, _ = io.CopyN(io.Discard, a.body, maxDrain)
		return r, nil
	}
	// A large 2xx body: stream it out as it arrives.
	r := NewResponse(a.status, a.statusText, a.proto, a.header, nil)
	out, err := c.p.Stream(r)
	if err != nil {
		return r, &StreamWriteError{Err: err}
	}
	n, werr := out.Write(body)
	r.Streamed = int64(n)
	if werr != nil {
		return r, &StreamWriteError{Err: werr}
	}
	m, err := io.Copy(writerOnly{out, &werr}, a.body)
	r.Streamed += m
	switch {
	case werr != nil:
		return r, &StreamWriteError{Err: werr}
	case err != nil:
		r.StreamErr = describe(err)
	}
	return r, nil
}

// readBody reads up to limit+1 bytes of the body, in one allocation when the length is known.
func readBody(body io.Reader, length, limit int64) ([]byte, error) {
	if length > 0 && length <= limit {
		b := make([]byte, length)
		_, err := io.ReadFull(body, b)
		return b, err
	}
	return io.ReadAll(io.LimitReader(body, limit+1))
}

func (c *call) transport() http.RoundTripper {
	if c.e.Transport == nil {
		return http.DefaultTransport
	}
	return c.e.Transport
}

// writerOnly records the writer's own error, to tell it from the body's read error in io.Copy.
type writerOnly struct {
	w   io.Writer
	err *error
}

func (w writerOnly) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil {
		*w.err = err
	}
	return n, err
}

// written tracks whether an attempt put any byte of its request on the connection.
type written struct {
	headers atomic.Bool
	conn    atomic.Pointer[countingConn]
	start   atomic.Int64
}

func (w *written) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if cc := countingOf(info.Conn); cc != nil {
				w.start.Store(cc.BytesWritten())
				w.conn.Store(cc)
			}
		},
		WroteHeaders: func() { w.headers.Store(true) },
	}
}

// sent: with a counting connection, whether bytes were written since the attempt got it;
// otherwise, whether the transport reported writing the headers.
func (w *written) sent() bool {
	if cc := w.conn.Load(); cc != nil {
		return cc.BytesWritten() > w.start.Load()
	}
	return w.headers.Load()
}

func (c *call) checkRedirect(req *http.Request, via []*http.Request) error {
	if !c.p.FollowRedirects {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if !request.SameOrigin(req.URL, c.spec.URL) {
		req.Header.Del("Authorization")
		req.Header.Del("Cookie")
	}
	return nil
}

// TimeoutError is an attempt that ran out of time.
type TimeoutError struct {
	After time.Duration
	Err   error
}

func (e *TimeoutError) Error() string { return "timeout after " + FormatDuration(e.After) }

// Unwrap returns the transport's own error.
func (e *TimeoutError) Unwrap() error { return e.Err }

// describeTransportError keeps what a user needs of a transport error: a timeout says so, and
// the URL, already in every line, is dropped.
func describeTransportError(err error, actx context.Context, timeout time.Duration) error {
	if errors.Is(actx.Err(), context.DeadlineExceeded) {
		return &TimeoutError{After: timeout, Err: err}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
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
	for n := 1; ; n++ {
		p := c.p
		p.MaxTime = max(until.Sub(c.clock.Now()), time.Millisecond)
		res, err := c.e.Do(ctx, get, p)
		if res != nil {
			c.attempts += res.Attempts
		}
		if err != nil {
			return c.result(done.Response, done.Why), err
		}
		if item, ok := f.Pick(res.Response.Body, c.spec.Body); ok {
			r := *res.Response
			r.Body = item
			return c.result(&r, done.Why+"; fetched with GET "+get.Path()), nil
		}
		wait := Backoff(n, c.p.BackoffBase, c.p.BackoffCap, c.rnd())
		if c.clock.Now().Add(wait).After(until) {
			return c.result(done.Response, done.Why+"; GET "+get.Path()+" did not list it yet"), nil
		}
		if err := c.clock.Sleep(ctx, wait); err != nil {
			return c.result(done.Response, done.Why), err
		}
	}
}
