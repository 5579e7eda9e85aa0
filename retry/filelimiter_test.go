package retry

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gofrs/flock"
)

func TestFileLimiterSharesOneBudgetBetweenInstances(t *testing.T) {
	clock := newFakeClock()
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
	clock := newFakeClock()
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
	clock := newFakeClock()
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
	l, _ := NewFileLimiter(path, 5, 100, newFakeClock())
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
	clock := newFakeClock()
	l, _ := NewFileLimiter(filepath.Join(t.TempDir(), "s"), 0.1, 1, clock)
	_ = l.Wait(context.Background())
	ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(time.Second))
	defer cancel()
	var bw *BudgetWaitError
	if err := l.Wait(ctx); !errors.As(err, &bw) {
		t.Fatalf("err = %v, want a BudgetWaitError", err)
	}
	if got := l.Tokens(); got < -1e-9 {
		t.Fatalf("a refused wait took a token: %v", got)
	}
}
