package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	rt "github.com/brellium/brellium/internal/retrytest"
	"github.com/brellium/brellium/request"
	"github.com/brellium/brellium/retry"
	"github.com/brellium/brellium/retry/transport"
)

// sender answers by path: each path's steps in turn (the last one again once they run out), and
// 200 {} for a path without steps. It records what it was sent.
type sender struct {
	mu    sync.Mutex
	steps map[string][]rt.Step
	sent  []string
	// before, when set, runs before each answer.
	before func(ctx context.Context, o *retry.Outgoing)
}

func (s *sender) Send(ctx context.Context, o *retry.Outgoing) (*retry.Response, bool, error) {
	s.mu.Lock()
	path := o.Spec.URL.Path
	s.sent = append(s.sent, o.Spec.Method+" "+path)
	steps := s.steps[path]
	st := rt.Answer(200, `{"path":"`+path+`"}`)
	if len(steps) > 0 {
		st = steps[0]
		if len(steps) > 1 {
			s.steps[path] = steps[1:]
		}
	}
	before := s.before
	s.mu.Unlock()
	if before != nil {
		before(ctx, o)
	}
	return (&rt.FakeSender{Steps: []rt.Step{st}}).Send(ctx, o)
}

func (s *sender) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]string(nil), s.sent...)
	sort.Strings(out)
	return out
}

type line struct {
	Line      int             `json:"line"`
	ID        string          `json:"id"`
	Method    string          `json:"method"`
	Path      string          `json:"path"`
	Status    int             `json:"status"`
	Outcome   string          `json:"outcome"`
	Attempts  int             `json:"attempts"`
	RequestID string          `json:"request_id"`
	Body      json.RawMessage `json:"body"`
	BodyFile  string          `json:"body_file"`
	Error     *resultError    `json:"error"`
}

// runBatch runs lines through a fake sender and returns the result lines by number.
func runBatch(t *testing.T, ctx context.Context, s *sender, tune func(*Config), lines ...string) (map[int]line, []int, *Counts, error) {
	t.Helper()
	base, _ := url.Parse("https://api.brellium.test")
	var out bytes.Buffer
	cfg := Config{
		Input: NewInput("-", strings.NewReader(strings.Join(lines, "\n")+"\n")), Out: &out,
		Concurrency: 2, Base: base, Drain: time.Second,
		Engine: &retry.Engine{Sender: s, Clock: rt.NewFakeClock(), Rand: rt.FixedRand},
		Policy: retry.DefaultPolicy(), Counts: NewCounts(-1),
	}
	if tune != nil {
		tune(&cfg)
	}
	err := Run(ctx, cfg)
	got := map[int]line{}
	var order []int
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if l == "" {
			continue
		}
		var r line
		if jerr := json.Unmarshal([]byte(l), &r); jerr != nil {
			t.Fatalf("a result line is not JSON: %q", l)
		}
		if _, dup := got[r.Line]; dup {
			t.Fatalf("line %d reported twice", r.Line)
		}
		got[r.Line] = r
		order = append(order, r.Line)
	}
	return got, order, cfg.Counts, err
}

func TestPipelineGivesOneResultPerRequestLine(t *testing.T) {
	s := &sender{steps: map[string][]rt.Step{
		"/v2/audits/missing": {rt.APIErr(404, "AUDIT_NOT_FOUND")},
		"/v2/audits/flaky":   {rt.APIErr(503, "UNAVAILABLE"), rt.Answer(200, `{"ok":true}`)},
	}}
	got, _, counts, err := runBatch(t, context.Background(), s, nil,
		"# comment", "", "GET /v2/audits/a",
		`{"id":"x","method":"patch","path":"/v2/audits/b","body":{"flags":[]},"headers":{"X-A":"1"}}`,
		"GET /v2/audits/missing", "nonsense", "GET /v2/audits/flaky", `POST /v2/users {"email":`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{3: "ok", 4: "ok", 5: "api_error", 6: "invalid", 7: "ok", 8: "invalid"}
	if len(got) != len(want) {
		t.Fatalf("%d result lines, want %d: %+v", len(got), len(want), got)
	}
	for n, o := range want {
		if got[n].Outcome != o {
			t.Errorf("line %d: %+v, want %s", n, got[n], o)
		}
	}
	if got[4].ID != "x" || got[4].Method != "PATCH" || string(got[4].Body) != `{"path":"/v2/audits/b"}` || got[7].Attempts != 2 {
		t.Errorf("fields: %+v %+v", got[4], got[7])
	}
	if e := got[5].Error; e == nil || e.Code != "AUDIT_NOT_FOUND" || e.RequestID != "req-AUDIT_NOT_FOUND" {
		t.Errorf("line 5 error: %+v", e)
	}
	if e := got[6].Error; e == nil || !strings.Contains(e.Reason, "line 6: want METHOD PATH") {
		t.Errorf("line 6 error: %+v", e)
	}
	if r := s.requests(); fmt.Sprint(r) != "[GET /v2/audits/a GET /v2/audits/flaky GET /v2/audits/flaky GET /v2/audits/missing PATCH /v2/audits/b]" {
		t.Errorf("requests: %v (invalid lines send nothing)", r)
	}
	tally := counts.Tally()
	if tally.Done != 6 || tally.Requests != 5 || tally.Outcomes["ok"] != 3 || tally.Outcomes["invalid"] != 2 {
		t.Errorf("tally %+v", tally)
	}
	var failed *Failed
	if err := counts.Err(); !errors.As(err, &failed) || failed.Outcome != "api_error" || failed.Lines != 1 {
		t.Errorf("batch outcome %v, want 1 line api_error (before invalid)", err)
	}
}

// A line's headers and idempotent mark add to the command's; --idempotency-key auto gives each
// line a key of its own, the same on a rerun of the same input.
func TestLineCallsCarryTheCommandsFlagsAndAKeyOfTheirOwn(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]*retry.Outgoing{}
	s := &sender{before: func(_ context.Context, o *retry.Outgoing) {
		mu.Lock()
		seen[o.Spec.URL.Path] = o
		mu.Unlock()
	}}
	tune := func(c *Config) { c.Headers, c.AutoKey = []string{"X-Cmd: c"}, true }
	lines := []string{`{"method":"PUT","path":"/v1/a","body":{},"headers":{"X-Line":"l"},"idempotent":true}`, "PUT /v1/b {}"}
	_, _, _, _ = runBatch(t, context.Background(), s, tune, lines...)
	a, b := seen["/v1/a"], seen["/v1/b"]
	if a.Header.Get("X-Cmd") != "c" || a.Header.Get("X-Line") != "l" || b.Header.Get("X-Cmd") != "c" {
		t.Errorf("headers: %v %v", a.Header, b.Header)
	}
	ka, kb := a.Header.Get("Idempotency-Key"), b.Header.Get("Idempotency-Key")
	if ka == "" || kb == "" || ka == kb || !a.Spec.Class().Safe || !b.Spec.Class().Safe {
		t.Fatalf("keys %q %q; safe %v %v", ka, kb, a.Spec.Class().Safe, b.Spec.Class().Safe)
	}
	_, _, _, _ = runBatch(t, context.Background(), s, tune, lines...)
	if seen["/v1/a"].Header.Get("Idempotency-Key") != ka {
		t.Error("a rerun of the same input sent another key")
	}
}

func TestShardTakesItsLines(t *testing.T) {
	var lines []string
	for i := 1; i <= 9; i++ {
		lines = append(lines, fmt.Sprintf("GET /v2/audits/%d", i))
	}
	got, _, _, _ := runBatch(t, context.Background(), &sender{}, func(c *Config) { c.Shard = Shard{K: 2, N: 3} }, lines...)
	if len(got) != 3 || got[1].Outcome != "ok" || got[4].Outcome != "ok" || got[7].Outcome != "ok" {
		t.Fatalf("shard 2/3 of 9 lines: %v", got)
	}
}

// The journal decides which lines are sent: done lines are skipped, lines that may have run are
// unknown and never sent, and an unsafe line's start is on disk before it is sent.
func TestJournalDecidesWhatIsSent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.journal")
	lines := []string{"GET /v2/audits/a", `POST /v2/users {"email":"u@example.com"}`, "GET /v2/audits/c", `POST /v2/users/x {"email":"v@example.com"}`}
	j, err := OpenJournal(path, "-", "")
	if err != nil {
		t.Fatal(err)
	}
	// An earlier run: line 1 done, line 2 started and never finished, line 3 failed.
	h := func(n int) uint64 { return hashOf(lines[n-1]) }
	_ = j.End(1, h(1), "ok", false)
	_ = j.Start(2, h(2))
	_ = j.End(3, h(3), "exhausted", false)
	_ = j.Close()
	if j, err = OpenJournal(path, "-", ""); err != nil {
		t.Fatal(err)
	}
	var starts []string
	s := &sender{before: func(_ context.Context, o *retry.Outgoing) {
		b, _ := os.ReadFile(path)
		starts = append(starts, fmt.Sprintf("%s %s: %d starts", o.Spec.Method, o.Spec.URL.Path, strings.Count(string(b), `"s":"start"`)))
	}}
	got, _, counts, err := runBatch(t, context.Background(), s, func(c *Config) { c.Journal, c.Concurrency = j, 1 }, lines...)
	if err != nil {
		t.Fatal(err)
	}
	_ = j.Close()
	if got[1].Outcome != "skipped" || got[2].Outcome != "unknown_outcome" || got[3].Outcome != "ok" || got[4].Outcome != "ok" {
		t.Fatalf("outcomes: %+v", got)
	}
	if fmt.Sprint(starts) != "[GET /v2/audits/c: 1 starts POST /v2/users/x: 2 starts]" {
		t.Fatalf("sent, with the starts on disk at the time: %v", starts)
	}
	if err := counts.Err(); err == nil || !strings.Contains(err.Error(), "1 line ended unknown_outcome") {
		t.Fatalf("batch outcome: %v", err)
	}
	// What this run did is journalled for the next.
	j, _ = OpenJournal(path, "-", "")
	defer j.Close()
	for n, want := range map[int]Prior{1: Done, 2: Unknown, 3: Done, 4: Done} {
		if p, _ := j.Prior(n, h(n)); p != want {
			t.Errorf("line %d: prior %v, want %v", n, p, want)
		}
	}
}

func hashOf(text string) uint64 { return request.LineHash(text) }

// A bare 403 stops every worker: the lines not sent yet are skipped, and nothing more is read.
func TestBlockStopsTheBatch(t *testing.T) {
	var lines []string
	for i := 1; i <= 30; i++ {
		lines = append(lines, fmt.Sprintf("GET /v2/audits/%d", i))
	}
	s := &sender{steps: map[string][]rt.Step{"/v2/audits/3": {rt.Answer(403, "Forbidden")}}}
	got, _, counts, err := runBatch(t, context.Background(), s, func(c *Config) { c.Concurrency = 1 }, lines...)
	if err != nil {
		t.Fatal(err)
	}
	if got[3].Outcome != "blocked" {
		t.Fatalf("line 3: %+v", got[3])
	}
	for n, l := range got {
		if n > 3 && l.Outcome != "skipped" {
			t.Errorf("line %d after the block: %+v", n, l)
		}
		if l.Outcome == "skipped" && (l.Error == nil || !strings.Contains(l.Error.Reason, "blocked")) {
			t.Errorf("line %d is skipped without saying why: %+v", n, l)
		}
	}
	if n := len(s.requests()); n != 3 {
		t.Errorf("%d requests, want 3: none after the block", n)
	}
	var failed *Failed
	if err := counts.Err(); !errors.As(err, &failed) || failed.Outcome != "blocked" {
		t.Errorf("batch outcome %v", err)
	}
}

// An interrupt stops taking lines; the calls in flight get the drain, then are called off: an
// unsafe one that was sent is unknown_outcome, a safe one skipped.
func TestInterruptDrainsThenCallsOff(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	inFlight := 0
	s := &sender{steps: map[string][]rt.Step{}}
	hold := rt.Func(func(ctx context.Context, o *retry.Outgoing) (*retry.Response, bool, error) {
		mu.Lock()
		inFlight++
		if inFlight == 2 {
			cancel()
		}
		mu.Unlock()
		<-ctx.Done() // never answers: called off at the end of the drain
		return nil, true, ctx.Err()
	})
	s.steps["/v2/users"] = []rt.Step{hold}
	s.steps["/v2/audits/slow"] = []rt.Step{hold}
	start := time.Now()
	got, _, _, err := runBatch(t, ctx, s, func(c *Config) { c.Drain = 50 * time.Millisecond },
		`POST /v2/users {"email":"i@example.com"}`, "GET /v2/audits/slow", "GET /v2/audits/never", "GET /v2/audits/never2")
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("the drain did not end the calls in flight")
	}
	if got[1].Outcome != "unknown_outcome" || !strings.Contains(got[1].Error.Reason, "interrupted after it was sent") {
		t.Errorf("the unsafe line in flight: %+v", got[1])
	}
	if got[2].Outcome != "skipped" {
		t.Errorf("the safe line in flight: %+v", got[2])
	}
	for _, r := range s.requests() {
		if strings.Contains(r, "never") {
			t.Errorf("%s was sent after the interrupt", r)
		}
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// A result file that cannot be written ends the batch with that error; a closed pipe ends it with
// ErrOutputClosed (the reader chose to stop). Either way no line is sent once a result could not
// be written: its result would be lost.
func TestWriteErrors(t *testing.T) {
	base, _ := url.Parse("https://api.brellium.test")
	input := strings.Repeat("GET /a\n", 500)
	for _, c := range []struct {
		err  error
		want string
	}{{errors.New("disk full"), "writing the results: disk full"}, {syscall.EPIPE, ErrOutputClosed.Error()}} {
		s := &sender{}
		counts := NewCounts(-1)
		cfg := Config{Input: NewInput("-", strings.NewReader(input)), Out: failWriter{c.err}, Concurrency: 2, Base: base,
			Engine: &retry.Engine{Sender: s, Clock: rt.NewFakeClock()}, Policy: retry.DefaultPolicy(), Counts: counts}
		err := Run(context.Background(), cfg)
		if err == nil || err.Error() != c.want {
			t.Errorf("write error %v: Run = %v, want %q", c.err, err, c.want)
		}
		if n := len(s.requests()); n > 20 {
			t.Errorf("write error %v: %d of 500 lines sent after the results could not be written", c.err, n)
		}
		if skipped := counts.Tally().Outcomes["skipped"]; skipped == 0 && counts.Tally().Done > int64(len(s.requests())) {
			t.Errorf("write error %v: lines taken but not sent are not skipped: %+v", c.err, counts.Tally())
		}
	}
}

// An input that cannot be read ends the batch with that error.
func TestReadErrorEndsTheBatch(t *testing.T) {
	base, _ := url.Parse("https://api.brellium.test")
	r := io.MultiReader(strings.NewReader("GET /a\n"), errReader{})
	cfg := Config{Input: NewInput("-", r), Out: io.Discard, Concurrency: 1, Base: base,
		Engine: &retry.Engine{Sender: &sender{}, Clock: rt.NewFakeClock()}, Policy: retry.DefaultPolicy()}
	if err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "reading the batch input: broken disk") {
		t.Fatalf("Run = %v", err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("broken disk") }

func TestOutcomePrecedence(t *testing.T) {
	cases := []struct {
		outcomes []string
		want     string
	}{
		{[]string{"ok", "skipped"}, ""},
		{[]string{"invalid", "api_error"}, "api_error"},
		{[]string{"api_error", "exhausted"}, "exhausted"},
		{[]string{"exhausted", "auth_error"}, "auth_error"},
		{[]string{"auth_error", "unknown_outcome"}, "unknown_outcome"},
		{[]string{"unknown_outcome", "blocked"}, "blocked"},
		{[]string{"internal", "api_error"}, "api_error"},
		{[]string{"internal", "invalid"}, "internal"},
		{[]string{"invalid", "ok"}, "invalid"},
	}
	for _, c := range cases {
		counts := NewCounts(-1)
		for _, o := range c.outcomes {
			counts.add(o)
		}
		err := counts.Err()
		var failed *Failed
		got := ""
		if errors.As(err, &failed) {
			got = failed.Outcome
		}
		if got != c.want {
			t.Errorf("%v: outcome %q (%v), want %q", c.outcomes, got, err, c.want)
		}
	}
	if got := (&Failed{Outcome: "invalid", Lines: 2}).Error(); got != `2 invalid lines (see their "error" in the output)` {
		t.Errorf("%q", got)
	}
	if got := (&Failed{Outcome: "exhausted", Lines: 1}).Error(); got != "1 line ended exhausted" {
		t.Errorf("%q", got)
	}
}

func TestOpenInputCountsTheShardsRequestLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "in.txt")
	_ = os.WriteFile(p, []byte("# c\nGET /1\n\nGET /2\nGET /3\nGET /4\n"), 0o600)
	in, err := OpenInput(p, nil, Shard{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if in.Total != 4 || len(in.SHA256) != 64 || in.Name != p {
		t.Errorf("input %+v", in)
	}
	half, _ := OpenInput(p, nil, Shard{K: 1, N: 2})
	defer half.Close()
	if half.Total != 3 || half.SHA256 != in.SHA256 { // lines 2, 4 and 6
		t.Errorf("shard 1/2: %+v", half)
	}
	if _, err := OpenInput(filepath.Join(t.TempDir(), "missing"), nil, Shard{}); err == nil {
		t.Error("a missing input was opened")
	}
	stdin, _ := OpenInput("-", strings.NewReader("GET /x"), Shard{})
	if stdin.Total != -1 || stdin.SHA256 != "" || stdin.Name != "-" {
		t.Errorf("standard input: %+v", stdin)
	}
}

// The counts say how many attempts a 429 refused (a 503 is not one), and how many requests went.
func TestCountsCountRefusals(t *testing.T) {
	s := &sender{steps: map[string][]rt.Step{
		"/a": {rt.APIErr(429, "RATE_LIMITED", "Retry-After", "1"), rt.APIErr(429, "RATE_LIMITED"), rt.Answer(200, `{}`)},
		"/b": {rt.APIErr(503, "UNAVAILABLE"), rt.Answer(200, `{}`)},
	}}
	_, _, counts, err := runBatch(t, context.Background(), s, nil, "GET /a", "GET /b")
	if tally := counts.Tally(); err != nil || tally.RateLimited != 2 || tally.Requests != 5 || tally.Outcomes["ok"] != 2 {
		t.Fatalf("tally %+v (%v), want 2 refused of 5 requests", tally, err)
	}
}

// An input that is not a regular file (a pipe) has no known length, as standard input has not.
func TestInputOfUnknownLength(t *testing.T) {
	if in := NewInput("x", strings.NewReader("")); in.Total != -1 {
		t.Errorf("NewInput: total %d", in.Total)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Skip(err)
	}
	defer w.Close()
	in, err := OpenInput(fmt.Sprintf("/dev/fd/%d", r.Fd()), nil, Shard{})
	if err != nil {
		t.Skip(err) // no /dev/fd here
	}
	defer in.Close()
	if in.Total != -1 || in.SHA256 != "" {
		t.Errorf("a pipe: %+v", in)
	}
}

// --max-body: a body over it ends its line with a non-zero outcome whose reason names both
// flags, never cut into an ok line, however small (under the 128 KiB every line keeps anyway);
// 0 means the default (8 MiB). Through both real senders: the fake one does not read bodies.
func TestMaxBodyEndsALineWithoutCuttingIt(t *testing.T) {
	big := `{"data":"` + strings.Repeat("x", 100) + `"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/big" {
			_, _ = w.Write([]byte(big))
			return
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	base, _ := url.Parse(srv.URL)
	var sender retry.Sender
	run := func(maxBody int64) map[int]line {
		var out bytes.Buffer
		err := Run(context.Background(), Config{
			Input: NewInput("-", strings.NewReader("GET /big\nGET /small\n")), Out: &out, Concurrency: 1, Base: base,
			Drain: time.Second, MaxBody: maxBody, Counts: NewCounts(-1), Policy: retry.DefaultPolicy(),
			Engine: &retry.Engine{Sender: sender, Clock: rt.NewFakeClock(), Rand: rt.FixedRand},
		})
		got := map[int]line{}
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var r line
			_ = json.Unmarshal([]byte(l), &r)
			got[r.Line] = r
		}
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for name, s := range map[string]retry.Sender{"net": transport.Net{Transport: transport.NewTransport()},
		"fast": transport.NewFastClient(ctx, base, 2)} {
		sender = s
		got := run(64)
		if r := got[1]; r.Outcome == "ok" || r.Error == nil || !strings.Contains(r.Error.Reason, "--bodies") || !strings.Contains(r.Error.Reason, "--max-body") || len(r.Body) != 0 {
			t.Errorf("%s: over --max-body: %+v", name, r)
		}
		if r := got[2]; r.Outcome != "ok" {
			t.Errorf("%s: a small body under --max-body: %+v", name, r)
		}
		if r := run(0)[1]; r.Outcome != "ok" || string(r.Body) != big {
			t.Errorf("%s: the default --max-body: %+v", name, r)
		}
	}
}

// A body larger than what every line keeps (128 KiB) is embedded whole up to exactly --max-body
// and refused one byte past it, with or without a Content-Length; with --bodies DIR it goes to a
// file that the result line names, whole.
func TestLargeBodiesWholeOrRefused(t *testing.T) {
	big := `"` + strings.Repeat("y", 200<<10) + `"`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/small":
			_, _ = w.Write([]byte(`{}`))
			return
		case "/chunked":
			w.(http.Flusher).Flush() // no Content-Length: chunked
		}
		_, _ = w.Write([]byte(big))
	}))
	defer srv.Close()
	base, _ := url.Parse(srv.URL)
	input := "GET /sized\nGET /chunked\n"
	run := func(maxBody int64, dir string) map[int]line {
		var out bytes.Buffer
		err := Run(context.Background(), Config{
			Input: NewInput("-", strings.NewReader(input)), Out: &out, Concurrency: 1, Base: base,
			Drain: time.Second, MaxBody: maxBody, BodiesDir: dir, Counts: NewCounts(-1), Policy: retry.DefaultPolicy(),
			Engine: &retry.Engine{Sender: transport.Net{Transport: transport.NewTransport()}, Clock: rt.NewFakeClock(), Rand: rt.FixedRand},
		})
		if err != nil {
			t.Fatal(err)
		}
		got := map[int]line{}
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var r line
			_ = json.Unmarshal([]byte(l), &r)
			got[r.Line] = r
		}
		return got
	}
	for n, r := range run(int64(len(big)), "") {
		if r.Outcome != "ok" || string(r.Body) != big {
			t.Errorf("line %d at exactly --max-body: %s, %d bytes", n, r.Outcome, len(r.Body))
		}
	}
	for n, r := range run(int64(len(big))-1, "") {
		if r.Outcome == "ok" || len(r.Body) != 0 {
			t.Errorf("line %d one byte over --max-body: %s, %d bytes", n, r.Outcome, len(r.Body))
		}
	}
	dir := t.TempDir()
	input += "GET /small\n"           // a small body goes to its file too
	for n, r := range run(100, dir) { // --max-body does not limit --bodies
		if _, err := os.Stat(r.BodyFile); r.Outcome != "ok" || len(r.Body) != 0 || err != nil || filepath.Dir(r.BodyFile) != dir {
			t.Errorf("line %d with --bodies: %s, %d bytes embedded, body_file %q (%v)", n, r.Outcome, len(r.Body), r.BodyFile, err)
		}
	}
	for _, e := range mustReadDir(t, dir) {
		want := big
		if strings.HasPrefix(e.Name(), "3.") {
			want = `{}`
		}
		if b, _ := os.ReadFile(filepath.Join(dir, e.Name())); string(b) != want {
			t.Errorf("%s holds %d bytes, want %d", e.Name(), len(b), len(want))
		}
	}
}

func mustReadDir(t *testing.T, dir string) []os.DirEntry {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("%s: %v %v", dir, entries, err)
	}
	return entries
}
