package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	rt "github.com/brellium/brellium/internal/retrytest"
	"github.com/brellium/brellium/retry"
)

// rawServer serves each connection with serve, which reads requests from br and writes to c;
// it counts the requests that serve says it read.
type rawServer struct {
	url      string
	requests atomic.Int32
}

func newRawServer(t *testing.T, serve func(s *rawServer, c net.Conn, br *bufio.Reader)) *rawServer {
	t.Helper()
	s := &rawServer{}
	s.url = rt.Listen(t, func(c net.Conn) { serve(s, c, bufio.NewReader(c)) })
	return s
}

// read reads one request, body included, and counts it.
func (s *rawServer) read(br *bufio.Reader) (*http.Request, bool) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, false
	}
	_, _ = io.Copy(io.Discard, req.Body)
	s.requests.Add(1)
	return req, true
}

// senders are the two ways an attempt can go out, for a base URL.
func senders(t *testing.T, base string) map[string]retry.Sender {
	u, _ := url.Parse(base)
	fc := NewFastClient(t.Context(), u, 4)
	net := Net{Transport: NewTransport()}
	t.Cleanup(func() { fc.CloseIdleConnections(); net.CloseIdleConnections() })
	return map[string]retry.Sender{"net": net, "fast": fc}
}

// A body shorter than its Content-Length, or a chunked body cut off, is a failed attempt on
// both senders: a GET is sent again and its whole body comes.
func TestCutBodiesAreFailedAttempts(t *testing.T) {
	answers := map[string]string{
		"short":   "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":",
		"chunked": "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n",
	}
	for name, cut := range answers {
		for _, big := range []bool{false, true} {
			cut := cut
			if big { // the cut comes after the kept part: the body is being spilled
				cut = strings.Replace(cut, "Content-Length: 100", fmt.Sprintf("Content-Length: %d", retry.DefaultKeep+100), 1)
			}
			srv := newRawServer(t, func(s *rawServer, c net.Conn, br *bufio.Reader) {
				if _, ok := s.read(br); !ok {
					return
				}
				if s.requests.Load() == 1 {
					_, _ = io.WriteString(c, cut)
					if big && name == "short" {
						_, _ = c.Write(make([]byte, retry.DefaultKeep+10))
					}
					return // closes the connection: the body is cut
				}
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}")
			})
			for client, sender := range senders(t, srv.url) {
				srv.requests.Store(0)
				u, _ := url.Parse(srv.url)
				e := &retry.Engine{Sender: sender, Clock: rt.NewFakeClock(), Rand: rt.FixedRand}
				p := retry.DefaultPolicy()
				var spilled strings.Builder
				p.Body = spill{open: func() (io.Writer, error) { spilled.Reset(); return &spilled, nil }, restarts: true}
				res, err := e.Do(context.Background(), rt.Spec(t, u, "GET", "/v2/audits/a", "", false, ""), p)
				if err != nil || res.Attempts != 2 || string(res.Response.Body) != `{"a":1}` || res.Response.Truncated {
					t.Errorf("%s %s (big %v): %v %+v; want the second attempt's whole body", name, client, big, err, res)
				}
			}
		}
	}
}

// A request written on a reused connection that the server had closed (without Connection:
// close) is sent again at once on a new one: every call ends ok, and the resends are logged but
// not counted as retries.
func TestStaleConnectionsAreSentAgainAtOnce(t *testing.T) {
	srv := newRawServer(t, func(s *rawServer, c net.Conn, br *bufio.Reader) {
		if _, ok := s.read(br); ok {
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
		}
		// and closes the connection without saying so
	})
	u, _ := url.Parse(srv.url)
	fc := NewFastClient(t.Context(), u, 4)
	defer fc.CloseIdleConnections()
	var mu sync.Mutex
	var stale, retries int
	e := &retry.Engine{Sender: fc, Clock: rt.NewFakeClock(), Rand: rt.FixedRand, Sink: retry.SinkFunc(func(ev retry.Event) {
		mu.Lock()
		defer mu.Unlock()
		if ev.WaitSource == "reused connection" {
			stale++
		} else if ev.Decision == "retry" {
			retries++
		}
	})}
	p := retry.DefaultPolicy()
	p.Retries = 0
	for i := 0; i < 60; i++ {
		res, err := e.Do(context.Background(), rt.Spec(t, u, "GET", fmt.Sprintf("/v2/audits/%d", i), "", false, ""), p)
		if err != nil {
			t.Fatalf("call %d: %v (after %d stale resends)", i, err, stale)
		}
		if res.Response.Status != 200 {
			t.Fatalf("call %d: %d", i, res.Response.Status)
		}
	}
	if retries != 0 || stale == 0 {
		t.Errorf("%d retries counted, %d stale resends: want resends, not retries", retries, stale)
	}
	t.Logf("60 calls: %d stale connections sent again at once", stale)
}

// A fresh connection that the server closes before answering is not stale: that is a failed
// attempt like any other.
func TestAFreshConnectionClosedIsNotStale(t *testing.T) {
	srv := newRawServer(t, func(s *rawServer, c net.Conn, br *bufio.Reader) { s.read(br) })
	u, _ := url.Parse(srv.url)
	fc := NewFastClient(t.Context(), u, 1)
	defer fc.CloseIdleConnections()
	var stale int
	e := &retry.Engine{Sender: fc, Clock: rt.NewFakeClock(), Rand: rt.FixedRand, Sink: retry.SinkFunc(func(ev retry.Event) {
		if ev.WaitSource == "reused connection" {
			stale++
		}
	})}
	p := retry.DefaultPolicy()
	p.Retries = 1
	_, err := e.Do(context.Background(), rt.Spec(t, u, "GET", "/v2/audits/a", "", false, ""), p)
	if retry.OutcomeOf(err) != retry.Exhausted || stale != 0 || srv.requests.Load() != 2 {
		t.Fatalf("err %v, %d stale, %d requests: want 2 counted attempts", err, stale, srv.requests.Load())
	}
}

// Headers over the limit are refused the same way by both senders, and not repeated.
func TestHeadersOverTheLimitAreFinal(t *testing.T) {
	srv := newRawServer(t, func(s *rawServer, c net.Conn, br *bufio.Reader) {
		if _, ok := s.read(br); ok {
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Big: "+strings.Repeat("h", 70<<10)+"\r\nContent-Length: 2\r\n\r\n{}")
		}
	})
	for client, sender := range senders(t, srv.url) {
		srv.requests.Store(0)
		u, _ := url.Parse(srv.url)
		e := &retry.Engine{Sender: sender, Clock: rt.NewFakeClock(), Rand: rt.FixedRand}
		_, err := e.Do(context.Background(), rt.Spec(t, u, "GET", "/v2/audits/a", "", false, ""), retry.DefaultPolicy())
		var big *retry.HeadersTooLargeError
		if retry.OutcomeOf(err) != retry.APIFailure || !errorsAs(err, &big) || srv.requests.Load() != 1 {
			t.Errorf("%s: %v after %d requests; want one attempt, headers too large", client, err, srv.requests.Load())
		}
	}
	// 60 KiB of headers pass on both.
	ok := newRawServer(t, func(s *rawServer, c net.Conn, br *bufio.Reader) {
		if _, ok := s.read(br); ok {
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Big: "+strings.Repeat("h", 60<<10)+"\r\nContent-Length: 2\r\n\r\n{}")
		}
	})
	for client, sender := range senders(t, ok.url) {
		u, _ := url.Parse(ok.url)
		e := &retry.Engine{Sender: sender, Clock: rt.NewFakeClock()}
		if _, err := e.Do(context.Background(), rt.Spec(t, u, "GET", "/v2/audits/a", "", false, ""), retry.DefaultPolicy()); err != nil {
			t.Errorf("%s: 60 KiB of headers: %v", client, err)
		}
	}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
