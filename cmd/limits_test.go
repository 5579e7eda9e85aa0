package cmd

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/brellium/brellium/emulator"
	"github.com/brellium/brellium/internal/retrytest"
)

func TestLargeBodyIsStreamedWhole(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	const size = 20 << 20
	r := h.run("get", fmt.Sprintf("/_emulator/blob?bytes=%d", size), "-s")
	if r.code != 0 || len(r.out) != size || !strings.HasPrefix(r.out, `{"data":"aaa`) || !strings.HasSuffix(r.out, `aa"}`) {
		t.Fatalf("exit %d, %d bytes out\n%s", r.code, len(r.out), r.errOut)
	}
}

// A large body cut short after part of it went out is not repeated: the output already holds
// that part, and a repeat would write it twice.
func TestLargeBodyCutShortIsNotRepeated(t *testing.T) {
	var requests atomic.Int32
	url := retrytest.Listen(t, func(c net.Conn) {
		if !readRequest(c) {
			c.Close()
			return
		}
		requests.Add(1)
		_, _ = io.WriteString(c, fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", 64<<20))
		_, _ = io.WriteString(c, strings.Repeat("a", 12<<20))
		c.Close()
	})
	h := newHarness(t, emulator.Config{})
	h.env["BRELLIUM_BASE_URL"] = url
	r := h.run("get", "/big")
	if r.code != 4 || requests.Load() != 1 || len(r.out) != 12<<20 || !strings.Contains(r.errOut, "not repeated") {
		t.Fatalf("exit %d after %d requests, %d bytes out\n%s", r.code, requests.Load(), len(r.out), r.errOut)
	}
}

func TestBatchLinesStayWholeUnderManyWorkers(t *testing.T) {
	h := newHarness(t, emulator.Config{Burst: 1 << 30, Rate: 1e9})
	var lines []string
	for i := 1; i <= 2000; i++ {
		lines = append(lines, "GET /v2/audits/"+emulator.AuditID(i%100+1))
	}
	r := h.run("batch", writeInput(t, lines...), "--concurrency", "64")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.errOut)
	}
	if got := parseResults(t, r.out); len(got) != 2000 {
		t.Fatalf("%d whole result lines, want 2000", len(got))
	}
}
