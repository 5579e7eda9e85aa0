package retry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brellium/brellium/request"
)

// fakeClock runs every sleep at once and records it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Now()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// step is one scripted answer of the fake transport.
type step func(req *http.Request) (*http.Response, error)

// fakeTransport answers each request with the next step and records the requests.
type fakeTransport struct {
	mu    sync.Mutex
	steps []step
	reqs  []*http.Request
}

func (t *fakeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reqs = append(t.reqs, req)
	if len(t.steps) == 0 {
		return nil, errors.New("fake transport: no step left")
	}
	s := t.steps[0]
	if len(t.steps) > 1 {
		t.steps = t.steps[1:]
	}
	return s(req)
}

func wrote(req *http.Request) {
	if tr := httptrace.ContextClientTrace(req.Context()); tr != nil && tr.WroteHeaders != nil {
		tr.WroteHeaders()
	}
}

// answer is a response; headers alternate name, value.
func answer(status int, body string, headers ...string) step {
	return func(req *http.Request) (*http.Response, error) {
		wrote(req)
		h := http.Header{}
		if strings.HasPrefix(body, "{") {
			h.Set("Content-Type", "application/json")
		}
		for i := 0; i+1 < len(headers); i += 2 {
			h.Set(headers[i], headers[i+1])
		}
		return &http.Response{StatusCode: status, Status: http.StatusText(status), Proto: "HTTP/1.1",
			Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
	}
}

func apiErr(status int, code string, headers ...string) step {
	body := `{"error":{"type":"api_error","code":"` + code + `","message":"` + code + ` happened","request_id":"req-` + code + `"}}`
	return answer(status, body, append([]string{"X-Request-Id", "req-" + code}, headers...)...)
}

// dropped writes the request, then loses the connection.
func dropped() step {
	return func(req *http.Request) (*http.Response, error) {
		wrote(req)
		return nil, io.ErrUnexpectedEOF
	}
}

// refused fails before any byte is written.
func refused() step {
	return func(req *http.Request) (*http.Response, error) {
		return nil, &url.Error{Op: "Post", URL: req.URL.String(), Err: errors.New("dial tcp 127.0.0.1:1: connect: connection refused")}
	}
}

// renewer is an Authorizer that can be renewed and counts renewals.
type renewer struct{ renewals int }

func (r *renewer) Authorization(context.Context) (string, error) { return "Bearer t", nil }
func (r *renewer) Renewable() bool                               { return true }
func (r *renewer) Renew(context.Context) error                   { r.renewals++; return nil }

func mustSpec(t *testing.T, method, target, body string, idem bool, key string) *request.Spec {
	t.Helper()
	base, _ := url.Parse("https://api.brellium.test")
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	s, err := request.New(base, request.Options{Method: method, Target: target, Body: b, Idempotent: idem, IdempotencyKey: key})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
