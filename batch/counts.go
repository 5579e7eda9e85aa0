package batch

import (
	"fmt"
	"sync"

	"github.com/brellium/brellium/retry"
)

// Counts tallies a batch's lines by outcome, its requests and its 429s. It is safe for
// concurrent use.
type Counts struct {
	mu sync.Mutex
	t  Tally
}

// Tally is what Counts holds at one moment.
type Tally struct {
	// Total is the number of request lines when known in advance, else -1.
	Total       int64
	Done        int64
	Outcomes    map[string]int64
	Requests    int64
	RateLimited int64
}

// NewCounts returns empty counts for total lines (-1: unknown).
func NewCounts(total int64) *Counts {
	return &Counts{t: Tally{Total: total, Outcomes: map[string]int64{}}}
}

func (c *Counts) add(outcome string) {
	c.mu.Lock()
	c.t.Done++
	c.t.Outcomes[outcome]++
	c.mu.Unlock()
}

// sent counts the requests of one line.
func (c *Counts) sent(requests int) {
	c.mu.Lock()
	c.t.Requests += int64(requests)
	c.mu.Unlock()
}

// rateLimited counts one attempt refused with a 429.
func (c *Counts) rateLimited(refused bool) {
	if !refused {
		return
	}
	c.mu.Lock()
	c.t.RateLimited++
	c.mu.Unlock()
}

// Tally returns a copy of the counts now.
func (c *Counts) Tally() Tally {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.t
	t.Outcomes = make(map[string]int64, len(c.t.Outcomes))
	for k, v := range c.t.Outcomes {
		t.Outcomes[k] = v
	}
	return t
}

// precedence is the order in which the lines' outcomes decide a batch's outcome.
var precedence = []retry.Outcome{retry.Blocked, retry.UnknownOutcome, retry.AuthFailure, retry.Exhausted, retry.APIFailure}

// Failed says that Lines lines ended with Outcome, the first present of blocked,
// unknown_outcome, auth_error, exhausted and api_error; or, when every line that was sent is
// fine, that Lines lines were invalid (Outcome "invalid").
type Failed struct {
	Outcome string
	Lines   int64
}

func (e *Failed) Error() string {
	if e.Outcome == "invalid" {
		return fmt.Sprintf("%d invalid line%s (see their \"error\" in the output)", e.Lines, plural(e.Lines))
	}
	return fmt.Sprintf("%d line%s ended %s", e.Lines, plural(e.Lines), e.Outcome)
}

// Err is the batch's outcome: nil when every line is ok or skipped as done, else a *Failed for
// the first present of blocked, unknown_outcome, auth_error, exhausted, api_error, internal (a
// bug), usage (a body over --max-body) and invalid.
func (c *Counts) Err() error {
	t := c.Tally()
	for _, o := range precedence {
		if n := t.Outcomes[string(o)]; n > 0 {
			return &Failed{Outcome: string(o), Lines: n}
		}
	}
	for _, o := range []string{"internal", "usage", "invalid"} {
		if n := t.Outcomes[o]; n > 0 {
			return &Failed{Outcome: o, Lines: n}
		}
	}
	return nil
}

func plural(n int64) string {
	if n == 1 {
		return ""
	}
	return "s"
}
