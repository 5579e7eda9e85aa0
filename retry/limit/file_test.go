package limit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofrs/flock"

	rt "github.com/brellium/brellium/internal/retrytest"
	"github.com/brellium/brellium/retry"
)

func TestFileLimiterSharesOneBudgetBetweenInstances(t *testing.T) {
	clock := rt.NewFakeClock()
	path := filepath.Join(t.TempDir(), "budget.state")
	a, err := NewFileLimiter(path, 5, 3, clock)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, _ := NewFileLimiter(path, 5, 3, clock) // another process, as far as the file knows
	defer b.Close()
	for _, l := range []*FileLimiter{a, b, a} {
		if err := l.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if len(clock.Sleeps()) != 0 {
		t.Fatalf("the burst of 3 waited: %v", clock.Sleeps())
	}
	if err := b.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := clock.Sleeps(); len(got) != 1 || got[0] != 200*time.Millisecond {
		t.Fatalf("the fourth token, taken by the other instance, waited %v; want 200ms", got)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode %v", fi.Mode().Perm())
	}
}

func TestFileLimiterObserveAndDrainAreShared(t *testing.T) {
	clock := rt.NewFakeClock()
	path := filepath.Join(t.TempDir(), "budget.state")
	a, _ := NewFileLimiter(path, 5, 100, clock)
	b, _ := NewFileLimiter(path, 5, 100, clock)
	a.Observe(10)
	if got := b.Tokens(); got != 10 {
		t.Fatalf("tokens seen by the other instance after Observe(10) = %v", got)
	}
	b.Drain()
	if got := a.Tokens(); got != 0 {
		t.Fatalf("tokens after Drain = %v", got)
	}
}

func TestFileLimiterDamagedStateStartsEmpty(t *testing.T) {
	clock := rt.NewFakeClock()
	path := filepath.Join(t.TempDir(), "budget.state")
	if err := os.WriteFile(path, []byte("garbage\x00\xff"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := NewFileLimiter(path, 5, 100, clock)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Tokens(); got != 0 {
		t.Fatalf("a damaged state gave %v tokens, want 0", got)
	}
	if err := l.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := clock.Sleeps(); len(got) != 1 || got[0] != 200*time.Millisecond {
		t.Fatalf("wait after a reset = %v", got)
	}
}

func TestFileLimiterPassesOverAHeldLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "budget.state")
	held := flock.New(path + ".lock")
	if ok, err := held.TryLock(); !ok || err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()
	l, _ := NewFileLimiter(path, 5, 100, rt.NewFakeClock())
	l.LockWait = 30 * time.Millisecond
	var warned error
	l.OnWarn = func(err error) { warned = err }
	if err := l.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if warned == nil {
		t.Fatal("no warning that the lock was passed over")
	}
}

func TestFileLimiterRefusesATokenPastTheDeadline(t *testing.T) {
	clock := rt.NewFakeClock()
	l, _ := NewFileLimiter(filepath.Join(t.TempDir(), "s"), 0.1, 1, clock)
	_ = l.Wait(context.Background())
	ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(time.Second))
	defer cancel()
	var bw *retry.BudgetWaitError
	if err := l.Wait(ctx); !errors.As(err, &bw) {
		t.Fatalf("err = %v, want a BudgetWaitError", err)
	}
	if got := l.Tokens(); got < -1e-9 {
		t.Fatalf("a refused wait took a token: %v", got)
	}
}

// After an idle spell the shared bucket holds its burst, no more: the burst goes at once and
// the next token waits a refill.
func TestFileLimiterRefillStopsAtTheBurst(t *testing.T) {
	clock := rt.NewFakeClock()
	path := filepath.Join(t.TempDir(), "budget.state")
	l, _ := NewFileLimiter(path, 5, 3, clock)
	defer l.Close()
	_ = l.Wait(context.Background())
	clock.Advance(time.Hour)
	for i := 0; i < 3; i++ {
		if err := l.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if len(clock.Sleeps()) != 0 {
		t.Fatalf("the burst after an idle hour waited: %v", clock.Sleeps())
	}
	_ = l.Wait(context.Background())
	if got := clock.Sleeps(); len(got) != 1 || got[0] != 200*time.Millisecond {
		t.Fatalf("the token after the burst waited %v, want 200ms", got)
	}
}

// Time refills the shared bucket at the rate.
func TestFileLimiterRefillsWithTime(t *testing.T) {
	clock := rt.NewFakeClock()
	l, _ := NewFileLimiter(filepath.Join(t.TempDir(), "s"), 5, 10, clock)
	defer l.Close()
	for i := 0; i < 10; i++ {
		_ = l.Wait(context.Background())
	}
	clock.Advance(time.Second)
	if got := l.Tokens(); math.Abs(got-5) > 1e-6 {
		t.Fatalf("tokens a second after spending the burst = %v, want 5", got)
	}
}

// A state at exactly the burst is whole, not damaged; the record keeps its fixed size.
func TestFileLimiterStateRecord(t *testing.T) {
	clock := rt.NewFakeClock()
	path := filepath.Join(t.TempDir(), "s")
	rec := fmt.Sprintf("v1 100 %d", clock.Now().UnixNano())
	if err := os.WriteFile(path, []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	l, _ := NewFileLimiter(path, 5, 100, clock)
	defer l.Close()
	if got := l.Tokens(); got != 100 {
		t.Fatalf("a state of exactly the burst read as %v", got)
	}
	_ = l.Wait(context.Background())
	b, _ := os.ReadFile(path)
	if len(b) != stateSize || !strings.HasPrefix(string(b), "v2 99 ") || !strings.HasSuffix(strings.TrimSpace(string(b)), " 0 0 0 0") || b[len(b)-1] != '\n' {
		t.Fatalf("state record %q (%d bytes), want %d bytes starting v2 99 (a v1 record read, no level yet)", b, len(b), stateSize)
	}
	// The level goes into the record with the bucket, and comes back from it.
	if _, _, err := l.SetLevel(context.Background(), 42); err != nil {
		t.Fatal(err)
	}
	l2, _ := NewFileLimiter(path, 5, 100, clock)
	defer l2.Close()
	drawn, known, _ := l2.SetLevel(context.Background(), 40)
	b, _ = os.ReadFile(path)
	if !known || drawn != 2 || len(b) != stateSize || !strings.Contains(string(b), fmt.Sprintf(" 40 %d ", clock.Now().UnixNano())) {
		t.Fatalf("drawn %v (known %v), want 2 (42 then 40); record %q", drawn, known, b)
	}
}

// Crafted or damaged states start the bucket empty: never a wait longer than one refill, never
// pacing turned off.
func TestFileLimiterClampsItsState(t *testing.T) {
	clock := rt.NewFakeClock()
	for _, rec := range []string{
		"v1 -1000 %d", "v1 -1e15 %d", "v1 1e300 %d", "v1 101 %d", "v1 NaN %d", "v1 Inf %d", "v1 -Inf %d",
		"v2 -1 %d 5 1", "v2 101 %d 5 1",
		fmt.Sprintf("v1 50 %d", clock.Now().Add(10*time.Hour).UnixNano()) + "%.0d",
	} {
		path := filepath.Join(t.TempDir(), "s")
		_ = os.WriteFile(path, []byte(fmt.Sprintf(rec, clock.Now().UnixNano())), 0o600)
		c := rt.NewFakeClock()
		c.Set(clock.Now())
		l, err := NewFileLimiter(path, 5, 100, c)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := c.Sleeps(); len(got) != 1 || got[0] != 200*time.Millisecond {
			t.Errorf("state %q: the next token waited %v, want one refill (200ms)", rec, got)
		}
		l.Close()
	}
}

// The state file and its folder are reached through no link, and must be the user's own: a link
// planted there is refused (the caller paces the process alone), and its target is untouched.
func TestFileLimiterRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	_ = os.WriteFile(victim, []byte("precious"), 0o600)

	limiter := filepath.Join(dir, "limiter")
	_ = os.Mkdir(limiter, 0o700)
	state := filepath.Join(limiter, "k.state")
	_ = os.Symlink(victim, state)
	if l, err := NewFileLimiter(state, 5, 100, nil); err == nil {
		l.Close()
		t.Fatal("a state file that is a link was opened")
	}

	linked := filepath.Join(dir, "linked")
	_ = os.Symlink(t.TempDir(), linked)
	if l, err := NewFileLimiter(filepath.Join(linked, "k.state"), 5, 100, nil); err == nil {
		l.Close()
		t.Fatal("a limiter folder that is a link was used")
	}

	// A link in the lock's place: the update is passed over (pacing this process alone).
	ok := filepath.Join(dir, "ok")
	l, err := NewFileLimiter(filepath.Join(ok, "k.state"), 5, 100, rt.NewFakeClock())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_ = os.Symlink(victim, filepath.Join(ok, "k.state.lock"))
	var warned error
	l.OnWarn = func(err error) { warned = err }
	if err := l.Wait(context.Background()); err != nil || warned == nil {
		t.Fatalf("Wait with a linked lock: %v, warned %v", err, warned)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Fatalf("the link's target was written: %q", b)
	}
	// A loose folder of the user's own is made private.
	loose := filepath.Join(dir, "loose")
	_ = os.Mkdir(loose, 0o755)
	_ = os.Chmod(loose, 0o755)
	l2, err := NewFileLimiter(filepath.Join(loose, "k.state"), 5, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	l2.Close()
	if fi, _ := os.Stat(loose); fi.Mode().Perm() != 0o700 {
		t.Errorf("the limiter folder is %v, want 0700", fi.Mode().Perm())
	}
}

// Waiters that take tokens still to come queue one refill apart, across instances.
func TestFileLimiterQueuesWaiters(t *testing.T) {
	clock := rt.NewFakeClock()
	path := filepath.Join(t.TempDir(), "s")
	a, _ := NewFileLimiter(path, 5, 1, clock)
	defer a.Close()
	b, _ := NewFileLimiter(path, 5, 1, frozen{clock})
	defer b.Close()
	_ = a.Wait(context.Background()) // the burst of one
	// b takes the next token, 200ms ahead, and is still waiting for it: the debt stays.
	_ = b.Wait(context.Background())
	if got := a.Tokens(); got > -0.99 {
		t.Fatalf("tokens = %v: a waiter's token was not held", got)
	}
	_ = a.Wait(context.Background())
	if got := clock.Sleeps(); len(got) != 1 || got[0] != 400*time.Millisecond {
		t.Fatalf("the next waiter slept %v, want 400ms (after the first waiter's token)", got)
	}
}

// frozen is a clock whose sleeps pass no time: a waiter still asleep.
type frozen struct{ *rt.FakeClock }

func (frozen) Sleep(context.Context, time.Duration) error { return nil }

// The bucket's arithmetic at its edges: a bucket of one token gives it at once; a part of a
// token waits only for the rest; a debt up to a full burst and a minute ahead is kept, one
// further is damage; a level of exactly 0 is a level.
func TestFileLimiterEdges(t *testing.T) {
	ctx := context.Background()
	clock := rt.NewFakeClock()
	one, _ := NewFileLimiter(filepath.Join(t.TempDir(), "one"), 5, 1, clock)
	defer one.Close()
	if err := one.Wait(ctx); err != nil || len(clock.Sleeps()) != 0 {
		t.Fatalf("a burst of 1 waited %v (%v)", clock.Sleeps(), err)
	}

	clock = rt.NewFakeClock()
	half, _ := NewFileLimiter(filepath.Join(t.TempDir(), "half"), 5, 100, clock)
	defer half.Close()
	half.Drain()
	clock.Advance(100 * time.Millisecond) // half a token at 5/s
	if err := half.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if got := clock.Sleeps(); len(got) != 1 || got[0] != 100*time.Millisecond {
		t.Fatalf("half a token there: waited %v, want 100ms", got)
	}

	now := time.Now()
	for _, c := range []struct {
		ahead    time.Duration
		wantDebt bool
	}{{20*time.Second + 59*time.Second, true}, {20*time.Second + 61*time.Second, false}} {
		clock := rt.NewFakeClock()
		clock.Set(now)
		path := filepath.Join(t.TempDir(), "debt")
		rec := fmt.Sprintf("v1 0 %d", now.Add(c.ahead).UnixNano())
		_ = os.WriteFile(path, []byte(rec+strings.Repeat(" ", stateSize-1-len(rec))+"\n"), 0o600)
		l, _ := NewFileLimiter(path, 5, 100, clock) // a burst is 20 s of refill
		if got := l.Tokens(); (got < 0) != c.wantDebt {
			t.Errorf("a state %v ahead: %v tokens, debt kept %v", c.ahead, got, c.wantDebt)
		}
		l.Close()
	}

	clock = rt.NewFakeClock()
	path := filepath.Join(t.TempDir(), "level")
	a, _ := NewFileLimiter(path, 5, 100, clock)
	defer a.Close()
	b, _ := NewFileLimiter(path, 5, 100, clock)
	defer b.Close()
	_, _, _ = a.SetLevel(ctx, 0)
	if w, err := b.TakeLevel(ctx, 0); w != 200*time.Millisecond || err != nil {
		t.Fatalf("a level of 0 read back: wait %v (%v), want 200ms", w, err)
	}
}
