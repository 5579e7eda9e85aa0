// Package testredis gives tests a real Redis server on a loopback port.
package testredis

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// URL returns a Redis URL for a test: $BRELLIUM_TEST_REDIS when set (CI starts one), else a
// redis-server of the test's own. Without redis-server the test is skipped, with a message
// that says so, unless $BRELLIUM_REQUIRE_REDIS is set: then it fails (CI must not skip).
func URL(t testing.TB) string {
	t.Helper()
	if u := os.Getenv("BRELLIUM_TEST_REDIS"); u != "" {
		return u
	}
	u, _ := Start(t)
	return u
}

// Start runs a redis-server of the test's own on a free loopback port, stopped at the end of
// the test, and returns its URL and a function that stops it early.
func Start(t testing.TB) (string, func()) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("BRELLIUM_REQUIRE_REDIS") != "" {
			t.Fatal("redis-server not found, and BRELLIUM_REQUIRE_REDIS is set: install it (apt-get install redis-server)")
		}
		t.Skip("redis-server not found: install it (apt-get install redis-server) to run the Redis limiter tests")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", fmt.Sprint(port), "--save", "", "--appendonly", "no",
		"--dir", t.TempDir())
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	t.Cleanup(stop)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "redis://" + addr + "/0", stop
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("redis-server did not start on %s:\n%s", addr, out.String())
	return "", nil
}

// Proxy stands a TCP proxy on a loopback port in front of the Redis at rawURL and returns its
// URL and a switch: cut(true) closes every proxied connection and refuses new ones, as a Redis
// that went away; cut(false) lets connections through again.
func Proxy(t testing.TB, rawURL string) (string, func(down bool)) {
	t.Helper()
	target := strings.TrimSuffix(strings.TrimPrefix(rawURL, "redis://"), "/0")
	if i := strings.Index(target, "/"); i >= 0 {
		target = target[:i]
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		down  bool
		conns []net.Conn
		wg    sync.WaitGroup
	)
	closeAll := func() {
		for _, c := range conns {
			_ = c.Close()
		}
		conns = nil
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if down {
				mu.Unlock()
				_ = c.Close()
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				mu.Unlock()
				_ = c.Close()
				continue
			}
			conns = append(conns, c, up)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(c, up); _ = c.Close() }()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		closeAll()
		mu.Unlock()
		wg.Wait()
	})
	return "redis://" + ln.Addr().String() + "/0", func(d bool) {
		mu.Lock()
		defer mu.Unlock()
		down = d
		if d {
			closeAll()
		}
	}
}
