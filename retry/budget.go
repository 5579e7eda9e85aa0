package retry

import "sync"

// RetryBudget lets repeats after failures add at most Ratio of the requests sent, and never
// fewer than Min. 429s are paced by the limiter, not budgeted. It is safe for concurrent use.
type RetryBudget struct {
	Ratio float64
	Min   int

	mu      sync.Mutex
	sent    int
	retries int
}

// Sent counts one request sent.
func (b *RetryBudget) Sent() {
	b.mu.Lock()
	b.sent++
	b.mu.Unlock()
}

// AllowRetry takes one repeat if the budget has one.
func (b *RetryBudget) AllowRetry() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	limit := max(float64(b.Min), b.Ratio*float64(b.sent))
	if float64(b.retries+1) > limit {
		return false
	}
	b.retries++
	return true
}
