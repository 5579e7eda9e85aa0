package cmd

import (
	"bufio"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEmulatorCommandServesAndStopsGracefully runs `brellium emulator` as a user would: the first
// stdout line names the address, curl-like requests get the documented answers, SIGTERM and
// SIGINT stop it with exit 0.
func TestEmulatorCommandServesAndStopsGracefully(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	bin := buildBinary(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		c := exec.Command(bin, "emulator", "--addr", "127.0.0.1:0", "--latency", "50ms", "--seed", "3")
		stdout, _ := c.StdoutPipe()
		var stderr strings.Builder
		c.Stderr = &stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
		if err != nil || !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
			t.Fatalf("first stdout line %q (%v)", line, err)
		}
		req, _ := http.NewRequest("GET", url+"/v2/audits/a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d", nil)
		req.Header.Set("Authorization", "Bearer x")
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Ratelimit-Remaining") != "99" || time.Since(start) < 50*time.Millisecond {
			t.Fatalf("answer %d %v after %v (want 200, remaining 99, after the 50ms latency)", resp.StatusCode, resp.Header, time.Since(start))
		}
		_ = c.Process.Signal(sig)
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%v: exit %v\n%s", sig, err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			_ = c.Process.Kill()
			t.Fatalf("%v did not stop the emulator", sig)
		}
		if !strings.Contains(stderr.String(), "emulator stopped") {
			t.Errorf("stderr: %q", stderr.String())
		}
	}
}
