package transport

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brellium/brellium/request"

	rt "github.com/brellium/brellium/internal/retrytest"
	"github.com/brellium/brellium/retry"
)

// wire plays a case's steps from a real HTTP server: each request gets the next step's answer;
// a dropped step closes the connection once the request is in.
type wire struct {
	mu    sync.Mutex
	steps []rt.Step
	reqs  []*http.Request
	srv   *httptest.Server
}

func newWire(t *testing.T, steps ...rt.Step) *wire {
	w := &wire{steps: steps}
	w.srv = httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(w.srv.Close)
	return w
}

func (w *wire) serve(rw http.ResponseWriter, req *http.Request) {
	_, _ = io.Copy(io.Discard, req.Body)
	w.mu.Lock()
	w.reqs = append(w.reqs, req)
	s := w.steps[0]
	if len(w.steps) > 1 {
		w.steps = w.steps[1:]
	}
	w.mu.Unlock()
	if s.Drop {
		conn, _, _ := rw.(http.Hijacker).Hijack()
		_ = conn.Close()
		return
	}
	for k, v := range s.Header() {
		rw.Header()[k] = v
	}
	rw.WriteHeader(s.Status)
	_, _ = io.WriteString(rw, s.Body)
}

func (w *wire) sent() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.reqs)
}

func (w *wire) spec(t *testing.T, tc rt.Case) *request.Spec {
	t.Helper()
	base, _ := url.Parse(w.srv.URL)
	return rt.Spec(t, base, tc.Method, tc.Path, tc.Body, tc.Idempotent, tc.Key)
}

// TestRepeatTableOverTheWire runs the repeat table against a real server, through the counting
// net/http transport and through the FastClient (which carries the calls it can and hands the
// rest to net/http): the same requests reach the server, with the same waits and outcomes.
func TestRepeatTableOverTheWire(t *testing.T) {
	for _, tc := range rt.Cases() {
		if tc.HasRefused() {
			continue // a refused connection is not something a server can answer
		}
		for _, client := range []string{"net", "fast"} {
			t.Run(client+"/"+tc.Name, func(t *testing.T) {
				tc := tc.Fresh()
				w := newWire(t, tc.Steps...)
				clock := rt.NewFakeClock()
				route := Route{Net: Net{Transport: NewTransport()}}
				if client == "fast" {
					base, _ := url.Parse(w.srv.URL)
					route.Fast = NewFastClient(t.Context(), base, 4)
				}
				defer route.CloseIdleConnections()
				e := &retry.Engine{Sender: route, Clock: clock, Rand: rt.FixedRand, Auth: tc.Auth}
				res, err := e.Do(context.Background(), w.spec(t, tc), tc.PolicyOf())
				tc.Check(t, clock, w.sent(), res, err)
			})
		}
	}
}

// Both clients send the same request and read the same answer.
func TestFastClientMatchesNetHTTP(t *testing.T) {
	var mu sync.Mutex
	var got []http.Header
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h := r.Header.Clone()
		h.Del("Accept-Encoding") // net/http asks for gzip and undoes it itself; fasthttp does not ask
		h.Set("X-Method-Target", r.Method+" "+r.RequestURI)
		mu.Lock()
		got, bodies = append(got, h), append(bodies, string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req-1")
		w.Header().Set("RateLimit-Limit", "100")
		w.Header().Set("RateLimit-Remaining", "42")
		w.Header().Add("X-Twice", "a")
		w.Header().Add("X-Twice", "b")
		w.WriteHeader(202)
		_, _ = w.Write([]byte(`{"audit_id":"a%2Fb"}`))
	}))
	defer srv.Close()
	base, _ := url.Parse(srv.URL)
	spec, err := request.New(base, request.Options{Method: "PUT", Target: "/v2/things/a%2Fb?x=1&y=%20z",
		Body: []byte(`{"n":1}`), Idempotent: true, Headers: []string{"X-Custom: v1", "X-Custom: v2"}})
	if err != nil {
		t.Fatal(err)
	}
	var res [2]*retry.Result
	for i, fast := range []bool{false, true} {
		route := Route{Net: Net{Transport: NewTransport()}}
		if fast {
			route.Fast = NewFastClient(t.Context(), base, 2)
		}
		defer route.CloseIdleConnections()
		e := &retry.Engine{Sender: route, Auth: rt.StaticToken("tok"), UserAgent: "brellium/test"}
		if res[i], err = e.Do(context.Background(), spec, retry.Policy{}); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 2 {
		t.Fatalf("%d requests", len(got))
	}
	for _, h := range got {
		h.Del("Content-Length") // compared through the bodies
	}
	if !equalHeaders(got[0], got[1]) || bodies[0] != bodies[1] {
		t.Errorf("requests differ:\nnet/http %v %q\nfast     %v %q", got[0], bodies[0], got[1], bodies[1])
	}
	a, b := res[0].Response, res[1].Response
	a.Header.Del("Date")
	b.Header.Del("Date")
	if a.Status != b.Status || a.StatusText != b.StatusText || a.Proto != b.Proto || !bytes.Equal(a.Body, b.Body) ||
		a.JSON != b.JSON || a.RequestID != b.RequestID || a.RateLimit != b.RateLimit || !equalHeaders(a.Header, b.Header) {
		t.Errorf("answers differ:\nnet/http %+v\nfast     %+v", a, b)
	}
}

func equalHeaders(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if strings.Join(v, "\n") != strings.Join(b[k], "\n") {
			return false
		}
	}
	return true
}

// A call that must not be sent twice never goes through the fast client: a POST, a GET with -L
// and a GET with a framing header of its own reach the server through net/http, which asks for
// gzip.
func TestFastClientCarriesOnlyCallsThatRepeatFreely(t *testing.T) {
	var mu sync.Mutex
	gzip := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gzip[r.Method+" "+r.URL.Path] = r.Header.Get("Accept-Encoding") == "gzip"
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	base, _ := url.Parse(srv.URL)
	route := Route{Net: Net{Transport: NewTransport()}, Fast: NewFastClient(t.Context(), base, 2)}
	defer route.CloseIdleConnections()
	e := &retry.Engine{Sender: route}
	do := func(method, target string, p retry.Policy) {
		var body []byte
		if method == "POST" {
			body = []byte(`{"email":"a@example.com"}`)
		}
		spec, err := request.New(base, request.Options{Method: method, Target: target, Body: body})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Do(context.Background(), spec, p); err != nil {
			t.Fatal(err)
		}
	}
	do("GET", "/v2/audits/a", retry.Policy{})
	do("POST", "/v2/users", retry.Policy{})
	do("GET", "/v2/audits/b", retry.Policy{FollowRedirects: true})
	spec, _ := request.New(base, request.Options{Target: "/v2/audits/c", Headers: []string{"Content-Length: 5"}})
	if _, err := e.Do(context.Background(), spec, retry.Policy{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"GET /v2/audits/a": false, "POST /v2/users": true, "GET /v2/audits/b": true, "GET /v2/audits/c": true}
	for k, v := range want {
		if gzip[k] != v {
			t.Errorf("%s went through net/http = %v, want %v", k, gzip[k], v)
		}
	}
}

// A refused connection sent nothing; an attempt that runs out of time is a TimeoutError.
func TestFastClientErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	base, _ := url.Parse("http://" + addr)
	e := &retry.Engine{Sender: NewFastClient(t.Context(), base, 2), Clock: rt.NewFakeClock(), Rand: rt.FixedRand}
	spec, _ := request.New(base, request.Options{Target: "/v2/audits/a"})
	var events []retry.Event
	e.Sink = retry.SinkFunc(func(ev retry.Event) { events = append(events, ev) })
	_, err = e.Do(context.Background(), spec, retry.Policy{Retries: 1})
	if retry.OutcomeOf(err) != retry.Exhausted || len(events) != 2 || events[0].Sent || !strings.Contains(events[0].Why, "nothing was sent") {
		t.Fatalf("refused: err %v, events %+v", err, events)
	}

	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hold)
	base, _ = url.Parse(srv.URL)
	fc := NewFastClient(t.Context(), base, 2)
	defer fc.CloseIdleConnections()
	e = &retry.Engine{Sender: fc, Clock: rt.NewFakeClock(), Rand: rt.FixedRand}
	spec, _ = request.New(base, request.Options{Target: "/v2/audits/a"})
	_, err = e.Do(context.Background(), spec, retry.Policy{Timeout: 50 * time.Millisecond})
	var te *retry.TimeoutError
	if !errors.As(err, &te) || te.After != 50*time.Millisecond {
		t.Fatalf("timeout: %v", err)
	}
}

// When the client's context ends, the requests in flight end at once and no new one is sent.
func TestFastClientStopsWithItsContext(t *testing.T) {
	arrived := make(chan struct{}, 1)
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		arrived <- struct{}{}
		<-r.Context().Done()
	}))
	defer srv.Close()
	base, _ := url.Parse(srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	e := &retry.Engine{Sender: NewFastClient(ctx, base, 2), Clock: rt.NewFakeClock(), Rand: rt.FixedRand}
	spec, _ := request.New(base, request.Options{Target: "/v2/audits/a"})
	done := make(chan error, 1)
	go func() {
		_, err := e.Do(ctx, spec, retry.Policy{Retries: 3, Timeout: time.Minute})
		done <- err
	}()
	<-arrived
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if _, err := e.Do(context.Background(), spec, retry.Policy{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("after the stop: err = %v, want context.Canceled", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n != 1 {
		t.Errorf("%d requests reached the server, want 1", n)
	}
}

// Bodies of every framing: chunked, HEAD, a 2xx too large to keep (cut), large headers, and a
// body that ends when the server closes the connection.
func TestFastClientBodies(t *testing.T) {
	big := strings.Repeat("x", retry.DefaultKeep+10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/chunked":
			for i := 0; i < 3; i++ {
				_, _ = w.Write([]byte(strings.Repeat("ab", 5000)))
				w.(http.Flusher).Flush()
			}
		case "/big":
			_, _ = w.Write([]byte(big))
		case "/big-header":
			w.Header().Set("X-Large", strings.Repeat("h", 40<<10))
			_, _ = w.Write([]byte(`{"a":2}`))
		case "/until-close":
			conn, buf, _ := w.(http.Hijacker).Hijack()
			_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"a\":3}")
			_ = buf.Flush()
			_ = conn.Close()
		default:
			w.Header().Set("Content-Length", "7")
			_, _ = w.Write([]byte(`{"a":1}`))
		}
	}))
	defer srv.Close()
	base, _ := url.Parse(srv.URL)
	fc := NewFastClient(t.Context(), base, 2)
	defer fc.CloseIdleConnections()
	e := &retry.Engine{Sender: fc}
	get := func(method, target string) *retry.Response {
		spec, _ := request.New(base, request.Options{Method: method, Target: target})
		res, err := e.Do(context.Background(), spec, retry.Policy{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Response
	}
	if r := get("GET", "/chunked"); len(r.Body) != 30000 || r.Truncated {
		t.Errorf("chunked: %d bytes, truncated %v", len(r.Body), r.Truncated)
	}
	if r := get("HEAD", "/small"); len(r.Body) != 0 || r.Header.Get("Content-Length") != "7" {
		t.Errorf("HEAD: %q %v", r.Body, r.Header)
	}
	if r := get("GET", "/big"); len(r.Body) != retry.DefaultKeep || !r.Truncated {
		t.Errorf("big: %d bytes, truncated %v", len(r.Body), r.Truncated)
	}
	if r := get("GET", "/small"); string(r.Body) != `{"a":1}` {
		t.Errorf("after the big one, the connection serves again: %q", r.Body)
	}
	if r := get("GET", "/big-header"); string(r.Body) != `{"a":2}` || len(r.Header.Get("X-Large")) != 40<<10 {
		t.Errorf("40 KiB header: %q", r.Body)
	}
	if r := get("GET", "/until-close"); string(r.Body) != `{"a":3}` || !r.JSON {
		t.Errorf("a body that ends with the connection: %q", r.Body)
	}
}

// Both clients keep a status line's own reason phrase and supply the standard one when the
// line has none; the fast client reaches the default ports of its origin's scheme.
func TestStatusTextOnBothClients(t *testing.T) {
	for _, line := range []string{"HTTP/1.1 200 Fine", "HTTP/1.1 200"} {
		addr := rawAnswer(t, line+"\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
		base, _ := url.Parse("http://" + addr)
		spec, _ := request.New(base, request.Options{Target: "/v2/audits/a"})
		want := "200 Fine"
		if line == "HTTP/1.1 200" {
			want = "200 OK"
		}
		for _, e := range []*retry.Engine{
			{Sender: Net{Transport: NewTransport()}, Clock: rt.NewFakeClock()},
			{Sender: NewFastClient(t.Context(), base, 1), Clock: rt.NewFakeClock()},
		} {
			res, err := e.Do(context.Background(), spec, retry.Policy{})
			if err != nil || res.Response.StatusText != want || string(res.Response.Body) != "{}" {
				t.Errorf("%q (%T): %v %+v, want status text %q", line, e.Sender, err, res, want)
			}
		}
	}
	for raw, want := range map[string]string{"https://h": "h:443", "http://h": "h:80", "http://h:81": "h:81", "https://[::1]": "[::1]:443"} {
		u, _ := url.Parse(raw)
		if got := hostPort(u); got != want {
			t.Errorf("hostPort(%s) = %s, want %s", raw, got, want)
		}
	}
}

// rawAnswer serves every connection one fixed answer after reading its request, and returns
// its HOST:PORT.
func rawAnswer(t *testing.T, answer string) string {
	t.Helper()
	url := rt.Listen(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			if _, err := io.WriteString(c, answer); err != nil {
				return
			}
		}
	})
	return strings.TrimPrefix(url, "http://")
}
