package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/brellium/brellium/retry"
)

// FastClient is a lean HTTP/1.1 client (fasthttp) for the calls of a batch that may be repeated
// freely. net/http spends two goroutines, a select and a header map per request; at tens of
// thousands of requests a second that is most of a batch's CPU. Route sends through it only the
// calls where it changes nothing the user can see; everything else keeps the counting net/http
// transport.
//
// A FastClient belongs to one context: when that context is done, every connection is closed,
// so the requests in flight end at once, and no new request is sent. A call's own context
// ending does not stop its request early; its deadline does.
type FastClient struct {
	hc     *fasthttp.HostClient
	scheme string
	host   string
	done   <-chan struct{}

	mu     sync.Mutex
	conns  map[*trackedConn]struct{}
	closed bool
	// stale holds the local addresses of connections closed stale, until their Send reads them.
	stale map[string]bool
}

// NewFastClient returns a client for base's origin (http or https) that opens up to maxConns
// connections; it stops when ctx is done.
func NewFastClient(ctx context.Context, base *url.URL, maxConns int) *FastClient {
	f := &FastClient{scheme: base.Scheme, host: base.Host, done: ctx.Done(), conns: map[*trackedConn]struct{}{}, stale: map[string]bool{}}
	f.hc = &fasthttp.HostClient{
		Addr:                     hostPort(base),
		IsTLS:                    base.Scheme == "https",
		DialTimeout:              f.dial,
		MaxConns:                 maxConns,
		MaxConnWaitTimeout:       30 * time.Second,
		NoDefaultUserAgentHeader: true,
		DisablePathNormalizing:   true,
		StreamResponseBody:       true,
		// A response's headers must fit in the read buffer: retry.MaxHeaderBytes, as on net/http
		// (fasthttp's own 4 KiB is less than some APIs send: cookies, policies).
		ReadBufferSize: retry.MaxHeaderBytes,
		// fasthttp's errors may quote the answer's raw headers, cookies included; a brellium
		// error line never holds a secret.
		SecureErrorLogMessage: true,
		// The engine alone repeats calls, so that every request the server sees is an attempt
		// the user sees: fasthttp sends each request once. A request on a reused connection that
		// the server had closed comes back as a retry.StaleConnectionError, which the engine
		// sends again at once; idle connections are dropped after 4 s, under the shortest idle
		// timeout common among servers (Node.js: 5 s), so that it seldom happens.
		MaxIdemponentCallAttempts: 1,
		RetryIfErr:                func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
		MaxIdleConnDuration:       4 * time.Second,
	}
	context.AfterFunc(ctx, f.closeAll)
	return f
}

func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// Serves reports whether the client reaches u's origin.
func (f *FastClient) Serves(u *url.URL) bool { return u.Scheme == f.scheme && u.Host == f.host }

// CloseIdleConnections closes the connections that no request is using.
func (f *FastClient) CloseIdleConnections() { f.hc.CloseIdleConnections() }

// dialError is a connection that could not be made: nothing was sent.
type dialError struct{ err error }

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// dial connects, and for https makes the TLS handshake here rather than on the first write, so
// that a refused certificate, like a refused connection, is "nothing was sent".
func (f *FastClient) dial(addr string, timeout time.Duration) (net.Conn, error) {
	if timeout <= 0 || timeout > dialTimeout {
		timeout = dialTimeout
	}
	d := net.Dialer{Timeout: timeout, KeepAlive: keepAlive}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, &dialError{err}
	}
	if f.hc.IsTLS {
		host, _, _ := net.SplitHostPort(addr)
		tc := tls.Client(c, &tls.Config{ServerName: host, NextProtos: []string{"http/1.1"}})
		_ = tc.SetDeadline(time.Now().Add(timeout))
		if err := tc.Handshake(); err != nil {
			_ = c.Close()
			return nil, &dialError{err}
		}
		_ = tc.SetDeadline(time.Time{})
		c = tc
	}
	t := &trackedConn{Conn: c, f: f}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		_ = c.Close()
		return nil, &dialError{context.Canceled}
	}
	f.conns[t] = struct{}{}
	return t, nil
}

func (f *FastClient) closeAll() {
	f.mu.Lock()
	f.closed = true
	conns := f.conns
	f.conns = map[*trackedConn]struct{}{}
	f.mu.Unlock()
	for c := range conns {
		_ = c.Conn.Close()
	}
}

// trackedConn leaves the client's set when it closes.
// It also tells whether it was closed as a stale connection: reused for a request after an
// earlier one, then failed before any byte of the answer came. fasthttp uses a connection for
// one request at a time, so the counters need no lock.
type trackedConn struct {
	net.Conn
	f    *FastClient
	once sync.Once
	// requests counts the requests begun on the connection; answered says that a byte of the
	// current one's answer came.
	requests int
	answered bool
}

// Handshake tells fasthttp that the connection needs no TLS handshake of its own: dial made it.
func (c *trackedConn) Handshake() error { return nil }

func (c *trackedConn) Write(p []byte) (int, error) {
	if c.requests == 0 || c.answered {
		c.requests++
		c.answered = false
	}
	return c.Conn.Write(p)
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.answered = true
	}
	return n, err
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.f.mu.Lock()
		delete(c.f.conns, c)
		if c.requests > 1 && !c.answered {
			c.f.stale[c.LocalAddr().String()] = true
		}
		c.f.mu.Unlock()
	})
	return c.Conn.Close()
}

// takeStale reports whether the connection at local address addr was closed stale, and forgets
// it.
func (f *FastClient) takeStale(addr net.Addr) bool {
	if addr == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	stale := f.stale[addr.String()]
	delete(f.stale, addr.String())
	return stale
}

// Send makes one attempt. sent is false only when no connection was made; a connection that
// fails after that counts as sent, which is why Route sends here only calls that the engine
// repeats either way.
func (f *FastClient) Send(ctx context.Context, o *retry.Outgoing) (resp *retry.Response, sent bool, err error) {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	fr := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(fr)

	req.Header.SetMethod(o.Spec.Method)
	req.SetRequestURI(o.Spec.URL.String())
	for k, vs := range o.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if o.Spec.Body != nil {
		req.SetBodyRaw(o.Spec.Body)
	}
	fr.Header.SetNoDefaultContentType(true)

	var deadline time.Time
	if o.Timeout > 0 {
		deadline = time.Now().Add(o.Timeout)
	}
	if d, ok := ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
		deadline = d
	}
	select {
	case <-f.done:
		return nil, false, context.Canceled
	default:
	}
	if deadline.IsZero() {
		err = f.hc.Do(req, fr)
	} else {
		err = f.hc.DoDeadline(req, fr, deadline)
	}
	if err != nil {
		var de *dialError
		sent := !errors.As(err, &de) && !errors.Is(err, fasthttp.ErrNoFreeConns)
		if sent && f.takeStale(fr.LocalAddr()) && ctx.Err() == nil {
			// The server closes idle connections: the others in the pool are suspect too.
			f.hc.CloseIdleConnections()
			return nil, true, &retry.StaleConnectionError{Err: err}
		}
		return nil, sent, f.describe(ctx, err, o.Timeout)
	}
	defer fr.CloseBodyStream()

	status := fr.StatusCode()
	h := make(http.Header, 12)
	for k, v := range fr.Header.All() {
		h.Add(string(k), string(v))
	}
	statusText := "" // NewResponse writes the standard text for a status line without one
	if m := fr.Header.StatusMessage(); len(m) > 0 {
		statusText = strconv.Itoa(status) + " " + string(m)
	}
	a := reply{
		status: status, statusText: statusText, proto: string(fr.Header.Protocol()),
		header: h, contentLength: int64(fr.Header.ContentLength()),
		body: fr.BodyStream(),
	}
	if a.body == nil {
		a.body = http.NoBody
	}
	r, err := a.read(o, func(err error) error { return f.describe(ctx, err, o.Timeout) })
	return r, true, err
}

// describe turns a fasthttp error into what the engine reports: ctx's error when the call was
// stopped, a TimeoutError when the attempt ran out of time.
func (f *FastClient) describe(ctx context.Context, err error, timeout time.Duration) error {
	select {
	case <-f.done:
		return context.Canceled
	default:
	}
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ctx.Err()
	}
	var te interface{ Timeout() bool }
	if errors.As(err, &te) && te.Timeout() {
		return &retry.TimeoutError{After: timeout, Err: err}
	}
	var de *dialError
	if errors.As(err, &de) {
		return de.err
	}
	var small *fasthttp.ErrSmallBuffer
	if errors.As(err, &small) {
		return &retry.HeadersTooLargeError{Err: err}
	}
	return err
}
