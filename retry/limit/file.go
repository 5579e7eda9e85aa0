package limit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/brellium/brellium/internal/safefile"
	"github.com/brellium/brellium/retry"
)

// FileLimiter is a token bucket whose state lives in a small file, updated under an exclusive
// file lock (github.com/gofrs/flock), so every process on the machine that uses the same file
// shares one budget: sequential shell calls and parallel workers alike.
//
// The state is tokens in [0, burst] and the time they were counted, which runs ahead of the
// clock while waiters have taken tokens still to come (a debt of at most maxDebt). A missing
// file starts full; a damaged one (anything else) starts empty: the safe side, since other
// processes may have just spent the budget. The file and its folder must be the user's own
// and private, and are never reached through a link. A lock held by a process that died is
// released by the kernel; a lock that cannot be had within LockWait (a stopped process holds
// it) is passed over: the limiter then paces this process alone, with an in-process bucket,
// and reports it to OnWarn.
type FileLimiter struct {
	path     string
	rate     float64
	burst    float64
	clock    retry.Clock
	lock     *safefile.Lock
	file     *os.File
	fallback *Bucket
	// LockWait caps the wait for the lock.
	LockWait time.Duration
	// OnWarn, when set, hears about a lock passed over.
	OnWarn func(error)

	mu sync.Mutex // one process-side user of the file at a time
}

// stateSize is the fixed size of the state record, so updates never truncate.
const stateSize = 192

// NewFileLimiter opens (or creates, mode 0600) the state file at path for a bucket of burst
// tokens refilling at perSecond. A nil clock is the system clock.
func NewFileLimiter(path string, perSecond float64, burst int, clock retry.Clock) (*FileLimiter, error) {
	if clock == nil {
		clock = retry.SystemClock{}
	}
	if err := safefile.EnsureDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("limiter state folder: %w", err)
	}
	f, err := safefile.OpenPrivate(path, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, fmt.Errorf("limiter state: %w", err)
	}
	return &FileLimiter{path: path, rate: perSecond, burst: float64(burst), clock: clock,
		lock: safefile.NewLock(path + ".lock"), file: f, fallback: NewBucket(perSecond, burst, clock),
		LockWait: 2 * time.Second}, nil
}

// SetRate changes the refill (RateSetter); the in-process fallback's too.
func (l *FileLimiter) SetRate(perSecond float64) {
	l.mu.Lock()
	l.rate = perSecond
	l.mu.Unlock()
	l.fallback.SetRate(perSecond)
}

// Close releases the state file.
func (l *FileLimiter) Close() error {
	_ = l.lock.Close()
	return l.file.Close()
}

// state is the bucket: tokens in [0, burst] at time last; a last ahead of the clock is a debt:
// tokens taken that come only then. lvl is the organization's level (Headroom's), shared too.
type state struct {
	tokens float64
	last   time.Time
	lvl    Level
}

// maxDebt is how far ahead of the clock a state's time may be: the tokens of a full burst and a
// minute more. A state further ahead is damaged.
func (l *FileLimiter) maxDebt() time.Duration {
	return time.Duration(l.burst/l.rate*float64(time.Second)) + time.Minute
}

// update runs fn on the bucket's state under the file lock and writes back what it returns.
func (l *FileLimiter) update(ctx context.Context, fn func(s state, now time.Time) state) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	lctx, cancel := context.WithTimeout(ctx, l.LockWait)
	defer cancel()
	if err := l.lock.Acquire(lctx, time.Millisecond); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("the limiter lock %s.lock was not free within %s", l.path, l.LockWait)
	}
	defer l.lock.Release()
	now := l.clock.Now()
	s := l.read(now)
	// Refill up to the burst, from the end of any debt.
	if el := now.Sub(s.last).Seconds(); el > 0 {
		s.tokens = math.Min(l.burst, s.tokens+el*l.rate)
		s.last = now
	}
	return l.write(fn(s, now))
}

func (l *FileLimiter) read(now time.Time) state {
	buf := make([]byte, stateSize)
	n, err := l.file.ReadAt(buf, 0)
	if n == 0 && (err == nil || errors.Is(err, io.EOF)) {
		return state{tokens: l.burst, last: now} // a new bucket starts full
	}
	var (
		tokens, level, off, drawn, inflight float64
		nanos, at, inflightAt               int64
	)
	rec := strings.TrimSpace(string(buf[:n]))
	_, err = fmt.Sscanf(rec, "v2 %g %d %g %d %g %g %g %d", &tokens, &nanos, &level, &at, &off, &drawn, &inflight, &inflightAt)
	if err != nil {
		// A record of an earlier version: no level.
		level, at, off, drawn, inflight, inflightAt = 0, 0, 0, 0, 0, 0
		_, err = fmt.Sscanf(rec, "v1 %g %d", &tokens, &nanos)
	}
	if err != nil || math.IsNaN(tokens) || tokens < 0 || tokens > l.burst {
		return state{tokens: 0, last: now} // damaged: start empty
	}
	last := time.Unix(0, nanos)
	if last.After(now.Add(l.maxDebt())) {
		return state{tokens: 0, last: now} // a debt no waiter could have run up
	}
	s := state{tokens: tokens, last: last}
	if at != 0 && level >= 0 && level <= l.burst && off >= -l.burst && off <= 0 && !math.IsInf(drawn, 0) && !math.IsNaN(drawn) &&
		!time.Unix(0, at).After(now.Add(time.Minute)) {
		s.lvl = Level{N: level, At: time.Unix(0, at), Off: off, Drawn: drawn}
		if inflight > 0 && inflight <= 1e6 && inflightAt != 0 {
			s.lvl.InFlight, s.lvl.InFlightAt = inflight, time.Unix(0, inflightAt)
		}
	}
	return s
}

func (l *FileLimiter) write(s state) error {
	var at, inflightAt int64
	if s.lvl.Known() {
		at = s.lvl.At.UnixNano()
	}
	if !s.lvl.InFlightAt.IsZero() {
		inflightAt = s.lvl.InFlightAt.UnixNano()
	}
	rec := fmt.Sprintf("v2 %.9g %d %.9g %d %.9g %.12g %.9g %d", s.tokens, s.last.UnixNano(), s.lvl.N, at, s.lvl.Off, s.lvl.Drawn,
		s.lvl.InFlight, inflightAt)
	rec += strings.Repeat(" ", stateSize-1-len(rec)) + "\n"
	if _, err := l.file.WriteAt([]byte(rec), 0); err != nil {
		return fmt.Errorf("limiter state: %w", err)
	}
	return nil
}

// Wait takes one token, waiting for it when the shared bucket is empty; a token that comes after
// ctx's deadline is not taken.
func (l *FileLimiter) Wait(ctx context.Context) error {
	var wait time.Duration
	var budgetErr error
	err := l.update(ctx, func(s state, now time.Time) state {
		if s.tokens >= 1 {
			s.tokens--
			return s
		}
		// Take the next token to come: after any debt, when the part already there is whole.
		at := s.last.Add(time.Duration((1 - s.tokens) / l.rate * float64(time.Second)))
		wait = at.Sub(now)
		if deadline, ok := ctx.Deadline(); ok && at.After(deadline) {
			budgetErr = &retry.BudgetWaitError{Wait: wait, Left: max(deadline.Sub(now), 0)}
			return s
		}
		return state{tokens: 0, last: at, lvl: s.lvl}
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if l.OnWarn != nil {
			l.OnWarn(err)
		}
		return l.fallback.Wait(ctx)
	}
	if budgetErr != nil {
		return budgetErr
	}
	if wait > 0 {
		return l.clock.Sleep(ctx, wait)
	}
	return nil
}

// Observe lowers the shared bucket to remaining tokens when it holds more.
func (l *FileLimiter) Observe(remaining int) {
	_ = l.update(context.Background(), func(s state, _ time.Time) state {
		s.tokens = math.Min(s.tokens, float64(remaining))
		return s
	})
}

// Drain empties the shared bucket.
func (l *FileLimiter) Drain() {
	_ = l.update(context.Background(), func(s state, _ time.Time) state {
		s.tokens = math.Min(s.tokens, 0)
		return s
	})
}

// Tokens returns the tokens in the shared bucket now; negative while waiters hold tokens still
// to come.
func (l *FileLimiter) Tokens() float64 {
	var t float64
	_ = l.update(context.Background(), func(s state, now time.Time) state {
		t = s.tokens - math.Max(0, s.last.Sub(now).Seconds())*l.rate
		return s
	})
	return t
}

// TakeLevel takes one token of the shared level when it stays at or above reserve (Levels).
func (l *FileLimiter) TakeLevel(ctx context.Context, reserve int) (time.Duration, error) {
	var wait time.Duration
	err := l.update(ctx, func(s state, now time.Time) state {
		s.lvl, wait = s.lvl.take(now, l.rate, l.burst, reserve)
		return s
	})
	return wait, err
}

// Settle counts the end of a request in flight in the shared state (Levels).
func (l *FileLimiter) Settle(ctx context.Context) error {
	return l.update(ctx, func(s state, now time.Time) state {
		s.lvl = s.lvl.settle(now)
		return s
	})
}

// SetLevel records the level the server reported in the shared state (Levels).
func (l *FileLimiter) SetLevel(ctx context.Context, remaining int) (drawn float64, known bool, err error) {
	err = l.update(ctx, func(s state, now time.Time) state {
		known = s.lvl.Known()
		s.lvl = s.lvl.observe(now, l.rate, l.burst, remaining)
		drawn = s.lvl.Drawn
		return s
	})
	return drawn, known, err
}
