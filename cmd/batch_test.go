package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/goleak"

	"github.com/brellium/brellium/batch"
	"github.com/brellium/brellium/emulator"
	"github.com/brellium/brellium/output"
	"github.com/brellium/brellium/request"
)

type resultLine struct {
	Line      int             `json:"line"`
	ID        string          `json:"id"`
	Status    int             `json:"status"`
	Outcome   string          `json:"outcome"`
	Attempts  int             `json:"attempts"`
	RequestID string          `json:"request_id"`
	Body      json.RawMessage `json:"body"`
	BodyFile  string          `json:"body_file"`
	Error     *struct {
		Code, Message, Reason string
		RequestID             string `json:"request_id"`
	} `json:"error"`
}

func parseResults(t *testing.T, out string) map[int]resultLine {
	t.Helper()
	got := map[int]resultLine{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var r resultLine
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("output line is not JSON: %q", l)
		}
		if _, dup := got[r.Line]; dup {
			t.Fatalf("line %d reported twice", r.Line)
		}
		got[r.Line] = r
	}
	return got
}

// auditGETs is n batch lines: GET the emulator's audits 1 to n.
func auditGETs(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = "GET /v2/audits/" + emulator.AuditID(i+1)
	}
	return lines
}

func writeInput(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBatchMixedLines(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	in := writeInput(t,
		"# a comment, then a blank line",
		"",
		"GET /v2/audits/"+emulator.SampleAuditID,
		`{"id":"first","path":"/v2/audits/`+emulator.AuditID(1)+`"}`,
		`{"id":7,"method":"patch","path":"/v2/audits/`+emulator.AuditID(2)+`","body":{"flags":["Reviewed"]},"headers":{"X-Trace":"t1"}}`,
		"GET /v2/audits/missing",
		"nonsense",
		`{"method":"GET"}`,
		`{"path":"/v2/x","bogus":true}`,
		`POST /v2/users {"email":`,
		"GET /v2/audits?q="+strings.Repeat("q", 2100),
	)
	r := h.run("batch", in, "--concurrency", "3")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3 (api_error comes before invalid):\n%s", r.code, r.errOut)
	}
	got := parseResults(t, r.out)
	want := map[int]string{3: "ok", 4: "ok", 5: "ok", 6: "api_error", 7: "invalid", 8: "invalid", 9: "invalid", 10: "invalid", 11: "invalid"}
	if len(got) != len(want) {
		t.Fatalf("got %d result lines, want %d:\n%s", len(got), len(want), r.out)
	}
	for n, outcome := range want {
		if got[n].Outcome != outcome {
			t.Errorf("line %d: outcome %q, want %q (%+v)", n, got[n].Outcome, outcome, got[n])
		}
	}
	if got[4].ID != "first" || got[5].ID != "7" || got[3].RequestID == "" || !strings.Contains(string(got[3].Body), "Missing Signature") {
		t.Errorf("ids and bodies: %+v %+v %+v", got[3], got[4], got[5])
	}
	if e := got[6].Error; e == nil || e.Code != "AUDIT_NOT_FOUND" || e.RequestID == "" {
		t.Errorf("line 6 error = %+v", got[6].Error)
	}
	for n, frag := range map[int]string{7: "line 7: want METHOD PATH", 8: `"path" is required`, 9: "unknown field", 10: "invalid JSON body", 11: "over the API's limit"} {
		if e := got[n].Error; e == nil || !strings.Contains(e.Reason, frag) {
			t.Errorf("line %d error %+v does not say %q", n, got[n].Error, frag)
		}
	}
	if !strings.Contains(r.errOut, "batch: 9 lines:") {
		t.Errorf("no summary line:\n%s", r.errOut)
	}
	if s := h.em.Stats(); s.Requests != 4 || s.Writes["PATCH /v2/audits/{id}"] != 1 {
		t.Errorf("requests %d, want 4 (invalid lines send nothing): %+v", s.Requests, s)
	}
}

// The fast client and net/http give a batch the same results, line by line.
func TestBatchClientsAgree(t *testing.T) {
	lines := []string{
		"GET /v2/audits/" + emulator.SampleAuditID,
		"GET /v2/audits/missing",
		"GET /v2/audits/" + emulator.AuditID(1),
		"HEAD /v2/audits/" + emulator.AuditID(2),
		"GET /v2/audits/" + emulator.AuditID(3),
		`POST /v2/users {"email":"a@example.com","first_name":"A","last_name":"B","role":"reviewer"}`,
		`PATCH /v2/audits/` + emulator.AuditID(4) + ` {"flags":["Reviewed"]}`,
	}
	type summary struct {
		Status, Attempts int
		Outcome, Body    string
		Code             string
	}
	results := map[string]map[int]summary{}
	for _, client := range []string{"fast", "net"} {
		h := newHarness(t, emulator.Config{})
		h.env["BRELLIUM_BATCH_CLIENT"] = client
		h.em.Script(emulator.Fault{Path: "/v2/audits/" + emulator.AuditID(1), Status: 429, Code: "RATE_LIMITED", Headers: map[string]string{"Retry-After": "1"}})
		h.em.Script(emulator.Fault{Path: "/v2/audits/" + emulator.AuditID(3), Status: 503, Code: "UNAVAILABLE", Times: 2})
		r := h.run("batch", writeInput(t, lines...), "--concurrency", "1")
		if r.code != 3 {
			t.Fatalf("%s: exit %d, want 3:\n%s", client, r.code, r.errOut)
		}
		results[client] = map[int]summary{}
		for n, g := range parseResults(t, r.out) {
			sm := summary{Status: g.Status, Attempts: g.Attempts, Outcome: g.Outcome, Body: string(g.Body)}
			if g.Error != nil {
				sm.Code = g.Error.Code
			}
			results[client][n] = sm
		}
	}
	if !reflect.DeepEqual(results["fast"], results["net"]) {
		t.Errorf("the clients disagree:\nfast %+v\nnet  %+v", results["fast"], results["net"])
	}
	want := map[int]summary{3: {Status: 200, Attempts: 2, Outcome: "ok"}, 5: {Status: 200, Attempts: 3, Outcome: "ok"},
		2: {Status: 404, Attempts: 1, Outcome: "api_error", Code: "AUDIT_NOT_FOUND"}, 4: {Status: 200, Attempts: 1, Outcome: "ok"}}
	for n, w := range want {
		got := results["fast"][n]
		got.Body = ""
		if got != w {
			t.Errorf("line %d: %+v, want %+v", n, got, w)
		}
	}
}

func TestBatchClientChoiceIsChecked(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	h.env["BRELLIUM_BATCH_CLIENT"] = "curl"
	r := h.run("batch", writeInput(t, "GET /v2/audits/"+emulator.SampleAuditID))
	if r.code != 2 || !strings.Contains(r.errOut, "BRELLIUM_BATCH_CLIENT=curl: want fast or net") || h.em.Stats().Requests != 0 {
		t.Errorf("exit %d, %d requests:\n%s", r.code, h.em.Stats().Requests, r.errOut)
	}
}

func TestBatchExitCodePrecedence(t *testing.T) {
	sample := "/v2/audits/" + emulator.SampleAuditID
	cases := []struct {
		name   string
		faults []emulator.Fault
		lines  []string
		code   int
	}{
		{"all ok", nil, []string{"GET " + sample}, 0},
		{"invalid only", nil, []string{"GET " + sample, "x"}, 2},
		{"exhausted over api_error", []emulator.Fault{{Path: "/v2/audits/a", Status: 503, Times: 100}},
			[]string{"GET /v2/audits/a", "GET /v2/audits/missing", "x"}, 4},
		{"unknown over exhausted", []emulator.Fault{{Path: "/v2/audits/a", Status: 503, Times: 100}, {Path: "/v2/users", Status: 500, Execute: true}},
			[]string{"GET /v2/audits/a", `POST /v2/users {"email":"p@example.com"}`}, 6},
		{"auth over exhausted", []emulator.Fault{{Path: "/v2/audits/a", Status: 503, Times: 100}, {Path: "/v2/audits/b", Status: 401, Code: "UNAUTHORIZED"}},
			[]string{"GET /v2/audits/a", "GET /v2/audits/b"}, 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, emulator.Config{})
			h.em.Script(c.faults...)
			r := h.run("batch", writeInput(t, c.lines...), "--retry", "1")
			if r.code != c.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", r.code, c.code, r.out, r.errOut)
			}
		})
	}
}

func TestBatchBlockStopsEveryWorker(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	lines := auditGETs(40)
	blockedPath := "/v2/audits/" + emulator.AuditID(5)
	h.em.Script(emulator.Fault{Path: blockedPath, Status: 403, Bare: true})
	// Line 5's answer waits for the other worker's next request, which is held (up to 10 s)
	// until the batch lets go of it: at the block, exactly one request is in flight.
	var blockedSeen atomic.Bool
	var late, letGo atomic.Int32
	inFlight := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if blockedSeen.Load() {
			late.Add(1)
			once.Do(func() { close(inFlight) })
			select {
			case <-r.Context().Done():
				letGo.Add(1)
				return
			case <-time.After(10 * time.Second):
			}
		}
		if r.URL.Path == blockedPath {
			blockedSeen.Store(true)
			select {
			case <-inFlight:
			case <-time.After(10 * time.Second):
			}
		}
		h.em.ServeHTTP(w, r)
	}))
	defer srv.Close()
	h.env["BRELLIUM_BASE_URL"] = srv.URL
	r := h.run("batch", writeInput(t, lines...), "--concurrency", "2")
	if r.code != 5 {
		t.Fatalf("exit %d, want 5:\n%s", r.code, r.errOut)
	}
	got := parseResults(t, r.out)
	blocked, skipped := 0, 0
	for _, g := range got {
		switch g.Outcome {
		case "blocked":
			blocked++
		case "skipped":
			skipped++
			if g.Error == nil || !strings.Contains(g.Error.Reason, "blocked") {
				t.Errorf("skipped line %d does not say why: %+v", g.Line, g.Error)
			}
		}
	}
	if blocked != 1 || skipped == 0 {
		t.Fatalf("blocked %d skipped %d:\n%s", blocked, skipped, r.out)
	}
	// No request starts after the block, and the one in flight is called off, not waited for.
	srv.Close() // waits for the handlers
	if late.Load() != 1 || letGo.Load() != 1 {
		t.Errorf("%d requests arrived after the blocked one and %d were called off; want 1 and 1", late.Load(), letGo.Load())
	}
}

func TestBatchShard(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	lines := auditGETs(9)
	r := h.run("batch", writeInput(t, lines...), "--shard", "2/3")
	got := parseResults(t, r.out)
	if r.code != 0 || len(got) != 3 || got[1].Outcome != "ok" || got[4].Outcome != "ok" || got[7].Outcome != "ok" {
		t.Fatalf("shard 2/3 of 9 lines should be lines 1, 4, 7: exit %d\n%s", r.code, r.out)
	}
	if r := h.run("batch", writeInput(t, lines...), "--shard", "4/3"); r.code != 2 {
		t.Errorf("--shard 4/3: exit %d, want 2", r.code)
	}
}

func TestBatchJournalSkipsDoneAndRefusesAnotherInput(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	journal := filepath.Join(t.TempDir(), "run.journal")
	in := writeInput(t, `POST /v2/documents {"documents":[{"file_name":"a.pdf"}]}`, "GET /v2/audits/"+emulator.SampleAuditID)
	if r := h.run("batch", in, "--journal", journal); r.code != 0 {
		t.Fatalf("first run: exit %d\n%s", r.code, r.errOut)
	}
	r := h.run("batch", in, "--journal", journal)
	got := parseResults(t, r.out)
	if r.code != 0 || got[1].Outcome != "skipped" || got[2].Outcome != "skipped" {
		t.Fatalf("rerun: exit %d\n%s", r.code, r.out)
	}
	if n := h.em.CountDocuments("a.pdf"); n != 1 {
		t.Fatalf("the document was created %d times", n)
	}
	other := writeInput(t, "GET /v2/audits/"+emulator.SampleAuditID)
	if r := h.run("batch", other, "--journal", journal); r.code != 2 || !strings.Contains(r.errOut, "belongs to another input") {
		t.Fatalf("another input: exit %d\n%s", r.code, r.errOut)
	}
	if fi, err := os.Stat(journal); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("journal mode = %v %v", fi.Mode(), err)
	}
}

func TestBatchJournalReportsAStartedUnsafeLineAsUnknown(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	dir := t.TempDir()
	journal := filepath.Join(dir, "run.journal")
	line := `POST /v2/documents {"documents":[{"file_name":"b.pdf"}]}`
	in := writeInput(t, line)
	// A journal as a run that died after sending line 1 would have left it.
	sha := fileSHA(t, in)
	rec := fmt.Sprintf("{\"v\":1,\"input\":%q,\"sha256\":%q}\n{\"line\":1,\"h\":\"%x\",\"s\":\"start\"}\n{\"line\":2,\"h\":", in, sha, lineHash(line))
	if err := os.WriteFile(journal, []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	r := h.run("batch", in, "--journal", journal)
	got := parseResults(t, r.out)
	if r.code != 6 || got[1].Outcome != "unknown_outcome" {
		t.Fatalf("exit %d:\n%s\n%s", r.code, r.out, r.errOut)
	}
	if s := h.em.Stats(); s.Requests != 0 {
		t.Fatalf("a started unsafe line was sent again (%d requests)", s.Requests)
	}
}

func TestBatchRetryBudget(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	lines := auditGETs(30)
	h.em.Script(emulator.Fault{Status: 503, Times: 1000})
	code, out, errOut := h.batchWith(func(o *BatchOptions) { o.BreakerFailures = 1 << 30 },
		writeInput(t, lines...), "--retry", "4", "--concurrency", "1")
	if code != 4 {
		t.Fatalf("exit %d, want 4:\n%s", code, errOut)
	}
	// 30 first attempts; repeats capped at max(10, 20% of requests sent).
	if s := h.em.Stats(); s.Requests > 30+12 {
		t.Fatalf("%d requests: the retry budget did not hold (30 lines × 5 attempts without it)", s.Requests)
	}
	if !strings.Contains(out, "retry budget") {
		t.Errorf("no line says the retry budget stopped it:\n%s", out)
	}
}

// batchWith parses argv into BatchOptions, lets tune change what no flag sets, and runs the batch.
func (h *harness) batchWith(tune func(*BatchOptions), args ...string) (code int, out, errOut string) {
	h.t.Helper()
	return h.batchWithCtx(context.Background(), tune, args...)
}

// batchWithCtx is batchWith with a context of the test's, which may end with an *Interrupted.
func (h *harness) batchWithCtx(ctx context.Context, tune func(*BatchOptions), args ...string) (code int, out, errOut string) {
	h.t.Helper()
	ios, _, o, e := output.Test()
	f := &Factory{IOStreams: ios, Getenv: func(k string) string { return h.env[k] }, Clock: h.clock, Rand: func() float64 { return 0.5 }}
	var opts *BatchOptions
	g := &GlobalOptions{}
	root := &cobra.Command{Use: "brellium", SilenceErrors: true, SilenceUsage: true}
	root.AddCommand(NewCmdBatch(f, g, func(o *BatchOptions) error { opts = o; return nil }))
	f.args = append(append([]string{"batch"}, args...), "--limiter", "off")
	root.SetArgs(f.args)
	if err := root.Execute(); err != nil {
		h.t.Fatal(err)
	}
	tune(opts)
	err := runBatch(ctx, f, g, opts)
	return ExitCode(err), o.String(), e.String()
}

func TestBatchBreakerPausesThenProbes(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	lines := auditGETs(12)
	h.em.Script(emulator.Fault{Status: 503, Times: 5})
	start := time.Now()
	code, out, errOut := h.batchWith(func(o *BatchOptions) { o.BreakerFailures, o.BreakerCooldown = 3, 50*time.Millisecond },
		writeInput(t, lines...), "--concurrency", "1", "--retry", "0")
	if code != 4 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	ok := 0
	for _, r := range parseResults(t, out) {
		if r.Outcome == "ok" {
			ok++
		}
	}
	// Five failures (3 trip the breaker, a failed probe re-opens it), then the rest succeed.
	if ok != 7 || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("ok %d after %v; want 7 after two cool-downs:\n%s", ok, time.Since(start), out)
	}
}

// An interrupt in the middle of a batch stops taking lines, lets the request in flight finish,
// writes every finished line, and exits 130.
func TestBatchInterruptFlushesAndExits130(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	ctx, cancel := context.WithCancelCause(context.Background())
	var arrived atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if arrived.Add(1) == 3 {
			cancel(&Interrupted{Signal: os.Interrupt})
		}
		h.em.ServeHTTP(w, r)
	}))
	defer srv.Close()
	h.env["BRELLIUM_BASE_URL"] = srv.URL
	r := h.runCtx(ctx, "batch", writeInput(t, auditGETs(10)...), "--concurrency", "1")
	if r.code != 130 {
		t.Fatalf("exit %d, want 130:\n%s", r.code, r.errOut)
	}
	got := parseResults(t, r.out)
	if n := h.em.Stats().Requests; n != 3 {
		t.Fatalf("%d requests, want 3: no line is sent after the interrupt", n)
	}
	for n := 1; n <= 3; n++ {
		if got[n].Outcome != "ok" {
			t.Errorf("line %d, answered before or during the interrupt: %+v", n, got[n])
		}
	}
	for n, l := range got {
		if n > 3 && l.Outcome == "ok" {
			t.Errorf("line %d is ok, but it was never sent", n)
		}
	}
}

// TestBatchOverHTTPS runs a batch (the fast client) and a single call (net/http) against the
// emulator behind TLS, with the test server's certificate as the only trusted root.
func TestBatchOverHTTPS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	em := emulator.New(emulator.Config{Audits: 10})
	srv := httptest.NewTLSServer(em)
	defer srv.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(ca, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in.txt")
	lines := auditGETs(10)
	_ = os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	env := append(os.Environ(), "BRELLIUM_BASE_URL="+srv.URL, "BRELLIUM_ACCESS_TOKEN=t", "BRELLIUM_CACHE_DIR="+dir,
		"SSL_CERT_FILE="+ca, "SSL_CERT_DIR="+dir)
	for _, args := range [][]string{
		{"batch", in, "--concurrency", "3", "--limiter", "off", "-o", filepath.Join(dir, "out.jsonl")},
		{"get", "/v2/audits/" + emulator.AuditID(1), "--limiter", "off", "-s"},
	} {
		c := exec.Command(bin, args...)
		c.Env = env
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", args[0], err, out)
		}
	}
	got := readResults(t, filepath.Join(dir, "out.jsonl"))
	for i := 1; i <= 10; i++ {
		if got[i].Outcome != "ok" || got[i].Status != 200 {
			t.Errorf("line %d: %+v", i, got[i])
		}
	}
	if n := em.Stats().Requests; n != 11 {
		t.Errorf("%d requests, want 11", n)
	}

	// An untrusted certificate is refused by both: nothing is sent, and the error says so.
	empty := t.TempDir()
	env[len(env)-2], env[len(env)-1] = "SSL_CERT_FILE="+filepath.Join(empty, "none.pem"), "SSL_CERT_DIR="+empty
	one := filepath.Join(dir, "one.txt")
	_ = os.WriteFile(one, []byte(lines[0]+"\n"), 0o600)
	for _, args := range [][]string{
		{"batch", one, "--limiter", "off", "--retry", "0"},
		{"get", "/v2/audits/" + emulator.AuditID(1), "--limiter", "off", "--retry", "0"},
	} {
		c := exec.Command(bin, args...)
		c.Env = env
		out, _ := c.CombinedOutput()
		if !strings.Contains(string(out), "certificate signed by unknown authority") || !strings.Contains(string(out), "nothing was sent") {
			t.Errorf("%s with an untrusted certificate:\n%s", args[0], out)
		}
	}
	if n := em.Stats().Requests; n != 11 {
		t.Errorf("%d requests after the refused handshakes, want 11", n)
	}
}

// TestBatchKillAndResume kills a real brellium process with SIGKILL partway through a batch of
// unsafe writes, resumes with the journal, and checks through the emulator that every write ran
// exactly once or is reported unknown_outcome: none twice, none lost.
func TestBatchKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	em := startEmulator(t, emulator.Config{Latency: 20 * time.Millisecond, Burst: 1000, Rate: 1000})
	dir := t.TempDir()
	const n = 60
	var lines []string
	for i := 1; i <= n; i++ {
		lines = append(lines, fmt.Sprintf(`POST /v2/documents {"documents":[{"file_name":"f%d.pdf"}]}`, i))
	}
	in := filepath.Join(dir, "in.txt")
	_ = os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	journal := filepath.Join(dir, "run.journal")
	out := filepath.Join(dir, "out.jsonl")
	run := func() *exec.Cmd {
		c := exec.Command(bin, "batch", in, "--journal", journal, "-o", out, "--concurrency", "4", "--limiter", "off")
		c.Env = append(os.Environ(), "BRELLIUM_BASE_URL="+em.URL, "BRELLIUM_ACCESS_TOKEN=t", "BRELLIUM_CACHE_DIR="+dir)
		return c
	}
	first := run()
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for em.Stats().Requests < n/3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	_ = first.Process.Signal(syscall.SIGKILL)
	_ = first.Wait()
	sentBefore := em.Stats().Requests
	if sentBefore >= n {
		t.Fatalf("the first run finished before the kill (%d requests)", sentBefore)
	}
	out1 := readResults(t, out)
	second := run()
	outB, err := second.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 6) {
		t.Fatalf("rerun: %v\n%s", err, outB)
	}
	// The rerun appended to the same file: it now holds a result for every line, the latest
	// last, and each line done in the first run once.
	all := readResults(t, out)
	if len(all) != n {
		t.Fatalf("the results file holds %d lines, want %d:\n%s", len(all), n, outB)
	}
	if counts := lineCounts(t, out); len(counts) != n {
		t.Fatalf("lines in the file: %v", counts)
	} else {
		for i, c := range counts {
			if c > 1 && out1[i].Outcome == "ok" {
				t.Errorf("line %d, done in the first run, was written again", i)
			}
		}
	}
	unknown := 0
	for i := 1; i <= n; i++ {
		count := em.CountDocuments(fmt.Sprintf("f%d.pdf", i))
		r := all[i]
		switch {
		case count > 1:
			t.Errorf("line %d ran %d times", i, count)
		case r.Outcome == "unknown_outcome":
			unknown++
		case r.Outcome == "ok" && count == 1:
		case r.Outcome == "skipped" && count == 1 && out1[i].Outcome == "":
			// done in the first run, its result line lost with the kill: the rerun wrote it
		default:
			t.Errorf("line %d: first run %q, now %q, created %d times", i, out1[i].Outcome, r.Outcome, count)
		}
	}
	t.Logf("killed after %d requests; rerun: %d lines unknown_outcome (started, never finished), the rest done exactly once", sentBefore, unknown)
}

// startEmulator serves an emulator on a loopback port for the test's real processes, closed at
// the end of the test.
func startEmulator(tb testing.TB, cfg emulator.Config) *emulator.Running {
	tb.Helper()
	em, err := emulator.Start("127.0.0.1:0", cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = em.Close(context.Background()) })
	return em
}

// lineCounts counts the result lines of each line number in a results file.
func lineCounts(t *testing.T, path string) map[int]int {
	t.Helper()
	counts := map[int]int{}
	b, _ := os.ReadFile(path)
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r resultLine
		if json.Unmarshal([]byte(l), &r) == nil {
			counts[r.Line]++
		}
	}
	return counts
}

func readResults(t *testing.T, path string) map[int]resultLine {
	t.Helper()
	got := map[int]resultLine{}
	f, err := os.Open(path)
	if err != nil {
		return got
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r resultLine
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			got[r.Line] = r
		}
	}
	return got
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// buildBinary builds brellium once for the package's tests that run real processes.
func buildBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "brellium-test-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "brellium")
		if out, err := exec.Command("go", "build", "-o", binPath, "..").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	if code == 0 {
		// No goroutine may outlive the tests (the clients of httptest servers aside, which the
		// tests do not own, and fasthttp's idle-connection sweeper, which ends on its own
		// within 10 s of its client's last connection closing).
		if err := goleak.Find(goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
			goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner")); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func fileSHA(t *testing.T, path string) string {
	t.Helper()
	in, err := batch.OpenInput(path, nil, batch.Shard{})
	if err != nil {
		t.Fatal(err)
	}
	in.Close()
	return in.SHA256
}

func lineHash(text string) uint64 { return request.LineHash(text) }
