package output

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/brellium/brellium/batch"
)

// describe is the bar's description: ok, failed and 429s so far.
func describe(t batch.Tally) string {
	failed := t.Done - t.Outcomes["ok"] - t.Outcomes["skipped"]
	return fmt.Sprintf("ok %d · failed %d · 429s %d", t.Outcomes["ok"], failed, t.RateLimited)
}

// Summary is the one line that ends a batch: lines by outcome, the lines never read when it was
// stopped early (unread, -1 when unknown or none), requests, 429s and their rate.
func Summary(t batch.Tally, unread int64, elapsed time.Duration) string {
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
	if unread > 0 {
		parts = append(parts, fmt.Sprintf("%d never read", unread))
	}
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(t.Requests) / s
	}
	return fmt.Sprintf("batch: %d %s: %s · %d %s, %d 429s · %s (%.1f req/s)",
		t.Done, Plural(t.Done, "line", "lines"), strings.Join(parts, ", "), t.Requests, Plural(t.Requests, "request", "requests"),
		t.RateLimited, elapsed.Round(time.Millisecond), rate)
}

// Plural is one when n is 1, else many.
func Plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Progress shows a batch's progress on stderr: a bar on a terminal (done/total, ok/failed, 429s,
// rate, ETA), and one summary line at the end everywhere.
type Progress struct {
	w      io.Writer
	bar    *progressbar.ProgressBar
	counts *batch.Counts
	start  time.Time
}

// NewProgress starts the progress of a batch.
func NewProgress(s *IOStreams, counts *batch.Counts) *Progress {
	p := &Progress{w: s.ErrOut, counts: counts, start: time.Now()}
	if s.IsStderrTTY() {
		p.bar = progressbar.NewOptions64(counts.Tally().Total,
			progressbar.OptionSetWriter(s.ErrOut),
			progressbar.OptionSetDescription(describe(counts.Tally())),
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
	p.bar.Describe(describe(p.counts.Tally()))
	_ = p.bar.Add(1)
}

// Finish ends the bar and writes the summary line. A batch stopped early (stopped) leaves the
// bar where it was, and the summary counts the lines never read (unread, -1 when unknown).
func (p *Progress) Finish(stopped bool, unread int64) {
	if p.bar != nil {
		if stopped {
			_ = p.bar.Exit()
		} else {
			_ = p.bar.Finish()
		}
		fmt.Fprintln(p.w)
	}
	fmt.Fprintln(p.w, Summary(p.counts.Tally(), unread, time.Since(p.start)))
}

// UploadBar shows the bytes of an upload on a terminal. It starts again with each attempt.
type UploadBar struct{ bar *progressbar.ProgressBar }

// NewUploadBar returns a bar for a file of size bytes on stderr.
func NewUploadBar(s *IOStreams, size int64, name string) *UploadBar {
	return &UploadBar{bar: progressbar.NewOptions64(size,
		progressbar.OptionSetWriter(s.ErrOut),
		progressbar.OptionSetDescription("uploading "+Inert(name)),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionEnableColorCodes(s.ColorErrEnabled()),
		progressbar.OptionSetWidth(30),
		progressbar.OptionClearOnFinish(),
	)}
}

// Watch counts what is read from r, from zero: the reader of one attempt.
func (b *UploadBar) Watch(r io.Reader) io.Reader {
	b.bar.Reset()
	pr := progressbar.NewReader(r, b.bar)
	return &pr
}

// Clear takes the bar off its line, so that a log line can take it.
func (b *UploadBar) Clear() { _ = b.bar.Clear() }
