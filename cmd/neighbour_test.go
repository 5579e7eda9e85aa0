package cmd

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brellium/brellium/emulator"
)

// neighbourHarness is an organization of burst 20 at 10/s with another integration that draws
// in bursts; when running, its draws run as the shared clock moves (as brellium sleeps).
func neighbourHarness(t *testing.T, nb emulator.Neighbour, running bool) *harness {
	h := newHarness(t, emulator.Config{Burst: 20, Rate: 10, Neighbour: nb})
	h.env["BRELLIUM_CACHE_DIR"] = t.TempDir()
	if running {
		var mu sync.Mutex
		var acc time.Duration
		h.clock.onSleep = func(d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			for acc += d; acc >= nb.Every(); acc -= nb.Every() {
				h.em.NeighbourBurst()
			}
		}
	}
	return h
}

func (h *harness) budgeted(args ...string) result {
	h.t.Helper()
	return h.runArgs(append(args, "--limiter", "local", "--rate", "10", "--burst", "20"))
}

// --reserve keeps the organization's last tokens as RateLimit-Remaining reports them, across
// processes (the level is in the machine-wide limiter's state); a single call keeps none unless
// told.
func TestReserveWaitsForTheOrganizationsLevel(t *testing.T) {
	h := neighbourHarness(t, emulator.Neighbour{Rate: 1, Burst: 17}, false)
	path := "/v2/audits/" + emulator.SampleAuditID
	h.em.NeighbourBurst() // another integration drew 17 of 20: 3 left
	start := h.clock.Now()
	if r := h.budgeted("get", path, "-s"); r.code != 0 || h.clock.Now() != start {
		t.Fatalf("a single call with the level unknown: exit %d, waited %v\n%s", r.code, h.clock.Now().Sub(start), r.errOut)
	}
	// The call reported 2 left. Without --reserve a single call does not wait for a reserve.
	if r := h.budgeted("get", path, "-s"); r.code != 0 || h.clock.Now() != start {
		t.Fatalf("reserve 0: exit %d, waited %v", r.code, h.clock.Now().Sub(start))
	}
	// 1 left: --reserve 5 waits for the refill to bring the level to 6: 0.5 s at 10/s.
	r := h.budgeted("get", path, "--reserve", "5", "--log-format", "json")
	if waited := h.clock.Now().Sub(start); r.code != 0 || waited < 500*time.Millisecond || waited > 600*time.Millisecond {
		t.Fatalf("--reserve 5 at level 1: exit %d, waited %v, want 0.5s\n%s", r.code, waited, r.errOut)
	}
	h.env["BRELLIUM_RESERVE"] = "19"
	before := h.clock.Now()
	if r := h.budgeted("get", path, "-s"); r.code != 0 || h.clock.Now().Sub(before) < time.Second {
		t.Fatalf("BRELLIUM_RESERVE=19: exit %d, waited %v", r.code, h.clock.Now().Sub(before))
	}
	if s := h.em.Stats(); s.RateLimited != 0 || s.NeighbourRateLimited != 0 {
		t.Errorf("stats %+v: nobody was refused", s)
	}
	delete(h.env, "BRELLIUM_RESERVE")
	for _, bad := range [][]string{{"--reserve", "20"}, {"--reserve", "-1"}, {"--reserve", "x"}} {
		if r := h.budgeted(append([]string{"get", path}, bad...)...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", bad, r.code, r.errOut)
		}
	}
	h.env["BRELLIUM_RESERVE"] = "abc"
	if r := h.budgeted("get", path); r.code != 2 || !strings.Contains(r.errOut, "BRELLIUM_RESERVE") {
		t.Errorf("BRELLIUM_RESERVE=abc: exit %d\n%s", r.code, r.errOut)
	}
}

// A batch keeps a tenth of the burst by default and adapts to what the neighbour draws: no 429s
// for either, its pace falls to what the refill leaves, and the log says why.
func TestBatchLeavesRoomForANeighbour(t *testing.T) {
	nb := emulator.Neighbour{Rate: 4, Burst: 2} // 2 requests every half second
	h := neighbourHarness(t, nb, true)
	var lines []string
	for range 100 {
		lines = append(lines, "GET /v2/audits/"+emulator.SampleAuditID)
	}
	in := writeInput(t, lines...)
	start := h.clock.Now()
	r := h.budgeted("batch", in, "--log-format", "json", "--concurrency", "1", "-o", "/dev/null")
	if r.code != 0 {
		t.Fatalf("batch: exit %d\n%s", r.code, r.errOut)
	}
	s := h.em.Stats()
	if s.RateLimited != 0 || s.NeighbourRateLimited != 0 || s.NeighbourRequests == 0 {
		t.Errorf("stats %+v: want no 429s for brellium or the neighbour", s)
	}
	// The budget leaves (100 - (20 - 2)) / (10 - 4) ≈ 13.7 s; the refill alone would take 8.2.
	if took := h.clock.Now().Sub(start); took < 12*time.Second || took > 16*time.Second {
		t.Errorf("the batch took %v of the clock, want about 13.7s", took)
	}
	pace := grepLines(r.errOut, `"event":"pace"`)
	if !strings.Contains(pace, `"reserve":2`) || !strings.Contains(pace, `"others_per_second":4,`) || !strings.Contains(pace, "others draw ~4.0/s") {
		t.Errorf("want a pace event that sees the neighbour's 4/s:\n%s", pace)
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestDefaultReserveIsATenthBelowTheBurst(t *testing.T) {
	for burst, want := range map[int]int{1: 0, 2: 1, 5: 1, 10: 1, 11: 2, 100: 10, 1000: 100} {
		if got := defaultReserve(burst); got != want {
			t.Errorf("defaultReserve(%d) = %d, want %d", burst, got, want)
		}
	}
}
