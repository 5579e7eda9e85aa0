package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brellium/brellium/emulator"
	"github.com/brellium/brellium/internal/retrytest"
	"github.com/brellium/brellium/retry/transport"
)

// methodClass is one kind of call in the fault matrix.
type methodClass struct {
	name string
	safe bool
	args []string
	path string
	// ran counts how many times the call took effect on the emulator; once says that it must
	// never be more than one (a safe write may repeat: it leaves the same state).
	ran  func(*emulator.Server) int
	once bool
}

var matrixClasses = []methodClass{
	{name: "GET", safe: true, args: []string{"get", "/v2/audits/" + emulator.SampleAuditID},
		path: "/v2/audits/" + emulator.SampleAuditID, ran: func(*emulator.Server) int { return 0 }},
	{name: "safe write", safe: true, args: []string{"patch", "/v2/audits/" + emulator.SampleAuditID, "-d", `{"flags":["A"]}`},
		path: "/v2/audits/" + emulator.SampleAuditID, ran: func(s *emulator.Server) int { return s.Stats().Writes["PATCH /v2/audits/{id}"] }},
	{name: "unsafe write", args: []string{"post", "/v2/users", "-d", `{"email":"m@example.com"}`},
		path: "/v2/users", ran: func(s *emulator.Server) int { return s.Stats().Created["users"] }, once: true},
	{name: "docs+external_id", safe: true, args: []string{"post", "/v2/documents", "-d", `{"documents":[{"external_id":"e1","file_name":"f.pdf"}]}`},
		path: "/v2/documents", ran: func(s *emulator.Server) int { return s.CountDocuments("f.pdf") }, once: true},
	{name: "docs, no external_id", args: []string{"post", "/v2/documents", "-d", `{"documents":[{"file_name":"f.pdf"}]}`},
		path: "/v2/documents", ran: func(s *emulator.Server) int { return s.CountDocuments("f.pdf") }, once: true},
}

// outcome is what a cell expects: attempts and exit code. attempts 0 accepts any count.
type outcome struct{ attempts, exit int }

type matrixFault struct {
	name string
	// fault scripts the emulator (with the class's path filled in) ...
	fault *emulator.Fault
	// ... or raw serves the call from a listener of the test's own, returning the base URL.
	raw func(t *testing.T) string
	// transport, when set, is the runs' transport.
	transport    func() http.RoundTripper
	safe, unsafe []outcome // acceptable outcomes
}

func one(attempts, exit int) []outcome { return []outcome{{attempts, exit}} }

func matrixFaults(h *harness) []matrixFault {
	date := h.clock.Now().Add(2 * time.Second).Format(http.TimeFormat)
	ef := func(status int, code string, headers ...string) *emulator.Fault {
		f := &emulator.Fault{Status: status, Code: code, Times: 100, Execute: status >= 500, Headers: map[string]string{}}
		for i := 0; i+1 < len(headers); i += 2 {
			f.Headers[headers[i]] = headers[i+1]
		}
		return f
	}
	bareF := func(status int) *emulator.Fault { return &emulator.Fault{Status: status, Bare: true, Times: 100} }
	return []matrixFault{
		{name: "429 Retry-After 1", fault: ef(429, "RATE_LIMITED", "Retry-After", "1"), safe: one(3, 4), unsafe: one(3, 4)},
		{name: "429 without Retry-After", fault: ef(429, "RATE_LIMITED"), safe: one(3, 4), unsafe: one(3, 4)},
		{name: "429 Retry-After HTTP-date", fault: ef(429, "RATE_LIMITED", "Retry-After", date), safe: one(3, 4), unsafe: one(3, 4)},
		{name: "429 Retry-After huge", fault: ef(429, "RATE_LIMITED", "Retry-After", "99999999999"), safe: one(1, 4), unsafe: one(1, 4)},
		{name: "429 Retry-After negative", fault: ef(429, "RATE_LIMITED", "Retry-After", "-3"), safe: one(3, 4), unsafe: one(3, 4)},
		{name: "429 Retry-After garbage", fault: ef(429, "RATE_LIMITED", "Retry-After", "soon"), safe: one(3, 4), unsafe: one(3, 4)},
		{name: "408", fault: ef(408, "REQUEST_TIMEOUT"), safe: one(3, 4), unsafe: one(3, 4)},
		{name: "500", fault: ef(500, "INTERNAL"), safe: one(3, 4), unsafe: one(1, 6)},
		{name: "502", fault: ef(502, "BAD_GATEWAY"), safe: one(3, 4), unsafe: one(1, 6)},
		{name: "503", fault: ef(503, "UNAVAILABLE"), safe: one(3, 4), unsafe: one(1, 6)},
		{name: "504", fault: ef(504, "GATEWAY_TIMEOUT"), safe: one(3, 4), unsafe: one(1, 6)},
		{name: "503 Retry-After 1", fault: ef(503, "UNAVAILABLE", "Retry-After", "1"), safe: one(3, 4), unsafe: one(1, 6)},
		{name: "501", fault: ef(501, "NOT_IMPLEMENTED"), safe: one(1, 3), unsafe: one(1, 3)},
		{name: "bare 403", fault: bareF(403), safe: one(1, 5), unsafe: one(1, 5)},
		{name: "bare 413", fault: bareF(413), safe: one(1, 3), unsafe: one(1, 3)},
		{name: "bare 414", fault: bareF(414), safe: one(1, 3), unsafe: one(1, 3)},
		{name: "bare 431", fault: bareF(431), safe: one(1, 3), unsafe: one(1, 3)},
		{name: "JSON 422", fault: ef(422, "INVALID"), safe: one(1, 3), unsafe: one(1, 3)},
		{name: "401", fault: ef(401, "UNAUTHORIZED"), safe: one(1, 7), unsafe: one(1, 7)},
		{name: "connection refused", raw: refusedServer, safe: one(3, 4), unsafe: one(3, 4)},
		// The transport hands the connection over only once the server's reset has arrived, so
		// no byte of any attempt can leave: even an unsafe write is repeated.
		{name: "reset before the request is written", raw: rawServer(false, rstClose), transport: afterReset,
			safe: one(3, 4), unsafe: one(3, 4)},
		{name: "reset after the request is written", raw: rawServer(true, rstClose), safe: one(3, 4), unsafe: one(1, 6)},
		{name: "accepts, never answers", raw: rawServer(true, hang), safe: one(3, 4), unsafe: one(1, 6)},
		{name: "slow body", raw: rawServer(true, slowBody), safe: one(3, 4), unsafe: one(1, 6)},
		{name: "truncated body", raw: rawServer(true, truncatedBody), safe: one(3, 4), unsafe: one(1, 6)},
		{name: "non-JSON body, JSON content type (502)", raw: htmlServer, safe: one(3, 4), unsafe: one(1, 6)},
		{name: "redirect to another origin", raw: redirectServer, safe: one(1, 3), unsafe: one(1, 3)},
	}
}

func TestFaultMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("the full matrix")
	}
	probe := newHarness(t, emulator.Config{})
	faults := matrixFaults(probe)
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-40s", "fault \\ call")
	for _, c := range matrixClasses {
		fmt.Fprintf(&table, " | %-20s", c.name)
	}
	table.WriteString("\n")
	for _, f := range faults {
		fmt.Fprintf(&table, "%-40s", f.name)
		for _, c := range matrixClasses {
			cell := runCell(t, f, c)
			fmt.Fprintf(&table, " | %-20s", cell)
		}
		table.WriteString("\n")
	}
	t.Log("attempts × exit code (ran N: times the write took effect)" + table.String())
}

func runCell(t *testing.T, f matrixFault, c methodClass) string {
	t.Helper()
	h := newHarness(t, emulator.Config{})
	if f.fault != nil {
		fault := *f.fault
		fault.Path = c.path
		h.em.Script(fault)
	} else {
		h.env["BRELLIUM_BASE_URL"] = f.raw(t)
	}
	if f.transport != nil {
		h.transport = f.transport()
	}
	args := append(append([]string{}, c.args...), "--retry", "2", "--timeout", "300ms", "--max-time", "60", "--log-format", "json")
	r := h.run(args...)
	got := outcome{attempts: doneAttempts(t, r.errOut), exit: r.code}
	want := f.safe
	if !c.safe {
		want = f.unsafe
	}
	ok := false
	for _, w := range want {
		ok = ok || (w.exit == got.exit && (w.attempts == 0 || w.attempts == got.attempts))
	}
	ran := 0
	if f.fault != nil {
		ran = c.ran(h.em)
	}
	if !ok {
		t.Errorf("%s × %s: %d attempts, exit %d; want one of %v\n%s", f.name, c.name, got.attempts, got.exit, want, r.errOut)
	}
	if c.once && ran > 1 {
		t.Errorf("%s × %s: the write took effect %d times", f.name, c.name, ran)
	}
	cell := fmt.Sprintf("%d× exit %d", got.attempts, got.exit)
	if ran > 0 {
		cell += fmt.Sprintf(" ran %d", ran)
	}
	return cell
}

func doneAttempts(t *testing.T, log string) int {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(log), "\n")
	var done struct {
		Event    string `json:"event"`
		Attempts int    `json:"attempts"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &done); err != nil || done.Event != "done" {
		t.Fatalf("the log does not end with a done event:\n%s", log)
	}
	return done.Attempts
}

func refusedServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// readRequest reads one HTTP request from c, body included.
func readRequest(c net.Conn) bool {
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, req.Body)
	return true
}

func rawServer(readFirst bool, then func(net.Conn)) func(*testing.T) string {
	return func(t *testing.T) string {
		return retrytest.Listen(t, func(c net.Conn) {
			if readFirst && !readRequest(c) {
				c.Close()
				return
			}
			then(c)
		})
	}
}

func rstClose(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

func hang(c net.Conn) { time.Sleep(2 * time.Second); c.Close() }

func slowBody(c net.Conn) {
	_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"a\":")
	time.Sleep(2 * time.Second)
	c.Close()
}

func truncatedBody(c net.Conn) {
	_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":")
	c.Close()
}

func htmlServer(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len("<html>bad gateway</html>")))
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "<html>bad gateway</html>")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func redirectServer(t *testing.T) string {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the redirect was followed to another origin (Authorization %q)", r.Header.Get("Authorization"))
	}))
	t.Cleanup(other.Close)
	srv := httptest.NewServer(http.RedirectHandler(other.URL+"/elsewhere", http.StatusFound))
	t.Cleanup(srv.Close)
	return srv.URL
}

// afterReset is the counting transport with a dialer that returns a connection only after the
// server has reset it: every write on it then fails before a byte leaves.
func afterReset() http.RoundTripper {
	t := transport.NewTransport()
	dial := t.DialContext
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			c.Close()
			return nil, fmt.Errorf("the test server did not reset the connection: %v", err)
		}
		_ = c.SetReadDeadline(time.Time{})
		return c, nil
	}
	return t
}
