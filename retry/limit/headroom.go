package limit

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brellium/brellium/retry"
)

// Level is the organization's bucket as the server last reported it (RateLimit-Remaining), less
// the tokens that the budget's users took since: N at At. A zero At is unknown. Off is how far
// the level was set above the report it came from (see observe); Drawn is the sum of what others
// drew, as every user of the level has seen it, for the estimate of their rate.
type Level struct {
	N     float64
	At    time.Time
	Off   float64
	Drawn float64
}

// Known reports whether the server has reported a level.
func (l Level) Known() bool { return !l.At.IsZero() }

// Now projects the level to now: refilled at rate since At, at most burst.
func (l Level) Now(now time.Time, rate, burst float64) float64 {
	if el := now.Sub(l.At).Seconds(); el > 0 {
		return math.Min(burst, l.N+el*rate)
	}
	return l.N
}

// take is the level after one token is taken at now, when the projected level stays at or above
// reserve; else the wait until it would (at rate, counting only the refill: others may draw more).
func (l Level) take(now time.Time, rate, burst float64, reserve int) (Level, time.Duration) {
	if !l.Known() {
		return l, 0
	}
	n := l.Now(now, rate, burst)
	if need := float64(reserve) + 1 - n; need > 0 {
		return l, time.Duration(need / rate * float64(time.Second))
	}
	return Level{N: n - 1, At: now, Off: l.Off, Drawn: l.Drawn}, 0
}

// observe is the level after the server reported remaining at now, with what others drew since
// the last report (what the count did not foresee) added to Drawn. A lower report is taken as it is: others drew,
// or the takes were more than counted. A higher one moves the level half way to it: an answer
// reports the level before the requests still in flight, so a report above the count is half
// believed, and a count that ran low still comes back within a few answers. The half not believed
// is kept (Off), so that the next report's surprise is not counted as others' draw twice.
func (l Level) observe(now time.Time, rate, burst float64, remaining int) Level {
	r := math.Min(float64(remaining), burst) // a server with a larger burst than ours: ours caps
	r = math.Max(r, 0)
	if !l.Known() {
		return Level{N: r, At: now, Drawn: l.Drawn}
	}
	before := l.Now(now, rate, burst)
	n := r
	if r > before {
		n = before + (r-before)/2
	}
	return Level{N: n, At: now, Off: n - r, Drawn: l.Drawn + before - r - l.Off}
}

// Levels keeps the organization's level where every user of a budget sees it: in memory for one
// process, in the limiter's state file for the machine, in Redis for several machines.
type Levels interface {
	// TakeLevel takes one token of the level when it stays at or above reserve after the take
	// (an unknown level lets every take through), and returns 0; else it takes nothing and
	// returns the wait before the level would allow it.
	TakeLevel(ctx context.Context, reserve int) (time.Duration, error)
	// SetLevel records the level the server reported, and returns the sum of what others drew
	// (Level.Drawn); known is false when there was no level before.
	SetLevel(ctx context.Context, remaining int) (drawn float64, known bool, err error)
}

// MemLevels is the level of one process.
type MemLevels struct {
	mu          sync.Mutex
	lvl         Level
	rate, burst float64
	clock       retry.Clock
}

// NewMemLevels returns an unknown level that refills at perSecond up to burst.
func NewMemLevels(perSecond float64, burst int, clock retry.Clock) *MemLevels {
	if clock == nil {
		clock = retry.SystemClock{}
	}
	return &MemLevels{rate: perSecond, burst: float64(burst), clock: clock}
}

// TakeLevel takes one token of the level when it stays at or above reserve.
func (m *MemLevels) TakeLevel(_ context.Context, reserve int) (time.Duration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var wait time.Duration
	m.lvl, wait = m.lvl.take(m.clock.Now(), m.rate, m.burst, reserve)
	return wait, nil
}

// SetLevel records the level the server reported.
func (m *MemLevels) SetLevel(_ context.Context, remaining int) (float64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	known := m.lvl.Known()
	m.lvl = m.lvl.observe(m.clock.Now(), m.rate, m.burst, remaining)
	return m.lvl.Drawn, known, nil
}

// Pace is a change in what brellium sees of the organization's budget, for the log.
type Pace struct {
	// Others is the estimated draw of the organization's other users, per second, over the
	// last window; Own is brellium's (this process's) rate over it.
	Others, Own float64
	// Rate and Reserve are the documented refill and the reserve kept.
	Rate    float64
	Reserve int
	// Why says what changed.
	Why string
}

// paceWindow is how often the estimate of the others' draw is renewed.
const paceWindow = 5 * time.Second

// Headroom paces with a limiter (the documented rate and burst) and keeps the organization's
// level, as the server reports it in RateLimit-Remaining, at or above Reserve: a request that
// would take the level below it waits for the refill. Every answer re-anchors the level, so
// what others draw shows at once and brellium's pace falls to what the refill leaves; when they
// stop, it rises back. The level is shared through Levels by every user of the budget, so
// processes (and machines, with Redis) keep one reserve and adapt as one. Reserve 0 waits only
// for an empty bucket.
type Headroom struct {
	retry.Limiter
	Levels  Levels
	Reserve int
	Rate    float64
	Clock   retry.Clock
	// OnPace, when set, hears when the estimate of the others' draw changes.
	OnPace func(Pace)

	// inflight counts this process's requests that took a token and have not ended.
	inflight atomic.Int64

	mu         sync.Mutex
	winStart   time.Time
	drawn0     float64 // Level.Drawn at winStart
	taken      int
	reported   float64
	refusedNow bool
}

func (h *Headroom) clock() retry.Clock {
	if h.Clock == nil {
		return retry.SystemClock{}
	}
	return h.Clock
}

// Wait takes a token of the pace, then one of the level above the reserve, waiting for each.
// The level is advice: when its store fails, the pace alone decides.
func (h *Headroom) Wait(ctx context.Context) error {
	if err := h.Limiter.Wait(ctx); err != nil {
		return err
	}
	clock := h.clock()
	for {
		wait, err := h.Levels.TakeLevel(ctx, h.Reserve)
		if err != nil || wait <= 0 {
			h.mu.Lock()
			h.taken++
			h.mu.Unlock()
			h.inflight.Add(1)
			return nil
		}
		if deadline, ok := ctx.Deadline(); ok && clock.Now().Add(wait).After(deadline) {
			return &retry.BudgetWaitError{Wait: wait, Left: max(deadline.Sub(clock.Now()), 0)}
		}
		if err := clock.Sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// Settled counts the end of an attempt (retry.Settler).
func (h *Headroom) Settled() {
	if h.inflight.Add(-1) < 0 {
		h.inflight.Store(0)
	}
}

// Observe lowers the pace to the server's level and re-anchors the shared level on it. The
// report does not count this process's requests still in flight (taken before the answer came,
// after the request it answers): they are taken off it.
func (h *Headroom) Observe(remaining int) {
	remaining = max(0, remaining-int(h.inflight.Load()))
	h.Limiter.Observe(remaining)
	drawn, known, err := h.Levels.SetLevel(context.Background(), remaining)
	if err != nil || !known {
		return
	}
	h.account(drawn)
}

// Drain empties the pace and the level: the server refused a request.
func (h *Headroom) Drain() {
	h.Limiter.Drain()
	_, _, _ = h.Levels.SetLevel(context.Background(), 0)
	h.mu.Lock()
	first := !h.refusedNow
	h.refusedNow = true
	h.mu.Unlock()
	if first && h.OnPace != nil {
		why := "a 429 although the budget allowed the request: others drew the organization's bucket empty; waiting for the refill"
		if h.Reserve > 0 {
			why += fmt.Sprintf(" to bring back the reserve of %d", h.Reserve)
		}
		h.OnPace(Pace{Rate: h.Rate, Reserve: h.Reserve, Why: why})
	}
}

// account takes the sum of others' draw, and reports their rate when a window ends and it
// changed: by a fifth of the rate, and by at least one request a second.
func (h *Headroom) account(drawn float64) {
	now := h.clock().Now()
	h.mu.Lock()
	if h.winStart.IsZero() {
		h.winStart, h.drawn0 = now, drawn
	}
	el := now.Sub(h.winStart)
	if el < paceWindow {
		h.mu.Unlock()
		return
	}
	p := Pace{Others: math.Max(0, (drawn-h.drawn0)/el.Seconds()), Own: float64(h.taken) / el.Seconds(), Rate: h.Rate, Reserve: h.Reserve}
	h.winStart, h.drawn0, h.taken, h.refusedNow = now, drawn, 0, false
	changed := math.Abs(p.Others-h.reported) >= math.Max(1, h.Rate/5)
	if changed {
		h.reported = p.Others
	}
	h.mu.Unlock()
	if !changed || h.OnPace == nil {
		return
	}
	if p.Others < 1 {
		p.Why = fmt.Sprintf("others stopped drawing: back to the organization's %s/s", formatRate(p.Rate))
	} else {
		p.Why = fmt.Sprintf("others draw ~%s/s of the organization's %s/s: keeping %d in reserve, this process sends ~%s/s",
			formatRate(p.Others), formatRate(p.Rate), p.Reserve, formatRate(p.Own))
	}
	h.OnPace(p)
}

func formatRate(r float64) string {
	if r >= 10 {
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.1f", r)
}
