package limit

import (
	"context"
	"fmt"
	"math"
	"strconv"
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
	rate     float64
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
		limit: RedisLimit(perSecond, burst), rate: perSecond, clock: clock, Fallback: NewBucket(perSecond, burst, clock)}, nil
}

// params are the limit and the rate, which SetRate may change.
func (l *RedisLimiter) params() (redis_rate.Limit, float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit, l.rate
}

// SetRate changes the refill (RateSetter), and the fallback's.
func (l *RedisLimiter) SetRate(perSecond float64) {
	l.mu.Lock()
	l.rate, l.limit = perSecond, RedisLimit(perSecond, l.limit.Burst)
	l.mu.Unlock()
	if s, ok := l.Fallback.(RateSetter); ok {
		s.SetRate(perSecond)
	}
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
		limit, _ := l.params()
		res, err := l.lim.Allow(ctx, l.key, limit)
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
	limit, _ := l.params()
	res, err := l.lim.AllowN(ctx, l.key, limit, 0)
	if err != nil {
		l.failed(err)
		return
	}
	if excess := res.Remaining - remaining; excess > 0 {
		_, _ = l.lim.AllowAtMost(ctx, l.key, limit, excess)
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
	limit, _ := l.params()
	if _, err := l.lim.AllowAtMost(ctx, l.key, limit, limit.Burst); err != nil {
		l.failed(err)
	}
}

// levelScript keeps the organization's level (Headroom's) in a Redis hash, updated atomically:
// the arithmetic of Level.take and Level.observe. KEYS[1] is the hash; ARGV is the operation
// ("take", "set" or "settle"), now in milliseconds, rate a second, burst, then the reserve or the level
// reported. "take" answers the wait in seconds ("0" when taken); "set" the sum of what others
// drew (Level.Drawn; "" when there was no level).
var levelScript = redis.NewScript(`
local n = tonumber(redis.call('HGET', KEYS[1], 'n'))
local at = tonumber(redis.call('HGET', KEYS[1], 'at'))
local off = tonumber(redis.call('HGET', KEYS[1], 'o')) or 0
local drawn = tonumber(redis.call('HGET', KEYS[1], 'd')) or 0
local fl = tonumber(redis.call('HGET', KEYS[1], 'f')) or 0
local flat = tonumber(redis.call('HGET', KEYS[1], 'fat')) or 0
local now, rate, burst, arg = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
if now - flat > 60000 then fl = 0 end
local level = nil
if n and at then
  level = n
  if now > at then level = math.min(burst, n + (now - at) / 1000 * rate) end
end
local ttl = math.ceil(burst / rate * 1000) + 60000
if ARGV[1] == 'settle' then
  redis.call('HSET', KEYS[1], 'f', tostring(math.max(0, fl - 1)), 'fat', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ttl)
  return '0'
end
if ARGV[1] == 'take' then
  if not level then
    redis.call('HSET', KEYS[1], 'f', tostring(fl + 1), 'fat', ARGV[2])
    redis.call('PEXPIRE', KEYS[1], ttl)
    return '0'
  end
  local need = arg + 1 - level
  if need > 0 then return tostring(need / rate) end
  redis.call('HSET', KEYS[1], 'n', tostring(level - 1), 'at', ARGV[2], 'f', tostring(fl + 1), 'fat', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ttl)
  return '0'
end
local r = math.max(0, math.min(arg, burst) - fl)
local next = r
if level and r > level then next = level + (r - level) / 2 end
if level then drawn = drawn + level - r - off end
redis.call('HSET', KEYS[1], 'n', tostring(next), 'at', ARGV[2], 'o', tostring(next - r), 'd', tostring(drawn))
redis.call('PEXPIRE', KEYS[1], ttl)
if level then return tostring(drawn) end
return ''
`)

func (l *RedisLimiter) level(ctx context.Context, op string, arg int) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	now := float64(l.clock.Now().UnixNano()) / 1e6
	limit, rate := l.params()
	return levelScript.Run(ctx, l.rdb, []string{l.key + ":level"}, op, strconv.FormatFloat(now, 'f', 3, 64),
		strconv.FormatFloat(rate, 'g', -1, 64), limit.Burst, arg).Text()
}

// TakeLevel takes one token of the level shared in Redis (Levels); while Redis is down, the
// fallback's.
func (l *RedisLimiter) TakeLevel(ctx context.Context, reserve int) (time.Duration, error) {
	if fb, ok := l.Fallback.(Levels); ok && !l.usable() {
		return fb.TakeLevel(ctx, reserve)
	}
	out, err := l.level(ctx, "take", reserve)
	if err != nil {
		return 0, err
	}
	secs, err := strconv.ParseFloat(out, 64)
	if err != nil || secs < 0 || secs > 3600 {
		return 0, fmt.Errorf("the level in Redis: %q", out)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// Settle counts the end of a request in flight, in Redis (Levels).
func (l *RedisLimiter) Settle(ctx context.Context) error {
	if fb, ok := l.Fallback.(Levels); ok && !l.usable() {
		return fb.Settle(ctx)
	}
	_, err := l.level(ctx, "settle", 0)
	return err
}

// SetLevel records the level the server reported, in Redis (Levels).
func (l *RedisLimiter) SetLevel(ctx context.Context, remaining int) (float64, bool, error) {
	fb, hasFallback := l.Fallback.(Levels)
	if hasFallback && !l.usable() {
		return fb.SetLevel(ctx, remaining)
	}
	if hasFallback {
		_, _, _ = fb.SetLevel(ctx, remaining) // kept current for a fall back, as Observe keeps its bucket
	}
	out, err := l.level(ctx, "set", remaining)
	if err != nil || out == "" {
		return 0, false, err
	}
	drawn, err := strconv.ParseFloat(out, 64)
	return drawn, err == nil, err
}
