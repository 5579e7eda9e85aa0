package cmd

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/brellium/brellium/emulator"
	"github.com/brellium/brellium/output"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// clock is a fake clock shared by the engine and the emulator: every sleep passes at once and
// moves the emulator's time too.
type clock struct {
	mu  sync.Mutex
	now time.Time
	// onSleep, when set, runs after each sleep with the time slept (outside the lock).
	onSleep func(time.Duration)
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	hook := c.onSleep
	c.mu.Unlock()
	if hook != nil {
		hook(d)
	}
	return nil
}

type harness struct {
	t     *testing.T
	em    *emulator.Server
	srv   *httptest.Server
	clock *clock
	env   map[string]string
	tty   bool
	color string
	// stdin is what the next run reads on standard input.
	stdin string
	// transport, when set, replaces the runs' HTTP transport.
	transport http.RoundTripper
}

func newHarness(t *testing.T, cfg emulator.Config) *harness {
	t.Helper()
	c := &clock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	cfg.Now, cfg.Seed = c.Now, 1
	if cfg.Audits == 0 {
		cfg.Audits = 100
	}
	em := emulator.New(cfg)
	srv := httptest.NewServer(em)
	t.Cleanup(srv.Close)
	return &harness{t: t, em: em, srv: srv, clock: c,
		env: map[string]string{"BRELLIUM_ACCESS_TOKEN": "tok-secret-123", "BRELLIUM_BASE_URL": srv.URL}}
}

type result struct {
	code        int
	out, errOut string
}

// runCtx runs argv, with --limiter off for the commands that pace themselves.
func (h *harness) runCtx(ctx context.Context, args ...string) result {
	h.t.Helper()
	switch args[0] {
	case "get", "head", "delete", "post", "put", "patch", "request", "batch":
		args = append(args, "--limiter", "off")
	}
	return h.runFull(ctx, args)
}

// runArgs runs argv as given, without the harness's --limiter off.
func (h *harness) runArgs(args []string) result {
	h.t.Helper()
	return h.runFull(context.Background(), args)
}

func (h *harness) runFull(ctx context.Context, args []string) result {
	h.t.Helper()
	ios, in, out, errOut := output.Test()
	in.WriteString(h.stdin)
	ios.SetTTY(h.tty, h.tty)
	f := &Factory{IOStreams: ios, Getenv: func(k string) string { return h.env[k] }, Clock: h.clock,
		Rand: func() float64 { return 0.5 }, Transport: h.transport}
	code := Run(ctx, f, args)
	return result{code: code, out: out.String(), errOut: errOut.String()}
}

func (h *harness) run(args ...string) result { return h.runCtx(context.Background(), args...) }

func TestExitCodesEndToEnd(t *testing.T) {
	sample := "/v2/audits/" + emulator.SampleAuditID
	cases := []struct {
		name   string
		faults []emulator.Fault
		env    map[string]string
		args   []string
		code   int
		stderr string
	}{
		{name: "ok", args: []string{"get", sample}, code: 0},
		{name: "invalid JSON body is usage", args: []string{"post", "/v2/users", "-d", "{"}, code: 2, stderr: "invalid JSON body"},
		{name: "query too long is usage", args: []string{"get", "/v2/audits?q=" + strings.Repeat("x", 2049)}, code: 2, stderr: "over the API's limit of 2048"},
		{name: "foreign origin is usage", args: []string{"get", "https://elsewhere.example/v2/audits"}, code: 2, stderr: "origin is not the base URL's"},
		{name: "credentials over plain http are usage", env: map[string]string{"BRELLIUM_BASE_URL": "http://api.example.com"},
			args: []string{"get", sample}, code: 2, stderr: "plain http"},
		{name: "404 is an API error", args: []string{"get", "/v2/audits/missing"}, code: 3, stderr: "AUDIT_NOT_FOUND"},
		{name: "lasting 503 is exhausted", faults: []emulator.Fault{{Path: sample, Status: 503, Times: 10}},
			args: []string{"get", sample, "--retry", "2"}, code: 4, stderr: "gave up after 3 attempts"},
		{name: "Retry-After past the deadline is exhausted at once",
			faults: []emulator.Fault{{Path: sample, Status: 429, Code: "RATE_LIMITED", Headers: map[string]string{"Retry-After": "30"}}},
			args:   []string{"get", sample, "--max-time", "12"}, code: 4, stderr: "Retry-After 30s exceeds the 12s left of --max-time"},
		{name: "bare 403 is blocked", faults: []emulator.Fault{{Path: sample, Status: 403, Bare: true}},
			args: []string{"get", sample}, code: 5, stderr: "blocked"},
		{name: "5xx on an unsafe write is unknown", faults: []emulator.Fault{{Path: "/v2/users", Status: 500, Execute: true}},
			args: []string{"post", "/v2/users", "-d", `{"email":"u@example.com"}`}, code: 6, stderr: "may or may not have run"},
		{name: "no token is an auth error", env: map[string]string{"BRELLIUM_ACCESS_TOKEN": ""},
			args: []string{"get", sample}, code: 7, stderr: "no credentials"},
		{name: "401 with a static token is an auth error", faults: []emulator.Fault{{Path: sample, Status: 401, Code: "UNAUTHORIZED"}},
			args: []string{"get", sample}, code: 7, stderr: "BRELLIUM_ACCESS_TOKEN was refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, emulator.Config{})
			for k, v := range c.env {
				h.env[k] = v
			}
			h.em.Script(c.faults...)
			r := h.run(c.args...)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d\nstderr:\n%s", r.code, c.code, r.errOut)
			}
			if !strings.Contains(r.errOut, c.stderr) {
				t.Errorf("stderr does not say %q:\n%s", c.stderr, r.errOut)
			}
		})
	}
}

func TestUnsafeWriteRunsOnceAndExitsSix(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	h.em.Script(emulator.Fault{Path: "/v2/email_recipients", Drop: true, Execute: true})
	r := h.run("post", "/v2/email_recipients", "-d", `{"email":"r@example.com"}`)
	if r.code != 6 {
		t.Fatalf("exit %d, want 6:\n%s", r.code, r.errOut)
	}
	if s := h.em.Stats(); s.Writes["POST /v2/email_recipients"] != 1 || s.Requests != 1 {
		t.Fatalf("the unsafe write was sent %d times (requests %d), want once", s.Writes["POST /v2/email_recipients"], s.Requests)
	}
}

func TestIdempotentEmailRecipientConvergesAndPrintsTheRecipient(t *testing.T) {
	h := newHarness(t, emulator.Config{ListLag: 2 * time.Second})
	h.em.Script(emulator.Fault{Path: "/v2/email_recipients", Method: "POST", Drop: true, Execute: true})
	r := h.run("post", "/v2/email_recipients", "-d", `{"email":"r@example.com"}`, "--idempotent")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", r.code, r.errOut)
	}
	var rcp struct {
		Email string `json:"email"`
		ID    string `json:"email_recipient_id"`
	}
	if err := json.Unmarshal([]byte(r.out), &rcp); err != nil || rcp.Email != "r@example.com" || rcp.ID == "" {
		t.Fatalf("stdout is not the recipient: %q", r.out)
	}
	if s := h.em.Stats(); s.Created["email_recipients"] != 1 {
		t.Errorf("recipients created = %d", s.Created["email_recipients"])
	}
}

func TestInviteFailedIsRepeatedAndUserCreatedOnce(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	h.em.Script(emulator.Fault{Path: "/v2/users", Status: 502, Code: "INVITE_FAILED"})
	r := h.run("post", "/v2/users", "-d", `{"email":"new@example.com"}`)
	if r.code != 0 || !strings.Contains(r.out, `"status":"invited"`) {
		t.Fatalf("exit %d stdout %q:\n%s", r.code, r.out, r.errOut)
	}
	if s := h.em.Stats(); s.Created["users"] != 1 {
		t.Errorf("users created = %d, want 1", s.Created["users"])
	}
}

func TestInterruptExits130(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&Interrupted{Signal: os.Interrupt})
	r := h.runCtx(ctx, "get", "/v2/audits/"+emulator.SampleAuditID)
	if r.code != 130 {
		t.Fatalf("exit %d, want 130:\n%s", r.code, r.errOut)
	}
	ctx, cancel = context.WithCancelCause(context.Background())
	cancel(&Interrupted{Signal: syscall.SIGTERM})
	if r := h.runCtx(ctx, "get", "/v2/audits/"+emulator.SampleAuditID, "--log-format", "json"); r.code != 143 ||
		!strings.Contains(r.errOut, `"outcome":"interrupted","exit_code":143`) {
		t.Fatalf("SIGTERM: exit %d:\n%s", r.code, r.errOut)
	}
}

func TestTokenNeverPrinted(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	h.em.Script(emulator.Fault{Path: "/v2/audits/missing", Status: 503, Times: 1})
	for _, format := range []string{"text", "json"} {
		r := h.run("get", "/v2/audits/missing", "-v", "-i", "--log-format", format)
		all := r.out + r.errOut
		if strings.Contains(all, "tok-secret-123") {
			t.Fatalf("%s: the token was printed:\n%s", format, all)
		}
		if !strings.Contains(r.errOut, "Bearer ***") {
			t.Errorf("%s: -v does not show the redacted Authorization:\n%s", format, r.errOut)
		}
	}
}

func TestJSONLogEvents(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	sample := "/v2/audits/" + emulator.SampleAuditID
	h.em.Script(emulator.Fault{Path: sample, Status: 429, Code: "RATE_LIMITED", Headers: map[string]string{"Retry-After": "1"}})
	r := h.run("get", sample, "--log-format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.errOut)
	}
	lines := strings.Split(strings.TrimSpace(r.errOut), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 2 attempt events and a done event, got:\n%s", r.errOut)
	}
	var first, last map[string]any
	_ = json.Unmarshal([]byte(lines[0]), &first)
	_ = json.Unmarshal([]byte(lines[2]), &last)
	if first["event"] != "attempt" || first["status"] != 429.0 || first["code"] != "RATE_LIMITED" || first["decision"] != "retry" ||
		first["wait_ms"] != 1250.0 || first["attempt"] != 1.0 || first["request_id"] == "" {
		t.Errorf("first event = %v", first)
	}
	if last["event"] != "done" || last["outcome"] != "ok" || last["exit_code"] != 0.0 || last["attempts"] != 2.0 {
		t.Errorf("done event = %v", last)
	}
	if strings.Contains(r.errOut, "Missing Signature") {
		t.Error("a response body went into the event log")
	}
}

type pipeWriter struct{}

func (pipeWriter) Write([]byte) (int, error) { return 0, syscall.EPIPE }

func TestBrokenPipeIsNotAnError(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	ios, _, _, errOut := output.Test()
	ios.Out = pipeWriter{}
	f := &Factory{IOStreams: ios, Getenv: func(k string) string { return h.env[k] }, Clock: h.clock}
	if code := Run(context.Background(), f, []string{"get", "/v2/audits/" + emulator.SampleAuditID, "--limiter", "off"}); code != 0 {
		t.Fatalf("exit %d on a broken pipe:\n%s", code, errOut)
	}
}

// A batch whose reader stopped reading (| head) stops sending and exits 0, after its summary.
func TestBatchStopsWhenItsReaderStops(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	ios, in, _, errOut := output.Test()
	in.WriteString(strings.Repeat("GET /v2/audits/"+emulator.SampleAuditID+"\n", 300))
	ios.Out = pipeWriter{}
	f := &Factory{IOStreams: ios, Getenv: func(k string) string { return h.env[k] }, Clock: h.clock}
	code := Run(context.Background(), f, []string{"batch", "-", "--limiter", "off", "--concurrency", "2"})
	if sent := h.em.Stats().Requests; code != 0 || sent > 20 || !strings.Contains(errOut.String(), "batch: ") {
		t.Fatalf("exit %d after %d requests of 300:\n%s", code, sent, errOut)
	}
}

func TestOutputFileIsOpenedBeforeSending(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	r := h.run("post", "/v2/users", "-d", `{"email":"x@example.com"}`, "-o", filepath.Join(t.TempDir(), "no", "such", "dir", "out.json"))
	if r.code != 2 {
		t.Fatalf("exit %d, want 2:\n%s", r.code, r.errOut)
	}
	if s := h.em.Stats(); s.Requests != 0 {
		t.Fatalf("%d requests were sent before -o failed", s.Requests)
	}
	path := filepath.Join(t.TempDir(), "out.json")
	if r := h.run("get", "/v2/audits/"+emulator.SampleAuditID, "-o", path, "-i"); r.code != 0 || r.out != "" {
		t.Fatalf("exit %d stdout %q", r.code, r.out)
	}
	b, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(b), "HTTP/1.1 200 OK\r\n") || !strings.Contains(string(b), `"audit_id"`) {
		t.Fatalf("-o -i file = %q", b)
	}
}

func TestRedirectsDropAuthorizationOnAnotherOrigin(t *testing.T) {
	var gotAuth []string
	var mu sync.Mutex
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"moved":true}`))
	}))
	defer other.Close()
	origin := httptest.NewServer(http.RedirectHandler(other.URL+"/landing", http.StatusFound))
	defer origin.Close()
	h := newHarness(t, emulator.Config{})
	h.env["BRELLIUM_BASE_URL"] = origin.URL
	if r := h.run("get", "/v2/x"); r.code != 3 || !strings.Contains(r.errOut, "use -L") {
		t.Fatalf("without -L: exit %d:\n%s", r.code, r.errOut)
	}
	if r := h.run("get", "/v2/x", "-L"); r.code != 0 || r.out != `{"moved":true}` {
		t.Fatalf("with -L: exit %d out %q:\n%s", r.code, r.out, r.errOut)
	}
	if len(gotAuth) != 1 || gotAuth[0] != "" {
		t.Fatalf("the other origin got Authorization %q", gotAuth)
	}
}

// normalize replaces what changes from run to run (dates, ports) so output can be golden.
func normalize(s, url string) string {
	s = strings.ReplaceAll(s, url, "http://EMULATOR")
	s = regexp.MustCompile(`Date: [^\r\n]*`).ReplaceAllString(s, "Date: DATE")
	s = strings.ReplaceAll(s, "\r\n", "⏎\n")
	return s
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		_ = os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd -update to write it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (go test ./cmd -update rewrites it):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestGoldenOutput(t *testing.T) {
	sample := "/v2/audits/" + emulator.SampleAuditID
	cases := []struct {
		name  string
		tty   bool
		color string
		fault *emulator.Fault
		args  []string
	}{
		{name: "attempt-lines", fault: &emulator.Fault{Path: sample, Status: 429, Code: "RATE_LIMITED", Headers: map[string]string{"Retry-After": "1"}},
			args: []string{"get", sample}},
		{name: "attempt-lines-color", color: "always", fault: &emulator.Fault{Path: sample, Status: 503, Times: 2},
			args: []string{"get", sample}},
		{name: "api-error", args: []string{"get", "/v2/audits/missing"}},
		{name: "include", args: []string{"get", sample, "-i", "-s"}},
		{name: "verbose", args: []string{"get", sample, "-v"}},
		{name: "verbose-color", color: "always", args: []string{"get", sample, "-v"}},
		{name: "terminal-body", tty: true, color: "never", args: []string{"get", sample, "-s"}},
		{name: "explain-users", args: []string{"explain", "POST", "/v2/users"}},
		{name: "explain-documents", args: []string{"explain", "POST", "/v2/documents", "-d", `{"documents":[{"external_id":"e1"}]}`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, emulator.Config{})
			h.tty = c.tty
			if c.fault != nil {
				h.em.Script(*c.fault)
			}
			args := c.args
			if c.color != "" {
				args = append(args, "--color", c.color)
			}
			r := h.run(args...)
			got := "exit " + itoa(r.code) + "\n--- stdout\n" + r.out + "\n--- stderr\n" + r.errOut
			golden(t, c.name, normalize(got, h.srv.URL))
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
