package cmd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brellium/brellium/emulator"
	"github.com/brellium/brellium/internal/retrytest"
)

// No batch line is ok unless its whole body is in the output: a body over --max-body ends its
// line, saying which flags to use; --bodies writes it to a file; a larger --max-body embeds it.
func TestBatchBodiesAreWholeOrTheLineFails(t *testing.T) {
	const size = 9 << 20
	blob := fmt.Sprintf("GET /_emulator/blob?bytes=%d", size)
	small := "GET /v2/audits/" + emulator.SampleAuditID
	for _, client := range []string{"fast", "net"} {
		t.Run(client, func(t *testing.T) {
			h := newHarness(t, emulator.Config{})
			h.env["BRELLIUM_BATCH_CLIENT"] = client
			in := writeInput(t, small, blob)

			r := h.run("batch", in)
			got := parseResults(t, r.out)
			if r.code != 2 || got[1].Outcome != "ok" || got[2].Outcome != "usage" || len(got[2].Body) != 0 {
				t.Fatalf("default --max-body: exit %d\n%.400s", r.code, r.out)
			}
			if e := got[2].Error; e == nil || !strings.Contains(e.Reason, "--bodies") || !strings.Contains(e.Reason, "--max-body") {
				t.Fatalf("the reason does not name both flags: %+v", got[2].Error)
			}

			r = h.run("batch", in, "--max-body", "16MiB")
			got = parseResults(t, r.out)
			if r.code != 0 || got[2].Outcome != "ok" || len(got[2].Body) != size {
				t.Fatalf("--max-body 16MiB: exit %d, body of %d bytes", r.code, len(got[2].Body))
			}

			dir := filepath.Join(t.TempDir(), "bodies")
			r = h.run("batch", in, "--bodies", dir)
			got = parseResults(t, r.out)
			if r.code != 0 || got[2].Outcome != "ok" || len(got[2].Body) != 0 || got[1].BodyFile == "" || got[2].BodyFile == "" {
				t.Fatalf("--bodies: exit %d\n%.600s", r.code, r.out)
			}
			b, _ := os.ReadFile(got[2].BodyFile)
			fi, _ := os.Stat(got[2].BodyFile)
			if len(b) != size || !strings.HasPrefix(string(b), `{"data":"aaa`) || filepath.Base(got[2].BodyFile) != "2.json" || fi.Mode().Perm() != 0o600 {
				t.Fatalf("body file %s: %d bytes, mode %v", got[2].BodyFile, len(b), fi.Mode().Perm())
			}
			if b, _ := os.ReadFile(got[1].BodyFile); !strings.Contains(string(b), `"audit_id"`) {
				t.Fatalf("small body file: %q", b)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 2 {
				t.Fatalf("files in --bodies: %v", entries)
			}
		})
	}
}

// A body cut by the network is a failed attempt, repeated for a safe line, never ok; the repeat's
// whole body is what the line carries.
func TestBatchCutBodyIsRepeated(t *testing.T) {
	const size = 12 << 20
	for _, client := range []string{"fast", "net"} {
		t.Run(client, func(t *testing.T) {
			var requests atomic.Int32
			url := retrytest.Listen(t, func(c net.Conn) {
				if !readRequest(c) {
					c.Close()
					return
				}
				n := requests.Add(1)
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n{\"data\":\"", size)
				body := strings.Repeat("b", size-11)
				if n == 1 {
					body = body[:10<<20]
				}
				_, _ = io.WriteString(c, body)
				if n > 1 {
					_, _ = io.WriteString(c, `"}`)
				}
				c.Close()
			})
			h := newHarness(t, emulator.Config{})
			h.env["BRELLIUM_BASE_URL"] = url
			h.env["BRELLIUM_BATCH_CLIENT"] = client
			r := h.run("batch", writeInput(t, "GET /big"), "--max-body", "16MiB")
			got := parseResults(t, r.out)
			if r.code != 0 || got[1].Outcome != "ok" || got[1].Attempts != 2 || len(got[1].Body) != size || requests.Load() != 2 {
				t.Fatalf("exit %d, %d requests, line %+v (%d bytes)\n%s", r.code, requests.Load(), got[1].Outcome, len(got[1].Body), r.errOut)
			}
		})
	}
}

// A server that closes every connection after answering, without saying so: every line of a
// batch is ok on both clients, and no line pays a retry for it.
func TestBatchAgainstAServerThatClosesConnections(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	srv := httptest.NewServer(h.em)
	defer srv.Close()
	closing := retrytest.Listen(t, func(c net.Conn) {
		// One request, its answer from the emulator, then close without Connection: close.
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			c.Close()
			return
		}
		req.RequestURI, req.URL.Scheme, req.URL.Host = "", "http", strings.TrimPrefix(srv.URL, "http://")
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err == nil {
			resp.Header.Del("Connection")
			resp.Close = false
			_ = resp.Write(c)
			resp.Body.Close()
		}
		c.Close()
	})
	for _, client := range []string{"fast", "net"} {
		h.env["BRELLIUM_BASE_URL"] = closing
		h.env["BRELLIUM_BATCH_CLIENT"] = client
		r := h.run("batch", writeInput(t, auditGETs(60)...), "--concurrency", "4", "--retry", "1")
		got := parseResults(t, r.out)
		ok := 0
		for _, l := range got {
			if l.Outcome == "ok" {
				ok++
			}
		}
		if r.code != 0 || ok != 60 {
			t.Fatalf("%s: exit %d, %d of 60 ok\n%s", client, r.code, ok, r.errOut)
		}
	}
}

// Headers over 64 KiB end a batch line as they end a single call: a final error, not repeated.
func TestBatchHeadersOverTheLimit(t *testing.T) {
	var requests atomic.Int32
	url := retrytest.Listen(t, func(c net.Conn) {
		for readRequest(c) {
			requests.Add(1)
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Big: "+strings.Repeat("h", 70<<10)+"\r\nContent-Length: 2\r\n\r\n{}")
		}
		c.Close()
	})
	h := newHarness(t, emulator.Config{})
	h.env["BRELLIUM_BASE_URL"] = url
	r := h.run("batch", writeInput(t, "GET /a"))
	got := parseResults(t, r.out)
	if r.code != 3 || got[1].Outcome != "api_error" || got[1].Attempts != 1 || requests.Load() != 1 {
		t.Fatalf("exit %d, %d requests: %+v", r.code, requests.Load(), got[1])
	}
	if r := h.run("get", "/a"); r.code != 3 || !strings.Contains(r.errOut, "headers are over 64 KiB") {
		t.Fatalf("get: exit %d\n%s", r.code, r.errOut)
	}
}

// An interrupted batch tells the truth: lines in flight say they were cancelled after they
// were sent, the summary counts the requests sent and the lines never read, and the last line
// says how to resume.
func TestBatchInterruptIsReportedTruthfully(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	ctx, cancel := context.WithCancelCause(context.Background())
	var arrived atomic.Int32
	done := make(chan struct{})
	defer close(done)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if arrived.Add(1) == 6 {
			cancel(&Interrupted{Signal: os.Interrupt})
			select { // held until the drain gives up on it
			case <-r.Context().Done():
			case <-done:
			}
			return
		}
		h.em.ServeHTTP(w, r)
	}))
	defer srv.Close()
	h.env["BRELLIUM_BASE_URL"] = srv.URL
	dir := t.TempDir()
	in := writeInput(t, auditGETs(50)...)
	journal := filepath.Join(dir, "run.journal")
	code, out, errOut := h.batchWithCtx(ctx, func(o *BatchOptions) { o.Drain = 50 * time.Millisecond }, in, "--journal", journal, "--concurrency", "1")
	if code != 130 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	got := parseResults(t, out)
	if l := got[6]; l.Outcome != "skipped" || l.Attempts != 1 || l.Error == nil || !strings.Contains(l.Error.Reason, "cancelled after it was sent") {
		t.Errorf("the line in flight: %+v", l)
	}
	// The lines reported and the lines never read make the input.
	for _, want := range []string{"6 requests", fmt.Sprintf("%d never read", 50-len(got)), "to resume, run: brellium batch " + in + " --journal " + journal} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr does not say %q:\n%s", want, errOut)
		}
	}
}
