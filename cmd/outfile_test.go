package cmd

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/brellium/brellium/emulator"
	"github.com/brellium/brellium/internal/retrytest"
)

// -o FILE is replaced only by a whole 2xx body: a call that got no answer, or an error, leaves
// the earlier file as it was, and leaves no temporary file behind.
func TestOutputFileIsReplacedOnlyByAWhole2xx(t *testing.T) {
	sample := "/v2/audits/" + emulator.SampleAuditID
	cases := []struct {
		name   string
		base   func(t *testing.T, h *harness) string
		path   string
		code   int
		stderr string
	}{
		{"no answer", func(t *testing.T, _ *harness) string { return refusedServer(t) }, sample, 4, "no connection made"},
		{"404", func(_ *testing.T, h *harness) string { return h.srv.URL }, "/v2/audits/missing", 3, "AUDIT_NOT_FOUND"},
		{"body cut short", func(t *testing.T, _ *harness) string { return rawServer(true, truncatedBody)(t) }, sample, 4, "cut short"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, emulator.Config{})
			dir := t.TempDir()
			path := filepath.Join(dir, "audit.json")
			if err := os.WriteFile(path, []byte("the last good result\n"), 0o640); err != nil {
				t.Fatal(err)
			}
			h.env["BRELLIUM_BASE_URL"] = c.base(t, h)
			r := h.run("get", c.path, "-o", path, "--retry", "1")
			if r.code != c.code || !strings.Contains(r.errOut, c.stderr) {
				t.Fatalf("exit %d, want %d saying %q:\n%s", r.code, c.code, c.stderr, r.errOut)
			}
			if b, _ := os.ReadFile(path); string(b) != "the last good result\n" {
				t.Fatalf("the earlier file became %q", b)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Fatalf("files left in the folder: %v", entries)
			}
		})
	}
	h := newHarness(t, emulator.Config{})
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.json")
	_ = os.WriteFile(path, []byte("old"), 0o600)
	if r := h.run("get", sample, "-o", path); r.code != 0 || r.out != "" {
		t.Fatalf("200: exit %d, stdout %q\n%s", r.code, r.out, r.errOut)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), `"audit_id":"`+emulator.SampleAuditID+`"`) {
		t.Fatalf("a 200 did not replace the file: %q", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("files left in the folder: %v", entries)
	}
	// -o - is stdout.
	if r := h.run("get", sample, "-o", "-"); r.code != 0 || !strings.Contains(r.out, `"audit_id"`) {
		t.Fatalf("-o -: exit %d, stdout %q", r.code, r.out)
	}
	if _, err := os.Stat("-"); err == nil {
		t.Fatal("-o - wrote a file named -")
	}
}

// A 2xx body too large to keep goes to -o FILE as it arrives; when it is cut short, the call is
// repeated (the temporary file starts over) and the file gets the whole body.
func TestOutputFileOfALargeBodyCutShortIsFetchedAgain(t *testing.T) {
	const size = 12 << 20
	var requests atomic.Int32
	url := retrytest.Listen(t, func(c net.Conn) {
		if !readRequest(c) {
			c.Close()
			return
		}
		n := requests.Add(1)
		_, _ = io.WriteString(c, fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", size))
		if n == 1 {
			_, _ = io.WriteString(c, strings.Repeat("a", size/2))
		} else {
			_, _ = io.WriteString(c, strings.Repeat("b", size))
		}
		c.Close()
	})
	h := newHarness(t, emulator.Config{})
	h.env["BRELLIUM_BASE_URL"] = url
	path := filepath.Join(t.TempDir(), "big.json")
	r := h.run("get", "/big", "-o", path)
	b, _ := os.ReadFile(path)
	if r.code != 0 || requests.Load() != 2 || len(b) != size || strings.Contains(string(b), "a") {
		t.Fatalf("exit %d after %d requests, file of %d bytes\n%s", r.code, requests.Load(), len(b), r.errOut)
	}
}

// An error body too large to keep still goes to stdout whole, byte for byte, and its error line
// is printed.
func TestLargeErrorBodyIsPrintedWhole(t *testing.T) {
	const size = 6 << 20
	body := strings.Repeat("e", size)
	url := retrytest.Listen(t, func(c net.Conn) {
		if !readRequest(c) {
			c.Close()
			return
		}
		_, _ = io.WriteString(c, fmt.Sprintf("HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", size, body))
		c.Close()
	})
	h := newHarness(t, emulator.Config{})
	h.env["BRELLIUM_BASE_URL"] = url
	r := h.run("get", "/missing")
	if r.code != 3 || r.out != body || !strings.Contains(r.errOut, "404") {
		t.Fatalf("exit %d, %d bytes out (want %d)\n%s", r.code, len(r.out), size, r.errOut)
	}
}
