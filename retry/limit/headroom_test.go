package limit

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rt "github.com/brellium/brellium/internal/retrytest"
	"github.com/brellium/brellium/internal/testredis"
	"github.com/brellium/brellium/retry"
)

// levelPairs are two users of one shared level, for each store: the same process, two file
// limiters on one state file, two Redis limiters on one key.
func levelPairs(t *testing.T, clock retry.Clock) map[string][2]Levels {
	m := NewMemLevels(10, 100, clock)
	path := filepath.Join(t.TempDir(), "state")
	fa, _ := NewFileLimiter(path, 10, 100, clock)
	fb, _ := NewFileLimiter(path, 10, 100, clock)
	t.Cleanup(func() { fa.Close(); fb.Close() })
	pairs := map[string][2]Levels{"memory": {m, m}, "file": {fa, fb}}
	if !testing.Short() {
		ra, rb := newRedisPair(t, testredis.URL(t), 10, 100, clock)
		pairs["redis"] = [2]Levels{ra, rb}
	}
	return pairs
}

// The level arithmetic is the same in every store, and every user of a store sees one level:
// unknown lets everything through; a report sets it; takes stop at the reserve and say how long
// the refill takes; a report above the count moves it half way.
func TestLevelsAreSharedAndKeepTheReserve(t *testing.T) {
	clock := rt.NewFakeClock()
	for name, p := range levelPairs(t, clock) {
		a, b := p[0], p[1]
		ctx := context.Background()
		if w, err := a.TakeLevel(ctx, 5); w != 0 || err != nil {
			t.Fatalf("%s: an unknown level waited %v (%v)", name, w, err)
		}
		_ = a.Settle(ctx)
		if before, known, err := b.SetLevel(ctx, 8); known || err != nil {
			t.Fatalf("%s: first report replaced %v (known %v, %v)", name, before, known, err)
		}
		// 8 known, reserve 5: two takes (to 7, then 6), the third would leave 5-1: wait.
		for i := 0; i < 2; i++ {
			if w, err := []Levels{a, b}[i].TakeLevel(ctx, 5); w != 0 || err != nil {
				t.Fatalf("%s: take %d waited %v (%v)", name, i+1, w, err)
			}
		}
		if w, _ := a.TakeLevel(ctx, 5); w != 0 {
			t.Fatalf("%s: take to the reserve waited %v", name, w)
		}
		if w, _ := b.TakeLevel(ctx, 5); w != 100*time.Millisecond {
			t.Fatalf("%s: a take below the reserve waited %v, want one refill at 10/s (100ms)", name, w)
		}
		clock.Advance(100 * time.Millisecond)
		if w, _ := b.TakeLevel(ctx, 5); w != 0 {
			t.Fatalf("%s: after the refill: waited %v", name, w)
		}
		// Four requests are in flight: a report of 9 counts none of them, so the level is 5.
		if _, _, err := a.SetLevel(ctx, 9); err != nil {
			t.Fatal(err)
		}
		if w, _ := b.TakeLevel(ctx, 4); w != 0 {
			t.Fatalf("%s: a take at 5, reserve 4: waited %v", name, w)
		}
		if w, _ := a.TakeLevel(ctx, 4); w != 100*time.Millisecond {
			t.Fatalf("%s: a take at 4, reserve 4: waited %v: the requests in flight were not taken off the report", name, w)
		}
		for i := 0; i < 5; i++ {
			_ = []Levels{a, b}[i%2].Settle(ctx)
		}
		prev, _, _ := b.SetLevel(ctx, 4) // as counted: nothing drawn
		clock.Advance(100 * time.Millisecond)
		// The count is 5: a report of 2 says others drew 3. A report of 9 then is half believed
		// (the level is 5.5): it says -7 (answers in flight). A report of 5 says others drew the 4
		// since the 9, not the 0.5 of the count.
		for i, c := range []struct {
			l         Levels
			remaining int
			drawn     float64
		}{{a, 2, 3}, {b, 9, -7}, {a, 5, 4}} {
			total, known, err := c.l.SetLevel(ctx, c.remaining)
			if drawn := total - prev; !known || err != nil || drawn < c.drawn-0.01 || drawn > c.drawn+0.01 {
				t.Fatalf("%s: report %d (%d): drawn %v (known %v, %v), want %v", name, i+1, c.remaining, drawn, known, err, c.drawn)
			}
			prev = total
		}
		// The refill stops at the burst.
		clock.Advance(time.Hour)
		if total, _, _ := b.SetLevel(ctx, 100); total < prev-0.01 || total > prev+0.01 {
			t.Fatalf("%s: refilled to the burst, drawn %v, want 0", name, total-prev)
		}
	}
}

type fakeLevels struct {
	waits []time.Duration
	err   error
	set   []int
}

func (f *fakeLevels) TakeLevel(context.Context, int) (time.Duration, error) {
	if len(f.waits) == 0 {
		return 0, f.err
	}
	w := f.waits[0]
	f.waits = f.waits[1:]
	return w, f.err
}

func (f *fakeLevels) Settle(context.Context) error { return f.err }

func (f *fakeLevels) SetLevel(_ context.Context, r int) (float64, bool, error) {
	f.set = append(f.set, r)
	return 0, false, f.err
}

// The answers do not count the requests still in flight: they are taken off the report.
func TestHeadroomTakesRequestsInFlightOffTheReport(t *testing.T) {
	clock := rt.NewFakeClock()
	lv := NewMemLevels(10, 100, clock)
	h := &Headroom{Limiter: Off{}, Levels: lv, Reserve: 5, Rate: 10, Clock: clock}
	ctx := context.Background()
	for range 4 {
		_ = h.Wait(ctx)
	}
	h.Settled()
	h.Observe(8) // one answered; three in flight: the level is 5
	if w, _ := lv.TakeLevel(ctx, 5); w != 100*time.Millisecond {
		t.Fatalf("a take at level 5, reserve 5: waited %v, want one refill", w)
	}
	for range 5 {
		h.Settled() // more than were taken: the count stays at 0
	}
	h.Observe(8)
	if w, _ := lv.TakeLevel(ctx, 5); w != 0 {
		t.Fatalf("a take at level 8: waited %v", w)
	}
}

// Headroom takes a token of the pace, then waits for the level; a wait past the deadline is
// not taken; a store that fails leaves the pace alone in charge; a 429 empties both.
func TestHeadroomWaitsForTheLevelAfterThePace(t *testing.T) {
	clock := rt.NewFakeClock()
	pace := NewBucket(10, 1, clock)
	lv := &fakeLevels{waits: []time.Duration{300 * time.Millisecond, 200 * time.Millisecond}}
	h := &Headroom{Limiter: pace, Levels: lv, Reserve: 10, Rate: 10, Clock: clock}
	if err := h.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := clock.Sleeps(); len(got) != 2 || got[0] != 300*time.Millisecond || got[1] != 200*time.Millisecond {
		t.Fatalf("sleeps %v, want the level's two waits", got)
	}
	lv.waits = []time.Duration{time.Second}
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Hour))
	defer cancel()
	clock.Set(time.Now().Add(time.Hour - 500*time.Millisecond))
	var bw *retry.BudgetWaitError
	if err := h.Wait(ctx); !errors.As(err, &bw) {
		t.Fatalf("a level wait past the deadline: %v", err)
	}
	lv.err, lv.waits = errors.New("store down"), []time.Duration{time.Minute}
	before := len(clock.Sleeps())
	if err := h.Wait(context.Background()); err != nil || len(clock.Sleeps()) > before+1 {
		t.Fatalf("a failing store: %v, sleeps %v", err, clock.Sleeps()[before:])
	}
	lv.err = nil
	h.Settled()
	h.Settled()
	h.Observe(7)
	h.Drain()
	if len(lv.set) != 2 || lv.set[0] != 7 || lv.set[1] != 0 || pace.Tokens() > 0 {
		t.Fatalf("levels set %v, pace tokens %v", lv.set, pace.Tokens())
	}
}

// What the count did not foresee is others' draw: reported once a window ends, when it changed,
// and again when it stops; a 429 says why at once, once a window.
func TestHeadroomReportsOthersDraw(t *testing.T) {
	clock := rt.NewFakeClock()
	var paces []Pace
	h := &Headroom{Limiter: Off{}, Levels: NewMemLevels(50, 100, clock), Reserve: 10, Rate: 50, Clock: clock,
		OnPace: func(p Pace) { paces = append(paces, p) }}
	ctx := context.Background()
	level := 50
	h.Observe(level)
	// Each 100 ms: brellium takes 3, others 2, the refill gives 5: the level stays, while the
	// count expects it to grow by 2.
	for i := 0; i < 100; i++ {
		for j := 0; j < 3; j++ {
			_ = h.Wait(ctx)
			h.Settled()
		}
		clock.Advance(100 * time.Millisecond)
		h.Observe(level)
	}
	if len(paces) != 1 || paces[0].Others < 15 || paces[0].Others > 25 || !strings.Contains(paces[0].Why, "others draw ~") ||
		!strings.Contains(paces[0].Why, "this process sends ~31/s") {
		t.Fatalf("paces %+v, want one report of ~20/s", paces)
	}
	for i := 0; i < 100; i++ {
		for j := 0; j < 3; j++ {
			_ = h.Wait(ctx)
			h.Settled()
		}
		clock.Advance(100 * time.Millisecond)
		level += 2
		h.Observe(min(level, 100))
	}
	if len(paces) != 2 || !strings.Contains(paces[1].Why, "others stopped drawing") {
		t.Fatalf("paces %+v, want a report that others stopped", paces)
	}
	h.Drain()
	h.Drain()
	if len(paces) != 3 || !strings.Contains(paces[2].Why, "a 429 although") {
		t.Fatalf("paces %+v, want one 429 report", paces)
	}
}

// A report above the burst the budget knows is capped at it; the reserve arithmetic and the
// shared record stay within their bounds.
func TestLevelReportAboveTheBurstIsCapped(t *testing.T) {
	clock := rt.NewFakeClock()
	path := filepath.Join(t.TempDir(), "state")
	l, _ := NewFileLimiter(path, 5, 20, clock)
	defer l.Close()
	ctx := context.Background()
	_, _, _ = l.SetLevel(ctx, 99)
	for i := 0; i < 18; i++ {
		if w, err := l.TakeLevel(ctx, 2); w != 0 || err != nil {
			t.Fatalf("take %d: waited %v (%v): the level was capped at 20", i+1, w, err)
		}
	}
	if w, _ := l.TakeLevel(ctx, 2); w != 200*time.Millisecond {
		t.Fatalf("take 19 waited %v, want one refill at 5/s: the level read back as known", w)
	}
}

// --rate auto: a level that grows faster than the rate refills it raises the rate to what it
// grew at; a level that stays high while brellium sends at the rate doubles it; a slower refill
// lowers nothing. The pace and the level follow, and the log says so.
func TestHeadroomLearnsTheRefill(t *testing.T) {
	clock := rt.NewFakeClock()
	var paces []Pace
	pace, levels := NewBucket(5, 100, clock), NewMemLevels(5, 100, clock)
	h := &Headroom{Limiter: pace, Levels: levels, Reserve: 10, Rate: 5, Burst: 100, Clock: clock, Learn: true, MaxRate: 1000,
		OnPace: func(p Pace) { paces = append(paces, p) }}
	ctx := context.Background()
	// The server refills 20/s from a level of 20; brellium sends one request each 100 ms, as its
	// pace lets it: the level grows faster than 5/s refills it.
	start, taken := clock.Now(), 0
	server := func() int {
		return min(100, 20+int(20*clock.Now().Sub(start).Seconds())-taken)
	}
	h.Observe(server())
	for clock.Now().Sub(start) < 6*time.Second {
		_ = h.Wait(ctx)
		taken++
		h.Settled()
		clock.Advance(100 * time.Millisecond)
		h.Observe(server())
	}
	if h.Rate < 18 || h.Rate > 22 || len(paces) == 0 || !strings.Contains(paces[0].Why, "--rate auto") {
		t.Fatalf("rate %v, paces %+v: want about 20/s learned", h.Rate, paces)
	}
	if got := levels.rate; got != h.Rate {
		t.Errorf("the level refills at %v, the pace at %v", got, h.Rate)
	}
	// The level stays at the burst while brellium sends at its rate: probe at twice the rate.
	rate := h.Rate
	for i := 0; i < 120; i++ {
		for j := 0; j < int(h.Rate/10); j++ {
			_ = h.Wait(ctx)
			h.Settled()
		}
		clock.Advance(100 * time.Millisecond)
		h.Observe(100)
	}
	if h.Rate < 2*rate || !strings.Contains(paces[len(paces)-1].Why, "stayed above half the burst") {
		t.Errorf("rate %v after windows at the burst, want at least %v; paces %+v", h.Rate, 2*rate, paces)
	}
	// Without Learn, nothing moves.
	h2 := &Headroom{Limiter: Off{}, Levels: NewMemLevels(5, 100, clock), Reserve: 10, Rate: 5, Burst: 100, Clock: clock}
	h2.Observe(20)
	for i := 0; i < 60; i++ {
		clock.Advance(100 * time.Millisecond)
		h2.Observe(20 + 2*i)
	}
	if h2.Rate != 5 {
		t.Errorf("without Learn the rate moved to %v", h2.Rate)
	}
}

// A 429 the budget did not foresee is said once, with the reserve it waits to bring back when
// there is one.
func TestHeadroomDrainSaysWhatItWaitsFor(t *testing.T) {
	for _, reserve := range []int{0, 10} {
		var paces []Pace
		h := &Headroom{Limiter: Off{}, Levels: &fakeLevels{}, Reserve: reserve, Rate: 5, Clock: rt.NewFakeClock(),
			OnPace: func(p Pace) { paces = append(paces, p) }}
		h.Drain()
		if len(paces) != 1 || strings.Contains(paces[0].Why, "reserve") != (reserve > 0) ||
			(reserve > 0 && !strings.Contains(paces[0].Why, "to bring back the reserve of 10")) {
			t.Errorf("reserve %d: paces %+v", reserve, paces)
		}
	}
}

// The window's arithmetic at its edges: a window ends at exactly paceWindow; others drawing
// exactly 1/s are drawing (a change of exactly a fifth of the rate, here 1/s, is reported).
func TestHeadroomWindowEdges(t *testing.T) {
	clock := rt.NewFakeClock()
	var paces []Pace
	h := &Headroom{Limiter: Off{}, Levels: &fakeLevels{}, Rate: 5, Clock: clock, OnPace: func(p Pace) { paces = append(paces, p) }}
	h.account(0, 50)
	clock.Advance(paceWindow)
	h.account(5, 50) // 5 drawn by others in 5 s
	if len(paces) != 1 || paces[0].Others != 1 || !strings.Contains(paces[0].Why, "others draw ~1.0/s") {
		t.Fatalf("paces %+v, want one report of others at 1.0/s", paces)
	}
	if formatRate(10) != "10" || formatRate(9.5) != "9.5" {
		t.Errorf("formatRate: %q %q", formatRate(10), formatRate(9.5))
	}
}

// A count of requests in flight that nothing updated for exactly the stale time still counts.
func TestLevelInFlightAtTheStaleEdge(t *testing.T) {
	at := time.Unix(1000, 0)
	l := Level{InFlight: 3, InFlightAt: at}
	if got := l.inFlight(at.Add(staleInFlight)); got != 3 {
		t.Errorf("at the edge: %v in flight, want 3", got)
	}
	if got := l.inFlight(at.Add(staleInFlight + time.Nanosecond)); got != 0 {
		t.Errorf("past it: %v in flight, want 0", got)
	}
}

// --rate auto's steps one at a time: a probe that drew the level down falls back; a raise
// needs no cap; a raise the cap stops is no raise (and no probe pending).
func TestHeadroomLearnSteps(t *testing.T) {
	h := &Headroom{Learn: true, Rate: 40, Burst: 100, probedFrom: 20, Limiter: Off{}, Levels: &fakeLevels{}}
	if why := h.learn(18, 40); h.Rate != 22 || !strings.Contains(why, "the level fell at 40/s") || h.probedFrom != 0 {
		t.Errorf("after a failed probe: rate %v, %q", h.Rate, why)
	}
	// A probe that drew no more than three quarters of its extra pace stands (here exactly 15 of
	// 20); others drawing hard without a probe lower nothing: a slower refill looks the same.
	for _, others := range []float64{14, 15} {
		h = &Headroom{Learn: true, Rate: 40, Burst: 100, probedFrom: 20, Limiter: Off{}, Levels: &fakeLevels{}}
		if why := h.learn(others, 40); h.Rate != 40 || why != "" || h.probedFrom != 0 {
			t.Errorf("a probe with others at %v/s: rate %v, %q", others, h.Rate, why)
		}
	}
	h = &Headroom{Learn: true, Rate: 40, Burst: 100, Limiter: Off{}, Levels: &fakeLevels{}}
	if why := h.learn(40, 40); h.Rate != 40 || why != "" {
		t.Errorf("others at 40/s, no probe: rate %v, %q", h.Rate, why)
	}
	h = &Headroom{Learn: true, Rate: 10, Burst: 100, lowest: 100, Limiter: Off{}, Levels: &fakeLevels{}}
	if why := h.learn(0, 10); h.Rate != 20 || h.probedFrom != 10 || !strings.Contains(why, "pacing at 20/s") {
		t.Errorf("a probe without a cap: rate %v, %q", h.Rate, why)
	}
	h = &Headroom{Learn: true, Rate: 10, MaxRate: 10, Burst: 100, lowest: 100, Limiter: Off{}, Levels: &fakeLevels{}}
	if why := h.learn(0, 10); h.Rate != 10 || why != "" || h.probedFrom != 0 {
		t.Errorf("at the cap: rate %v, probe from %v, %q", h.Rate, h.probedFrom, why)
	}
}
