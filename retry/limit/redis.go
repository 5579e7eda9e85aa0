package limit

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/brellium/brellium/request"
	"github.com/brellium/brellium/retry"
)

// RedisLimiter shares one budget between machines: GCRA in Redis (github.com/go-redis/redis_rate),
// one key per origin and credential identity. When Redis stops answering mid-run it falls back to
// Fallback (the machine-wide limiter) and tells OnWarn once, rather than dropping pacing; it goes
// back to Redis when Redis answers again.
type RedisLimiter struct {
	rdb      *redis.Client
	lim      *redis_rate.Limiter
	key      string
	limit    redis_rate.Limit
	clock    retry.Clock
	Fallback retry.Limiter
	OnWarn   func(error)

	mu     sync.Mutex
	warned bool
	down   time.Time
}

// RedisLimit turns a rate and burst into redis_rate's integer Limit.
func RedisLimit(perSecond float64, burst int) redis_rate.Limit {
	if perSecond == math.Trunc(perSecond) && perSecond >= 1 {
		return redis_rate.Limit{Rate: int(perSecond), Burst: burst, Period: time.Second}
	}
	// A fractional rate: count in thousandths.
	return redis_rate.Limit{Rate: int(math.Round(perSecond * 1000)), Burst: burst, Period: 1000 * time.Second}
}

// quietLogger silences go-redis's own log lines: the limiter reports Redis failures itself,
// once, through OnWarn.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// NewRedisLimiter connects to rawURL (redis://HOST:PORT/DB) and checks that Redis answers.
func NewRedisLimiter(ctx context.Context, rawURL, key string, perSecond float64, burst int, clock retry.Clock) (*RedisLimiter, error) {
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("--limiter %s: %v", request.RedactURL(rawURL), err)
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 2*time.Second, 2*time.Second, 2*time.Second
	opt.MaxRetries = 1
	redis.SetLogger(quietLogger{})
	rdb := redis.NewClient(opt)
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("--limiter %s: Redis does not answer: %v", request.RedactURL(rawURL), err)
	}
	if clock == nil {
		clock = retry.SystemClock{}
	}
	return &RedisLimiter{rdb: rdb, lim: redis_rate.NewLimiter(rdb), key: "brellium:" + key,
		limit: RedisLimit(perSecond, burst), clock: clock, Fallback: NewBucket(perSecond, burst, clock)}, nil
}

// Close closes the connection to Redis.
func (l *RedisLimiter) Close() error { return l.rdb.Close() }

// usable reports whether to try Redis now: always, except for a second after it failed.
func (l *RedisLimiter) usable() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.down.IsZero() || l.clock.Now().Sub(l.down) > time.Second
}

func (l *RedisLimiter) failed(err error) {
	l.mu.Lock()
	l.down = l.clock.Now()
	warn := !l.warned
	l.warned = true
	l.mu.Unlock()
	if warn && l.OnWarn != nil {
		l.OnWarn(fmt.Errorf("Redis stopped answering (%v): pacing with the local limiter until it is back", err))
	}
}

func (l *RedisLimiter) recovered() {
	l.mu.Lock()
	l.down = time.Time{}
	l.mu.Unlock()
}

// Wait takes one token from the shared budget, waiting as GCRA says.
func (l *RedisLimiter) Wait(ctx context.Context) error {
	for {
		if !l.usable() {
			return l.Fallback.Wait(ctx)
		}
		res, err := l.lim.Allow(ctx, l.key, l.limit)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			l.failed(err)
			return l.Fallback.Wait(ctx)
		}
		l.recovered()
		if res.Allowed > 0 {
			return nil
		}
		wait := res.RetryAfter
		if deadline, ok := ctx.Deadline(); ok && l.clock.Now().Add(wait).After(deadline) {
			return &retry.BudgetWaitError{Wait: wait, Left: max(deadline.Sub(l.clock.Now()), 0)}
		}
		if err := l.clock.Sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// Observe lowers the shared budget to remaining tokens when it holds more.
func (l *RedisLimiter) Observe(remaining int) {
	l.Fallback.Observe(remaining)
	if !l.usable() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	res, err := l.lim.AllowN(ctx, l.key, l.limit, 0)
	if err != nil {
		l.failed(err)
		return
	}
	if excess := res.Remaining - remaining; excess > 0 {
		_, _ = l.lim.AllowAtMost(ctx, l.key, l.limit, excess)
	}
}

// Drain empties the shared budget.
func (l *RedisLimiter) Drain() {
	l.Fallback.Drain()
	if !l.usable() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := l.lim.AllowAtMost(ctx, l.key, l.limit, l.limit.Burst); err != nil {
		l.failed(err)
	}
}
