package retry

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync/atomic"
	"time"
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
	return t
}

// dialTimeout and keepAlive are net/http's defaults; both clients dial with them.
const (
	dialTimeout = 30 * time.Second
	keepAlive   = 30 * time.Second
)

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
