package cmd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/brellium/brellium/emulator"
	"github.com/brellium/brellium/internal/testredis"
)

// runFourShards runs four real `brellium batch` processes at once, each on one shard of the same
// input, against one emulator with a scaled budget, and returns the emulator's stats.
func runFourShards(t *testing.T, limiter string) emulator.Stats {
	t.Helper()
	bin := buildBinary(t)
	em := startEmulator(t, emulator.Config{Burst: 100, Rate: 200, Audits: 1000})
	dir := t.TempDir()
	lines := auditGETs(1000)
	in := filepath.Join(dir, "in.txt")
	_ = os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	var wg sync.WaitGroup
	outs := make([]string, 4)
	for k := 1; k <= 4; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			c := exec.Command(bin, "batch", in, "--shard", fmt.Sprintf("%d/4", k), "--limiter", limiter,
				"--rate", "200", "--burst", "100", "--concurrency", "4", "-o", filepath.Join(dir, fmt.Sprintf("out%d", k)))
			c.Env = append(os.Environ(), "BRELLIUM_BASE_URL="+em.URL, "BRELLIUM_ACCESS_TOKEN=shared-org", "BRELLIUM_CACHE_DIR="+dir)
			out, err := c.CombinedOutput()
			outs[k-1] = fmt.Sprintf("%v: %s", err, out)
		}(k)
	}
	wg.Wait()
	s := em.Stats()
	t.Logf("--limiter %s: %d requests, %d 429s\n%s", limiter, s.Requests, s.RateLimited, strings.Join(outs, ""))
	if s.Responses["200"] != 1000 {
		t.Fatalf("%d of 1000 lines ok", s.Responses["200"])
	}
	return s
}

func TestFourProcessesShareTheLocalBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("runs four processes for about 5 s")
	}
	s := runFourShards(t, "local")
	if float64(s.RateLimited) > 0.005*float64(s.Requests) {
		t.Fatalf("%d 429s in %d requests: over 0.5%%", s.RateLimited, s.Requests)
	}
}

func TestFourProcessesShareTheRedisBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("runs four processes for about 5 s")
	}
	s := runFourShards(t, testredis.URL(t))
	if float64(s.RateLimited) > 0.005*float64(s.Requests) {
		t.Fatalf("%d 429s in %d requests: over 0.5%%", s.RateLimited, s.Requests)
	}
}

func TestUnreachableRedisIsAUsageError(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	r := h.runArgs([]string{"get", "/v2/audits/" + emulator.SampleAuditID, "--limiter", "redis://127.0.0.1:1/0"})
	if r.code != 2 || !strings.Contains(r.errOut, "Redis does not answer") {
		t.Fatalf("exit %d\n%s", r.code, r.errOut)
	}
}
