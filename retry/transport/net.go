// Package transport puts an attempt on the wire: a net/http sender whose connections count the
// bytes they write (so "nothing was sent" is exact), a lean fasthttp sender for the calls that
// repeat freely, the choice between them, body reading and streaming, and redirects. Each
// sender is a retry.Sender.
package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/brellium/brellium/request"
	"github.com/brellium/brellium/retry"
)

// dialTimeout and keepAlive are net/http's defaults; both senders dial with them.
const (
	dialTimeout = 30 * time.Second
	keepAlive   = 30 * time.Second
)

// NewTransport returns an HTTP transport whose connections count the bytes they write, so the
// engine can tell "nothing was sent" (safe to repeat even for a write) from "sent, outcome
// unknown".
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: keepAlive}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c}, nil
	}
	t.MaxIdleConnsPerHost = 256
	t.MaxResponseHeaderBytes = retry.MaxHeaderBytes
	// An upload streams its file through this buffer: net/http's 4 KiB made a 2 GiB file half
	// a million writes, and the upload 2.8 times slower than curl -T.
	t.WriteBufferSize = 64 << 10
	return t
}

// Net sends attempts through a net/http transport. With a transport from NewTransport, sent is
// exact: whether any byte of the request was written to the connection; with another, whether
// the transport reported writing the headers.
type Net struct {
	// Transport is the round tripper; nil is http.DefaultTransport.
	Transport http.RoundTripper
}

// Send makes one attempt.
func (n Net) Send(ctx context.Context, o *retry.Outgoing) (*retry.Response, bool, error) {
	actx := ctx
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	var w written
	// An in-memory body is a *bytes.Reader, whose length and rewind net/http knows.
	body, length := o.Spec.NewBody(), int64(len(o.Spec.Body))
	if o.Spec.File != nil {
		rc, n, err := o.Spec.OpenBody()
		if err != nil {
			return nil, false, &retry.BodySourceError{Err: err}
		}
		body, length = rc, n
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(actx, w.trace()), o.Spec.Method, o.Spec.URL.String(), body)
	if err != nil {
		if c, ok := body.(io.Closer); ok {
			_ = c.Close()
		}
		return nil, false, err
	}
	if o.Spec.File != nil {
		// A file is streamed from disk with its length announced, and opened anew to follow a
		// redirect: net/http knows the length of in-memory bodies only.
		req.ContentLength = length
		req.GetBody = func() (io.ReadCloser, error) {
			b, _, err := o.Spec.OpenBody()
			return b, err
		}
	}
	// Nothing writes to the request's headers after this, so events can share them.
	req.Header = o.Header
	var hr *http.Response
	if o.FollowRedirects {
		hr, err = (&http.Client{Transport: n.transport(), CheckRedirect: redirects(o)}).Do(req)
	} else {
		// Without -L a 3xx is the answer: the transport alone does the round trip.
		hr, err = n.transport().RoundTrip(req)
	}
	describe := func(err error) error { return describeError(err, actx, o.Timeout) }
	if err != nil {
		return nil, w.sent(), describe(err)
	}
	defer hr.Body.Close()
	a := reply{status: hr.StatusCode, statusText: hr.Status, proto: hr.Proto, header: hr.Header,
		contentLength: hr.ContentLength, body: hr.Body}
	resp, err := a.read(o, describe)
	if resp != nil && hr.Request != nil && !request.SameOrigin(hr.Request.URL, o.Spec.URL) {
		resp.URL = hr.Request.URL
	}
	return resp, true, err
}

func (n Net) transport() http.RoundTripper {
	if n.Transport == nil {
		return http.DefaultTransport
	}
	return n.Transport
}

// CloseIdleConnections closes the transport's idle connections.
func (n Net) CloseIdleConnections() {
	if t, ok := n.transport().(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
}

// redirects follows up to 10 redirects of a call. No hop carries a Referer. A hop to another
// origin carries none of the call's own headers (credentials, the user's -H, the idempotency
// key): only Accept and User-Agent; and a redirect that would carry the body to another origin
// (a 307 or 308) is not followed.
func redirects(o *retry.Outgoing) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		req.Header.Del("Referer")
		if request.SameOrigin(req.URL, o.Spec.URL) {
			return nil
		}
		if req.GetBody != nil && req.Method != http.MethodGet && req.Method != http.MethodHead {
			status := 307
			if req.Response != nil {
				status = req.Response.StatusCode
			}
			return &retry.RedirectRefusedError{Status: status, Location: req.URL.Redacted(),
				Why: "it would send the request body to another origin"}
		}
		kept := http.Header{}
		for _, k := range []string{"Accept", "User-Agent"} {
			if v := req.Header.Values(k); len(v) > 0 {
				kept[k] = v
			}
		}
		req.Header = kept
		return nil
	}
}

// describeError keeps what a user needs of a transport error: a timeout says so, and the URL,
// already in every line, is dropped.
func describeError(err error, actx context.Context, timeout time.Duration) error {
	if errors.Is(actx.Err(), context.DeadlineExceeded) {
		return &retry.TimeoutError{After: timeout, Err: err}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var refused *retry.RedirectRefusedError
	if errors.As(err, &refused) {
		return refused
	}
	if strings.Contains(err.Error(), "server response headers exceeded") {
		return &retry.HeadersTooLargeError{Err: err}
	}
	return err
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

// countingConn is a connection that counts the bytes written to it.
type countingConn struct {
	net.Conn
	n atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// BytesWritten returns the bytes written so far.
func (c *countingConn) BytesWritten() int64 { return c.n.Load() }

// countingOf finds the counting connection under c (a TLS connection wraps it), or nil.
func countingOf(c net.Conn) *countingConn {
	for c != nil {
		switch v := c.(type) {
		case *countingConn:
			return v
		case *tls.Conn:
			c = v.NetConn()
		default:
			return nil
		}
	}
	return nil
}
