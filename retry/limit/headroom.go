package limit

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/brellium/brellium/retry"
)

// Level is the organization's bucket as the server last reported it (RateLimit-Remaining), less
// the tokens that the budget's users took since: N at At. A zero At is unknown. Off is how far
// the level was set above the report it came from (see observe); Drawn is the sum of what others
// drew, as every user of the level has seen it, for the estimate of their rate. InFlight counts the
// requests of every user that took a token of the level and have not ended, since InFlightAt.
type Level struct {
	N          float64
	At         time.Time
	Off        float64
	Drawn      float64
	InFlight   float64
	InFlightAt time.Time
}

// staleInFlight is how long a count of requests in flight that nothing updates is kept: a process
// that died with requests in flight leaves them counted that long at most.
const staleInFlight = time.Minute

// inFlight is the count of requests in flight at now.
func (l Level) inFlight(now time.Time) float64 {
	if now.Sub(l.InFlightAt) > staleInFlight {
		return 0
	}
	return l.InFlight
}

// settle is the level after one request in flight ended.
func (l Level) settle(now time.Time) Level {
	l.InFlight, l.InFlightAt = math.Max(0, l.inFlight(now)-1), now
	return l
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
		l.InFlight, l.InFlightAt = l.inFlight(now)+1, now
		return l, 0
	}
	n := l.Now(now, rate, burst)
	if need := float64(reserve) + 1 - n; need > 0 {
		return l, time.Duration(need / rate * float64(time.Second))
	}
	l.N, l.At, l.InFlight, l.InFlightAt = n-1, now, l.inFlight(now)+1, now
	return l, 0
}

// observe is the level after the server reported remaining at now, with what others drew since
// the last report (what the count did not foresee) added to Drawn. The report does not count the
// requests still in flight, which the count already took: they are taken off it. A lower report
// is then taken as it is: others drew, or the takes were more than counted. A higher one moves the
// level half way to it: a report can be older than the count (an answer that came late), so it is
// half believed, and a count that ran low still comes back within a few answers. The half not
// believed is kept (Off), so that the next report's surprise is not counted as others' draw twice.
func (l Level) observe(now time.Time, rate, burst float64, remaining int) Level {
	r := math.Min(float64(remaining), burst) // a server with a larger burst than ours: ours caps
	r = math.Max(r-l.inFlight(now), 0)
	next := Level{N: r, At: now, Drawn: l.Drawn, InFlight: l.InFlight, InFlightAt: l.InFlightAt}
	if !l.Known() {
		return next
	}
	before := l.Now(now, rate, burst)
	if r > before {
		next.N = before + (r-before)/2
	}
	next.Off, next.Drawn = next.N-r, l.Drawn+before-r-l.Off
	return next
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
	// Settle counts the end of a request that TakeLevel let through.
	Settle(ctx context.Context) error
}

// MemLevels is the level of one process.
type MemLevels struct {
	mu          sync.Mutex
	lvl         Level
	rate, burst float64
	clock       retry.Clock
}

// SetRate changes the refill (RateSetter).
func (m *MemLevels) SetRate(perSecond float64) {
	m.mu.Lock()
	m.rate = perSecond
	m.mu.Unlock()
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

// Settle counts the end of a request in flight.
func (m *MemLevels) Settle(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lvl = m.lvl.settle(m.clock.Now())
	return nil
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
	Burst   int
	Clock   retry.Clock
	// OnPace, when set, hears when the estimate of the others' draw changes.
	OnPace func(Pace)
	// Learn (--rate auto) raises Rate, the pace's and the level's, to the refill the reports
	// show: when the level grows faster than Rate refills it, to the rate it grew at; when it
	// stays high for a whole window while brellium sends at Rate, twice Rate, to probe, and back
	// to what the level allows when the probe drew it down. Otherwise it never lowers Rate: a
	// slower refill shows as others' draw, and the reserve keeps to it.
	Learn bool
	// MaxRate caps what Learn raises Rate to; 0 is no cap.
	MaxRate float64

	mu         sync.Mutex
	winStart   time.Time
	drawn0     float64 // Level.Drawn at winStart
	taken      int
	lowest     int     // the lowest level reported in the window
	probedFrom float64 // the rate before the last window's probe, 0 when there was none
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

// Settled counts the end of an attempt in the shared level (retry.Settler).
func (h *Headroom) Settled() { _ = h.Levels.Settle(context.Background()) }

// Observe lowers the pace to the server's level and re-anchors the shared level on it.
func (h *Headroom) Observe(remaining int) {
	h.Limiter.Observe(remaining)
	drawn, known, err := h.Levels.SetLevel(context.Background(), remaining)
	if err != nil || !known {
		return
	}
	h.account(drawn, remaining)
}

// Drain empties the pace and the level: the server refused a request.
func (h *Headroom) Drain() {
	h.Limiter.Drain()
	_, _, _ = h.Levels.SetLevel(context.Background(), 0)
	h.mu.Lock()
	first, rate := !h.refusedNow, h.Rate
	h.refusedNow = true
	h.mu.Unlock()
	if first && h.OnPace != nil {
		why := "a 429 although the budget allowed the request: others drew the organization's bucket empty; waiting for the refill"
		if h.Reserve > 0 {
			why += fmt.Sprintf(" to bring back the reserve of %d", h.Reserve)
		}
		h.OnPace(Pace{Rate: rate, Reserve: h.Reserve, Why: why})
	}
}

// account takes the sum of others' draw and the level reported, and when a window ends reports
// the others' rate if it changed (by a fifth of the rate, and by at least one request a second),
// and with Learn raises the rate to what the reports show.
func (h *Headroom) account(drawn float64, remaining int) {
	now := h.clock().Now()
	h.mu.Lock()
	if h.winStart.IsZero() {
		h.winStart, h.drawn0, h.lowest = now, drawn, remaining
	}
	h.lowest = min(h.lowest, remaining)
	el := now.Sub(h.winStart)
	if el < paceWindow {
		h.mu.Unlock()
		return
	}
	others := (drawn - h.drawn0) / el.Seconds() // below 0: the level grew faster than Rate refills it
	p := Pace{Others: math.Max(0, others), Own: float64(h.taken) / el.Seconds(), Rate: h.Rate, Reserve: h.Reserve}
	learned := h.learn(others, p.Own)
	h.winStart, h.drawn0, h.taken, h.lowest, h.refusedNow = now, drawn, 0, remaining, false
	// A window that changed the rate measured others against the old one: it says only that.
	changed := learned == "" && math.Abs(p.Others-h.reported) >= math.Max(1, h.Rate/5)
	if changed {
		h.reported = p.Others
	}
	rate := h.Rate
	h.mu.Unlock()
	if h.OnPace == nil {
		return
	}
	if learned != "" {
		h.OnPace(Pace{Others: p.Others, Own: p.Own, Rate: rate, Reserve: h.Reserve, Why: learned})
	}
	if !changed {
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

// RateSetter is a pace or a level whose rate can change (--rate auto).
type RateSetter interface{ SetRate(perSecond float64) }

// learn raises the rate at the end of a window, with h.mu held, and says why ("" when it did
// not): others is the window's unforeseen draw a second (below 0 when the level grew faster than
// the rate refills it) and own brellium's rate.
func (h *Headroom) learn(others, own float64) string {
	if !h.Learn {
		return ""
	}
	old, next, why := h.Rate, h.Rate, ""
	if from := h.probedFrom; from > 0 {
		h.probedFrom = 0
		if others > 0.75*(h.Rate-from) {
			// The probe's extra pace drew the level down: the refill is nearer the old rate.
			next = math.Max(h.Rate-others, from)
			h.setRate(next)
			return fmt.Sprintf("the level fell at %s/s: the refill is below it; pacing at %s/s (--rate auto)", formatRate(old), formatRate(next))
		}
	}
	switch {
	case -others > math.Max(0.5, h.Rate/10) && h.lowest < h.Burst:
		next = h.Rate - others
		why = "the level grew faster than %s/s refills it"
	case h.lowest >= h.Burst/2 && own >= 0.8*h.Rate:
		next = 2 * h.Rate
		why = "the level stayed above half the burst while brellium sent at %s/s"
		h.probedFrom = old
	default:
		return ""
	}
	if h.MaxRate > 0 {
		next = math.Min(next, h.MaxRate)
	}
	if next <= old {
		h.probedFrom = 0
		return ""
	}
	h.setRate(next)
	return fmt.Sprintf(why+": pacing at %s/s (--rate auto)", formatRate(old), formatRate(next))
}

// setRate sets the rate of the headroom, its pace and its level.
func (h *Headroom) setRate(r float64) {
	h.Rate = r
	for _, x := range []any{h.Limiter, h.Levels} {
		if s, ok := x.(RateSetter); ok {
			s.SetRate(r)
		}
	}
}

func formatRate(r float64) string {
	if r >= 10 {
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.1f", r)
}
