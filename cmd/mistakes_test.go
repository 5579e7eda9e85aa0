package cmd

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/brellium/brellium/emulator"
)

// Unknown commands and flags are usage errors (exit 2) with the usage hint, like every bad
// argument.
func TestUnknownCommandsAndFlagsAreUsageErrors(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	for _, args := range [][]string{{"frobnicate"}, {"get", "/x", "--frobnicate"}, {"--frobnicate"}} {
		r := h.runArgs(args)
		if r.code != 2 || !strings.Contains(r.errOut, "--help") {
			t.Errorf("%v: exit %d, want 2 with a usage hint:\n%s", args, r.code, r.errOut)
		}
	}
}

// A rerun never sends again a line that ended unknown_outcome: it may have run.
func TestBatchRerunDoesNotResendAnUnknownOutcome(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	journal := filepath.Join(t.TempDir(), "run.journal")
	in := writeInput(t, `POST /v2/documents {"documents":[{"file_name":"u.pdf"}]}`, "GET /v2/audits/"+emulator.SampleAuditID)
	h.em.Script(emulator.Fault{Path: "/v2/documents", Status: 503, Execute: true})
	r := h.run("batch", in, "--journal", journal)
	if got := parseResults(t, r.out); r.code != 6 || got[1].Outcome != "unknown_outcome" {
		t.Fatalf("first run: exit %d\n%s", r.code, r.out)
	}
	before := h.em.Stats().Requests
	r = h.run("batch", in, "--journal", journal)
	got := parseResults(t, r.out)
	if r.code != 6 || got[1].Outcome != "unknown_outcome" || got[2].Outcome != "skipped" {
		t.Fatalf("rerun: exit %d\n%s", r.code, r.out)
	}
	if n := h.em.Stats().Requests - before; n != 0 || h.em.CountDocuments("u.pdf") != 1 {
		t.Fatalf("the rerun sent %d requests; the document exists %d times", n, h.em.CountDocuments("u.pdf"))
	}
}

// An unsafe line interrupted after it was sent is unknown_outcome, in the output and in the
// journal, so that a rerun does not send it again; a safe line interrupted the same way is sent
// again by the rerun.
func TestBatchInterruptAfterSendingAnUnsafeLine(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	ctx, cancel := context.WithCancelCause(context.Background())
	var arrived atomic.Int32
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if arrived.Add(1) == 2 {
			cancel(&Interrupted{Signal: os.Interrupt})
		}
		select { // never answers: the drain gives up on it
		case <-r.Context().Done():
		case <-done:
		}
	}))
	defer srv.Close()
	defer close(done)
	h.env["BRELLIUM_BASE_URL"] = srv.URL
	journal := filepath.Join(t.TempDir(), "run.journal")
	in := writeInput(t, `POST /v2/users {"email":"i@example.com"}`, "GET /v2/audits/"+emulator.SampleAuditID)
	code, out, errOut := h.batchWithCtx(ctx, func(o *BatchOptions) { o.Drain = 50 * time.Millisecond },
		in, "--journal", journal, "--concurrency", "2")
	if code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, errOut)
	}
	got := parseResults(t, out)
	if got[1].Outcome != "unknown_outcome" || got[1].Error == nil || !strings.Contains(got[1].Error.Reason, "after it was sent") {
		t.Fatalf("the interrupted POST: %+v", got[1])
	}
	if got[2].Outcome == "ok" {
		t.Fatalf("the interrupted GET: %+v", got[2])
	}
	// The rerun: the POST is not sent again, the GET is.
	h.env["BRELLIUM_BASE_URL"] = h.srv.URL
	r := h.run("batch", in, "--journal", journal)
	got = parseResults(t, r.out)
	if got[1].Outcome != "unknown_outcome" || got[2].Outcome != "ok" {
		t.Fatalf("rerun: exit %d\n%s", r.code, r.out)
	}
	if s := h.em.Stats(); s.Requests != 1 || s.Created["users"] != 0 {
		t.Fatalf("the rerun sent %d requests (want only the GET) and created %d users", s.Requests, s.Created["users"])
	}
}

// An unsafe line's "start" is on disk before its request leaves: the server reads the journal
// when the request arrives.
func TestBatchJournalStartIsDurableBeforeSending(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	journal := filepath.Join(t.TempDir(), "run.journal")
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := os.ReadFile(journal)
		seen = append(seen, r.Method+" "+fmt.Sprint(strings.Count(string(b), `"s":"start"`)))
		h.em.ServeHTTP(w, r)
	}))
	defer srv.Close()
	h.env["BRELLIUM_BASE_URL"] = srv.URL
	in := writeInput(t, `POST /v2/users {"email":"j1@example.com"}`, `POST /v2/users {"email":"j2@example.com"}`, "GET /v2/audits/"+emulator.SampleAuditID)
	if r := h.run("batch", in, "--journal", journal, "--concurrency", "1"); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.errOut)
	}
	if want := "[POST 1 POST 2 GET 2]"; fmt.Sprint(seen) != want {
		t.Fatalf("start records on disk as each request arrived: %v, want %s (a safe GET needs none)", seen, want)
	}
}

// Exit-code precedence among the lines' outcomes: 5 over 6, 6 over 7.
func TestBatchExitPrecedenceOfBlockedUnknownAndAuth(t *testing.T) {
	cases := []struct {
		name   string
		faults []emulator.Fault
		lines  []string
		code   int
	}{
		{"unknown over auth", []emulator.Fault{{Path: "/v2/users", Status: 500, Execute: true}, {Path: "/v2/audits/b", Status: 401, Code: "UNAUTHORIZED"}},
			[]string{"GET /v2/audits/b", `POST /v2/users {"email":"p@example.com"}`}, 6},
		{"blocked over unknown", []emulator.Fault{{Path: "/v2/users", Status: 500, Execute: true}, {Path: "/v2/audits/c", Status: 403, Bare: true}},
			[]string{`POST /v2/users {"email":"q@example.com"}`, "GET /v2/audits/c"}, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, emulator.Config{})
			h.em.Script(c.faults...)
			r := h.run("batch", writeInput(t, c.lines...), "--retry", "1", "--concurrency", "1")
			if r.code != c.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", r.code, c.code, r.out, r.errOut)
			}
		})
	}
}

// epipeTransport fails every request as a peer that closed the connection while the request was
// being written: EPIPE, the same errno as a stdout whose reader went away.
type epipeTransport struct{}

func (epipeTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}
}

// A broken pipe to the server is a failed attempt like any other; only a broken pipe on stdout
// (| head) is the reader's choice and exit 0. Seen in the fault matrix: a call that gave up
// after 3 attempts reported outcome ok, exit 0.
func TestBrokenPipeToTheServerIsNotSuccess(t *testing.T) {
	for _, args := range [][]string{
		{"get", "/v2/audits/" + emulator.SampleAuditID, "--retry", "2"},
		{"post", "/v2/users", "-d", `{"email":"a@example.com"}`, "--retry", "2"},
	} {
		h := newHarness(t, emulator.Config{})
		h.transport = epipeTransport{}
		r := h.run(append(args, "--log-format", "json")...)
		if r.code == 0 || strings.Contains(r.errOut, `"outcome":"ok"`) {
			t.Errorf("%v: exit %d\n%s", args, r.code, r.errOut)
		}
	}
	// A batch whose lines all failed that way is not ok either.
	h := newHarness(t, emulator.Config{})
	h.transport = epipeTransport{}
	h.stdin = "GET /v2/audits/" + emulator.SampleAuditID + "\n"
	if r := h.run("batch", "-", "--retry", "1", "-s"); r.code != 4 {
		t.Errorf("batch: exit %d, want 4\n%s%s", r.code, r.out, r.errOut)
	}
}

// A JSON file saved with a byte-order mark (Windows editors) is sent without it; a body with
// another Content-Type is sent byte for byte.
func TestJSONBodyFileWithAByteOrderMark(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	file := filepath.Join(t.TempDir(), "user.json")
	_ = os.WriteFile(file, []byte("\uFEFF{\"email\":\"bom@example.com\"}\n"), 0o600)
	if r := h.run("post", "/v2/users", "-d", "@"+file, "-s"); r.code != 0 || h.em.Stats().Writes["POST /v2/users"] != 1 {
		t.Fatalf("exit %d\n%s", r.code, r.errOut)
	}
	r := h.run("post", "/v2/users", "-d", "@"+file, "-H", "Content-Type: text/plain", "--dry-run")
	if r.code != 0 || !strings.Contains(r.out, "\uFEFF{") {
		t.Fatalf("a text/plain body lost its bytes: exit %d\n%s", r.code, r.out)
	}
}
