package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rt "github.com/brellium/brellium/internal/retrytest"
	"github.com/brellium/brellium/request"
	"github.com/brellium/brellium/retry"
)

// roundTrip is a fake net/http transport.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// wrote tells the request's trace that its headers were written, as a transport does.
func wrote(req *http.Request) {
	if tr := httptrace.ContextClientTrace(req.Context()); tr != nil && tr.WroteHeaders != nil {
		tr.WroteHeaders()
	}
}

// An attempt that runs out of time says how long it had.
func TestTimeoutSaysHowLongTheAttemptHad(t *testing.T) {
	hang := roundTrip(func(req *http.Request) (*http.Response, error) {
		<-req.Context().Done()
		return nil, req.Context().Err()
	})
	e := &retry.Engine{Sender: Net{Transport: hang}, Clock: rt.NewFakeClock(), Rand: rt.FixedRand}
	p := retry.DefaultPolicy()
	p.Timeout, p.MaxTime, p.Retries = 0, 40*time.Millisecond, 0
	_, err := e.Do(context.Background(), rt.Spec(t, nil, "GET", "/v2/audits/a", "", false, ""), p)
	var te *retry.TimeoutError
	if !errors.As(err, &te) || te.After != 40*time.Millisecond || !strings.Contains(err.Error(), "timeout after 40ms") {
		t.Errorf("--max-time 40ms: %v, want a timeout after 40ms", err)
	}
}

func TestRedirectsStopAfterTen(t *testing.T) {
	var hops atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hops.Add(1)
		http.Redirect(w, r, fmt.Sprintf("/hop/%d", hops.Load()), http.StatusFound)
	}))
	defer srv.Close()
	base := rt.Spec(t, nil, "GET", "/start", "", false, "")
	base.URL.Scheme, base.URL.Host = "http", strings.TrimPrefix(srv.URL, "http://")
	e := &retry.Engine{Sender: Net{Transport: NewTransport()}, Clock: rt.NewFakeClock(), Rand: rt.FixedRand}
	p := retry.DefaultPolicy()
	p.FollowRedirects, p.Retries = true, 0
	_, err := e.Do(context.Background(), base, p)
	if err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") || hops.Load() != 10 {
		t.Fatalf("err = %v after %d requests", err, hops.Load())
	}
}

// bigAnswer is a status with n bytes of body, its length unknown to the reader.
func bigAnswer(status, n int) roundTrip {
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

// spill is a body policy with the default limits that spills to a writer: open is called on
// each Spill.
type spill struct {
	open     func() (io.Writer, error)
	restarts bool
}

func (spill) Keep(status int) int64                      { return retry.DefaultBody{}.Keep(status) }
func (s spill) Spill(*retry.Response) (io.Writer, error) { return s.open() }
func (s spill) Restarts() bool                           { return s.restarts }

func spillTo(w io.Writer) spill { return spill{open: func() (io.Writer, error) { return w, nil }} }

// Bodies are kept whole up to their limit (4 MiB for an error, 8 MiB for a 2xx), cut past it,
// and a final answer over its limit, whatever its status, is spilled whole when the policy takes
// spills; the body of an answer that will be repeated is not.
func TestBodyLimits(t *testing.T) {
	const keep, keepErr = retry.DefaultKeep, retry.DefaultKeepError
	cases := []struct {
		status, size int
		spill        bool
		wantKept     int
		wantCut      bool
		wantSpilled  int
	}{
		{200, 5 << 20, false, 5 << 20, false, 0},
		{200, keep, false, keep, false, 0},
		{200, keep + 1, false, keep, true, 0},
		{299, keep + 10, true, keep, false, keep + 10},
		{300, 5 << 20, false, keepErr, true, 0},
		{404, keepErr, false, keepErr, false, 0},
		{404, 5 << 20, true, keepErr, false, 5 << 20},
		{503, 5 << 20, true, keepErr, true, 0}, // repeated: nothing spilled, and the retry's 503 is the same
	}
	for _, c := range cases {
		var out bytes.Buffer
		p := retry.DefaultPolicy()
		p.Retries = 1
		if c.spill {
			p.Body = spillTo(&out)
		}
		e := &retry.Engine{Sender: Net{Transport: bigAnswer(c.status, c.size)}, Clock: rt.NewFakeClock(), Rand: rt.FixedRand}
		res, _ := e.Do(context.Background(), rt.Spec(t, nil, "GET", "/v2/audits/a", "", false, ""), p)
		if res == nil || res.Response == nil {
			t.Fatalf("%d of %d bytes: no response", c.status, c.size)
		}
		r := res.Response
		wantSpilled := c.wantSpilled
		if c.status == 503 {
			wantSpilled = c.size // the last attempt's 503 is final: no retry is left
		}
		if len(r.Body) != c.wantKept || int(r.Streamed) != wantSpilled || out.Len() != wantSpilled {
			t.Errorf("%d of %d bytes (spill %v): kept %d cut %v spilled %d (%d out); want %d %v %d",
				c.status, c.size, c.spill, len(r.Body), r.Truncated, r.Streamed, out.Len(), c.wantKept, c.wantCut, wantSpilled)
		}
		if c.status != 503 && r.Truncated != c.wantCut {
			t.Errorf("%d of %d bytes: truncated %v, want %v", c.status, c.size, r.Truncated, c.wantCut)
		}
	}
}

// A failure to open or write the spill target ends the call: it ran, and it is not repeated.
func TestStreamWriteFailureEndsTheCall(t *testing.T) {
	for _, failAt := range []string{"open", "first write", "later write"} {
		p := retry.DefaultPolicy()
		writes := 0
		p.Body = spill{open: func() (io.Writer, error) {
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
		}}
		var sent atomic.Int32
		big := bigAnswer(200, retry.DefaultKeep+(1<<20))
		tr := roundTrip(func(req *http.Request) (*http.Response, error) { sent.Add(1); return big(req) })
		e := &retry.Engine{Sender: Net{Transport: tr}, Clock: rt.NewFakeClock(), Rand: rt.FixedRand}
		res, err := e.Do(context.Background(), rt.Spec(t, nil, "GET", "/v2/audits/a", "", false, ""), p)
		var swe *retry.StreamWriteError
		if !errors.As(err, &swe) || !strings.Contains(err.Error(), "writing the response body: disk full") {
			t.Errorf("%s: err = %v", failAt, err)
		}
		if res == nil || !res.MayHaveRun || sent.Load() != 1 {
			t.Errorf("%s: %+v after %d requests; want one request that may have run", failAt, res, sent.Load())
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
	spec := rt.Spec(t, nil, "POST", "/v2/users", `{"email":"a@example.com"}`, false, "")
	spec.URL.Scheme, spec.URL.Host = "http", strings.TrimPrefix(srv.URL, "http://")
	var events []retry.Event
	e := &retry.Engine{Sender: Net{Transport: tr}, Clock: rt.NewFakeClock(), Rand: rt.FixedRand, Sink: retry.SinkFunc(func(ev retry.Event) { events = append(events, ev) })}
	res, err := e.Do(context.Background(), spec, retry.DefaultPolicy())
	if err != nil || res.Attempts != 2 {
		t.Fatalf("err = %v, attempts %+v: a write that left no byte must be repeated", err, res)
	}
	if events[0].Sent || events[0].Decision != "retry" {
		t.Errorf("first attempt: %+v, want not sent and repeated", events[0])
	}
}

// Bodies go out with their length, never chunked: a JSON body from memory, and a file streamed
// from disk for each attempt (read whole again after a dropped attempt).
func TestBodiesGoOutWithTheirLength(t *testing.T) {
	type got struct {
		length int64
		te     []string
		body   string
	}
	var seen []got
	var drops atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen = append(seen, got{r.ContentLength, r.TransferEncoding, string(b)})
		if r.Method == "PUT" && drops.Add(1) == 1 {
			conn, _, _ := w.(http.Hijacker).Hijack()
			_ = conn.Close()
			return
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	post := rt.Spec(t, nil, "POST", "/v2/users", `{"email":"a@example.com"}`, false, "")
	post.URL.Scheme, post.URL.Host = "http", host
	path := t.TempDir() + "/file.bin"
	content := strings.Repeat("0123456789", 100_000)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	file, err := request.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	put, err := request.NewUpload(srv.URL+"/u/k?sig=x", file, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &retry.Engine{Sender: Net{Transport: NewTransport()}, Clock: rt.NewFakeClock(), Rand: rt.FixedRand}
	for _, spec := range []*request.Spec{post, put} {
		if _, err := e.Do(context.Background(), spec, retry.DefaultPolicy()); err != nil {
			t.Fatalf("%s: %v", spec.Method, err)
		}
	}
	want := []got{{25, nil, `{"email":"a@example.com"}`}, {1_000_000, nil, content}, {1_000_000, nil, content}}
	if len(seen) != 3 {
		t.Fatalf("%d requests, want 3", len(seen))
	}
	for i, w := range want {
		if s := seen[i]; s.length != w.length || len(s.te) != 0 || s.body != w.body {
			t.Errorf("request %d: length %d TE %v body %d bytes; want %d bytes with their length", i, s.length, s.te, len(s.body), w.length)
		}
	}
}
