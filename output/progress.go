package output

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Tally counts a batch's lines by outcome, and its 429s.
type Tally struct {
	mu sync.Mutex
	// Total is the number of request lines when known in advance, else -1.
	Total       int64
	Done        int64
	Outcomes    map[string]int64
	RateLimited int64
	Requests    int64
}

// NewTally returns an empty tally for total lines (-1: unknown).
func NewTally(total int64) *Tally { return &Tally{Total: total, Outcomes: map[string]int64{}} }

// Add counts one finished line.
func (t *Tally) Add(outcome string) {
	t.mu.Lock()
	t.Done++
	t.Outcomes[outcome]++
	t.mu.Unlock()
}

// Attempt counts one request sent and whether it was refused with a 429.
func (t *Tally) Attempt(rateLimited bool) {
	t.mu.Lock()
	t.Requests++
	if rateLimited {
		t.RateLimited++
	}
	t.mu.Unlock()
}

// Count returns the lines with an outcome.
func (t *Tally) Count(outcome string) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.Outcomes[outcome]
}

func (t *Tally) describe() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	failed := t.Done - t.Outcomes["ok"] - t.Outcomes["skipped"]
	return fmt.Sprintf("ok %d · failed %d · 429s %d", t.Outcomes["ok"], failed, t.RateLimited)
}

// Summary is the one line that ends a batch: lines by outcome, 429s, requests and their rate.
func (t *Tally) Summary(elapsed time.Duration) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	names := make([]string, 0, len(t.Outcomes))
	for k := range t.Outcomes {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%d %s", t.Outcomes[k], k))
	}
	if len(parts) == 0 {
		parts = append(parts, "no request lines")
	}
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(t.Requests) / s
	}
	return fmt.Sprintf("batch: %d lines: %s · %d requests, %d 429s · %s (%.1f req/s)",
		t.Done, strings.Join(parts, ", "), t.Requests, t.RateLimited, elapsed.Round(time.Millisecond), rate)
}

// Progress shows a batch's progress on stderr: a bar on a terminal (done/total, ok/failed, 429s,
// rate, ETA), and one summary line at the end everywhere.
type Progress struct {
	w     io.Writer
	bar   *progressbar.ProgressBar
	tally *Tally
	start time.Time
}

// NewProgress starts the progress of a batch.
func NewProgress(s *IOStreams, tally *Tally) *Progress {
	p := &Progress{w: s.ErrOut, tally: tally, start: time.Now()}
	if s.IsStderrTTY() {
		p.bar = progressbar.NewOptions64(tally.Total,
			progressbar.OptionSetWriter(s.ErrOut),
			progressbar.OptionSetDescription(tally.describe()),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("lines"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionEnableColorCodes(s.ColorErrEnabled()),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSpinnerType(14),
		)
	}
	return p
}

// Line records one finished line.
func (p *Progress) Line() {
	if p.bar == nil {
		return
	}
	p.bar.Describe(p.tally.describe())
	_ = p.bar.Add(1)
}

// Finish ends the bar and writes the summary line.
func (p *Progress) Finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.w)
	}
	fmt.Fprintln(p.w, p.tally.Summary(time.Since(p.start)))
}
