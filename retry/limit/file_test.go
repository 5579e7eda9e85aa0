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
	if len(b) != stateSize || !strings.HasPrefix(string(b), "v1 99 ") || b[len(b)-1] != '\n' {
		t.Fatalf("state record %q (%d bytes), want %d bytes starting v1 99", b, len(b), stateSize)
	}
}
