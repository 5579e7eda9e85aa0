// Package batch runs a batch: one request per input line, several at a time, through one retry
// engine and one budget. It reads the input as a stream, sends each line through the engine,
// journals what an unsafe line may have done, writes one result line per request line, counts
// the lines by outcome, and tells the batch's outcome. It never prints (its result lines go to
// the writer it is given), reads flags or environment variables, or exits.
package batch

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/brellium/brellium/request"
	"github.com/brellium/brellium/retry"
)

// Shard is --shard K/N: only lines whose number modulo N is K-1. The zero Shard takes every
// line.
type Shard struct{ K, N int }

// Has reports whether line n is in the shard.
func (s Shard) Has(n int) bool { return s.N == 0 || n%s.N == s.K-1 }

// Config is one batch run.
type Config struct {
	Input *Input
	// Out takes the result lines.
	Out io.Writer
	// Journal, when set, records each line's state and says what an earlier run did.
	Journal     *Journal
	Concurrency int
	Shard       Shard
	// Base, Headers, Idempotent and AutoKey shape each line's call: the base URL, the command's
	// own -H (a line's headers add to them), --idempotent, and --idempotency-key auto (a key
	// derived from the input and the line, the same on a rerun).
	Base       *url.URL
	Headers    []string
	Idempotent bool
	AutoKey    bool
	// Engine sends every line; Run gives each call a sink of its own and, with Connect, the
	// sender of the batch's work.
	Engine *retry.Engine
	Policy retry.Policy
	// Connect, when set, gives the sender for the batch's work and a function that releases it;
	// the sender must stop when work ends (a block, or the end of the drain).
	Connect func(work context.Context) (retry.Sender, func())
	// Drain is how long in-flight calls get once ctx is done.
	Drain time.Duration
	// BodiesDir, when set, is --bodies: each line's body goes to a file there, named after the
	// line. MaxBody is --max-body: without BodiesDir, a 2xx body over it ends its line (0:
	// DefaultMaxBody).
	BodiesDir string
	MaxBody   int64
	// Written, when set, is the lines that Out already holds a result for (a results file a
	// rerun appends to): the lines an earlier run did (the journal says so) and that are in it
	// are not written again, so that the file holds each line once it is done.
	Written *LineSet
	// Sink, when set, hears every attempt event, with its line number.
	Sink retry.Sink
	// Scrub, when set, takes every secret out of a result line before it is written.
	Scrub func(line []byte) []byte
	// Counts, when set, counts the lines by outcome as they are written (its Err is the
	// batch's outcome); OnLine, when set, is called once each result line is written.
	Counts *Counts
	OnLine func()
}

// Input is a batch's source and what is known of it before reading.
type Input struct {
	r    io.Reader
	Name string
	// SHA256 is the hash of a regular file's content, "" for a stream.
	SHA256 string
	// Total is the number of request lines in the shard, -1 when unknown.
	Total int64
	close func()
}

// OpenInput opens FILE, or standard input for "" and "-". A regular file is read once first for
// its SHA-256 (which ties a journal to it) and its number of request lines in the shard (for
// the progress bar).
func OpenInput(name string, stdin io.Reader, shard Shard) (*Input, error) {
	if name == "" || name == "-" {
		return &Input{r: stdin, Name: "-", Total: -1, close: func() {}}, nil
	}
	file, err := os.Open(name)
	if err != nil {
		return nil, request.Usagef("batch input %s: %v", name, err)
	}
	in := &Input{r: file, Name: name, Total: -1, close: func() { file.Close() }}
	st, err := file.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return in, nil
	}
	h := sha256.New()
	lr := request.NewLineReader(io.TeeReader(file, h))
	var total int64
	for {
		num, text, _, err := lr.Next()
		if err != nil {
			break
		}
		if shard.Has(num) {
			if t := strings.TrimSpace(text); t != "" && !strings.HasPrefix(t, "#") {
				total++
			}
		}
	}
	_, _ = io.Copy(h, file)
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		file.Close()
		return nil, request.Usagef("batch input %s: %v", name, err)
	}
	in.SHA256, in.Total = fmt.Sprintf("%x", h.Sum(nil)), total
	return in, nil
}

// NewInput is an input read from r, of unknown length and without a hash.
func NewInput(name string, r io.Reader) *Input {
	return &Input{r: r, Name: name, Total: -1, close: func() {}}
}

// Close closes the input's file.
func (in *Input) Close() { in.close() }

type job struct {
	line request.Line
	spec *request.Spec
}

// run is the shared state of one batch.
type run struct {
	cfg     Config
	counts  *Counts
	mem     *semaphore.Weighted
	maxBody int64

	blocked atomic.Bool
	// outGone is set when a result line could not be written (a closed pipe, a full disk): no
	// line is sent any more, since its result would be lost.
	outGone atomic.Bool
	work    context.Context
	stop    context.CancelFunc

	mu    sync.Mutex
	fatal error
}

// Run runs the batch until its input ends, a line is blocked (bare 403: the rest is skipped),
// or ctx is done (then no line is taken any more, and calls in flight get cfg.Drain). It returns
// an error when the batch could not go on: the input could not be read, the journal written, or
// the result lines written. The batch's outcome is cfg.Counts.Err.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Counts == nil {
		cfg.Counts = NewCounts(cfg.Input.Total)
	}
	b := &run{cfg: cfg, counts: cfg.Counts, maxBody: cfg.MaxBody}
	if b.maxBody <= 0 {
		b.maxBody = DefaultMaxBody
	}
	b.mem = newMemory(b.maxBody)
	b.work, b.stop = context.WithCancel(context.WithoutCancel(ctx))
	defer b.stop()
	if cfg.Connect != nil {
		sender, release := cfg.Connect(b.work)
		defer release()
		eng := *cfg.Engine
		eng.Sender = sender
		b.cfg.Engine = &eng
	}
	// Interrupted: stop taking lines now, give in-flight calls the drain.
	go func() {
		select {
		case <-ctx.Done():
			t := time.AfterFunc(cfg.Drain, b.stop)
			<-b.work.Done()
			t.Stop()
		case <-b.work.Done():
		}
	}()
	jobs := make(chan *job, cfg.Concurrency)
	results := make(chan *result, 4*cfg.Concurrency)
	var wg sync.WaitGroup
	wg.Add(1 + cfg.Concurrency)
	go func() { defer wg.Done(); b.read(ctx, jobs, results) }()
	for i := 0; i < cfg.Concurrency; i++ {
		go func() { defer wg.Done(); b.worker(ctx, jobs, results) }()
	}
	go func() { wg.Wait(); close(results) }()

	werr := b.write(results)
	if err := b.fatalErr(); err != nil {
		return err
	}
	switch {
	case errors.Is(werr, ErrOutputClosed):
		return werr
	case werr != nil:
		return fmt.Errorf("writing the results: %w", werr)
	}
	return nil
}

func (b *run) setFatal(err error) {
	b.mu.Lock()
	if b.fatal == nil {
		b.fatal = err
	}
	b.mu.Unlock()
	b.stop()
}

func (b *run) fatalErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fatal
}

// read streams the input into jobs; lines that need no request go straight to results.
func (b *run) read(ctx context.Context, jobs chan<- *job, results chan<- *result) {
	defer close(jobs)
	lr := request.NewLineReader(b.cfg.Input.r)
	for {
		if ctx.Err() != nil || b.blocked.Load() || b.outGone.Load() || b.fatalErr() != nil {
			return
		}
		num, text, tooLong, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			b.setFatal(fmt.Errorf("reading the batch input: %w", err))
			return
		}
		if !b.cfg.Shard.Has(num) {
			continue
		}
		line, skip := request.ParseLine(num, text)
		if skip {
			continue
		}
		if tooLong {
			line.Err = fmt.Errorf("line %d: longer than %d bytes", num, request.MaxLineBytes)
		}
		j := &job{line: line}
		if line.Err == nil {
			j.spec, line.Err = b.lineSpec(line)
		}
		if line.Err != nil {
			results <- &result{Line: num, ID: line.ID, Method: line.Method, Path: line.Path, Outcome: "invalid",
				Error: &resultError{Reason: line.Err.Error()}}
			continue
		}
		if b.cfg.Journal != nil {
			prior, err := b.cfg.Journal.Prior(num, line.Hash)
			if err != nil {
				b.setFatal(err)
				return
			}
			switch prior {
			case Done:
				r := noSend(j, "skipped", "already done: the journal records it ok")
				r.earlier = true
				results <- r
				continue
			case Unknown:
				results <- noSend(j, "unknown_outcome", "the journal records it sent and never finished (or unknown): not sent again")
				continue
			}
		}
		select {
		case jobs <- j:
		case <-b.work.Done():
			return
		}
	}
}

// lineSpec builds a line's call: the command's flags, plus the line's own headers and
// idempotent mark.
func (b *run) lineSpec(l request.Line) (*request.Spec, error) {
	sort.Strings(l.Headers)
	if l.UploadURL != "" {
		return b.uploadSpec(l)
	}
	key := ""
	if b.cfg.AutoKey {
		key = lineKey(b.cfg.Input, l)
	}
	return request.New(b.cfg.Base, request.Options{
		Method: l.Method, Target: l.Path, Body: l.Body,
		Headers:    append(append([]string(nil), b.cfg.Headers...), l.Headers...),
		Idempotent: b.cfg.Idempotent || l.Idempotent, IdempotencyKey: key,
	})
}

// uploadSpec builds an upload line's call: its file, relative to the batch file's folder (to the
// working folder for standard input), PUT to its upload URL with the line's headers and those of
// the command's -H that are no credentials.
func (b *run) uploadSpec(l request.Line) (*request.Spec, error) {
	path := l.File
	if !filepath.IsAbs(path) && b.cfg.Input != nil && b.cfg.Input.Name != "-" {
		path = filepath.Join(filepath.Dir(b.cfg.Input.Name), path)
	}
	file, err := request.OpenFile(path)
	if err != nil {
		return nil, err
	}
	var headers []string
	for _, h := range b.cfg.Headers {
		if name, _, err := request.ParseHeader(h); err == nil && !request.CredentialHeader(name) {
			headers = append(headers, h)
		}
	}
	return request.NewUpload(l.UploadURL, file, append(headers, l.Headers...))
}

// lineKey is a line's Idempotency-Key for --idempotency-key auto: derived from the input and the
// line, so a rerun sends the same key.
func lineKey(in *Input, l request.Line) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s|%s|%d|%x", in.Name, in.SHA256, l.N, l.Hash)))
	h[6] = h[6]&0x0f | 0x40
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

func noSend(j *job, outcome, why string) *result {
	return &result{Line: j.line.N, ID: j.line.ID, Method: j.spec.Method, Path: j.spec.Path(),
		Outcome: outcome, Error: &resultError{Reason: why}, hash: j.line.Hash}
}

func (b *run) worker(ctx context.Context, jobs <-chan *job, results chan<- *result) {
	for j := range jobs {
		switch {
		case b.blocked.Load():
			results <- noSend(j, "skipped", "not sent: the client was blocked (bare 403)")
		case b.outGone.Load():
			results <- noSend(j, "skipped", "not sent: the result lines could not be written")
		case ctx.Err() != nil || b.work.Err() != nil:
			results <- noSend(j, "skipped", "not sent: interrupted")
		default:
			results <- b.send(j)
		}
	}
}

// send runs one line through the engine: the same engine as a single call.
func (b *run) send(j *job) *result {
	l := j.line
	safe := j.spec.Class().Safe
	started := false
	if b.cfg.Journal != nil && !safe {
		if err := b.cfg.Journal.Start(l.N, l.Hash); err != nil {
			b.setFatal(err)
			return noSend(j, "skipped", "not sent: "+err.Error())
		}
		started = true
	}
	eng := *b.cfg.Engine
	eng.Sink = retry.SinkFunc(func(ev retry.Event) {
		if ev.Outcome == retry.Blocked && b.blocked.CompareAndSwap(false, true) {
			b.stop() // at the decision, before the call returns: every worker stops now
		}
		b.counts.rateLimited(ev.Response != nil && ev.Response.Status == 429)
		if b.cfg.Sink != nil {
			ev.Line = l.N
			b.cfg.Sink.Attempt(ev)
		}
	})
	lb := &lineBody{b: b, line: l.N}
	policy := b.cfg.Policy
	policy.Body = lb
	res, err := eng.Do(b.work, j.spec, policy)
	r := &result{Line: l.N, ID: l.ID, Method: j.spec.Method, Path: j.spec.Path(), hash: l.Hash, release: lb.release}
	defer func() {
		if lb.file != nil {
			lb.file.discard() // a body that did not come whole
		}
	}()
	if res != nil {
		b.counts.sent(res.Attempts)
		r.Attempts, r.ElapsedMS = res.Attempts, res.Elapsed.Milliseconds()
		if resp := res.Response; resp != nil {
			r.Status, r.RequestID = resp.Status, resp.RequestID
			if err := b.keepBody(r, lb, resp); err != nil {
				r.body = nil
				if !errors.Is(err, context.Canceled) {
					r.Error = &resultError{Reason: err.Error()}
				}
			}
		}
	}
	var tooLarge *retry.BodyTooLargeError
	switch {
	case errors.Is(err, context.Canceled):
		why := "not sent: interrupted"
		if b.blocked.Load() {
			why = "not sent: the client was blocked (bare 403)"
		}
		switch {
		case !safe && res != nil && res.MayHaveRun:
			r.Outcome, r.Error = "unknown_outcome", &resultError{Reason: "interrupted after it was sent: it may or may not have run"}
		case res != nil && res.MayHaveRun:
			why := "cancelled after it was sent (interrupted); a rerun sends it again"
			if b.blocked.Load() {
				why = "cancelled after it was sent: the client was blocked (bare 403)"
			}
			r.Outcome, r.Error, r.body = "skipped", &resultError{Reason: why}, nil
		default:
			r.Outcome, r.Error, r.Status, r.body = "skipped", &resultError{Reason: why}, 0, nil
		}
		b.end(r, started, false)
		return r
	case errors.As(err, &tooLarge):
		// The call ran; its body did not fit. A safe line may be sent again (with --bodies or a
		// larger --max-body); an unsafe one is done and is not.
		r.Outcome, r.body = "usage", nil
		why := tooLarge.Error()
		if !safe {
			why += "; the call ran, and with --journal it is not sent again"
		}
		r.Error = &resultError{Reason: why}
		b.end(r, true, !safe)
		return r
	}
	r.Outcome = string(retry.OutcomeOf(err))
	var ce retry.CallError
	if errors.As(err, &ce) {
		d := ce.Details()
		r.Error = &resultError{Code: d.Code, Message: d.Message, RequestID: d.RequestID, Reason: d.Reason}
	} else if err != nil {
		r.Outcome = "internal"
		r.Error = &resultError{Reason: err.Error()}
	}
	b.end(r, true, false)
	return r
}

// keepBody puts the call's final body in the result: embedded when it is whole, or, with
// --bodies, in its file.
func (b *run) keepBody(r *result, lb *lineBody, resp *retry.Response) error {
	body, whole := lb.body(resp)
	if !whole {
		return nil
	}
	if b.cfg.BodiesDir == "" {
		r.body, r.bodyJSON = body, resp.JSON && !lb.spilled
		return nil
	}
	if len(body) == 0 && !lb.spilled {
		return nil
	}
	if !lb.spilled { // kept in memory: write it out too
		f, err := newBodyFile(b.cfg.BodiesDir, r.Line)
		if err != nil {
			return err
		}
		lb.file = f
		if _, err := f.Write(body); err != nil {
			return err
		}
	}
	path, err := lb.file.commit(resp.Header.Get("Content-Type"))
	if err != nil {
		return fmt.Errorf("--bodies: %w", err)
	}
	lb.file = nil
	lb.release()
	r.BodyFile = path
	return nil
}

// end journals how a line ended, at once; the writer syncs before the line counts as done.
// done says that the line is done although its outcome is not ok: a rerun does not send it.
func (b *run) end(r *result, record, done bool) {
	if b.cfg.Journal == nil || !record {
		return
	}
	if err := b.cfg.Journal.End(r.Line, r.hash, r.Outcome, done); err != nil {
		b.setFatal(err)
	}
}

// write is the single writer: it syncs the journal for each group of results, then writes their
// lines. When a line cannot be written, no line is sent any more (the calls in flight end as they
// would); a closed pipe is not an error: the reader chose to stop reading (| head).
func (b *run) write(results <-chan *result) error {
	w := bufio.NewWriterSize(b.cfg.Out, 64<<10)
	var werr error
	var line []byte
	group := make([]*result, 0, 256)
	for r := range results {
		group = append(group[:0], r)
	more:
		for len(group) < cap(group) {
			select {
			case r, ok := <-results:
				if !ok {
					break more
				}
				group = append(group, r)
			default:
				break more
			}
		}
		if b.cfg.Journal != nil {
			if err := b.cfg.Journal.Sync(); err != nil {
				b.setFatal(err)
			}
		}
		for _, r := range group {
			line = append(r.appendJSON(line[:0]), '\n')
			if werr == nil && !(r.earlier && b.cfg.Written.Has(r.Line)) {
				out := line
				if b.cfg.Scrub != nil {
					out = b.cfg.Scrub(line)
				}
				if _, err := w.Write(out); err != nil {
					werr = err
					b.outGone.Store(true)
				}
			}
			if r.release != nil {
				r.release()
			}
			r.body = nil
			b.counts.add(r.Outcome)
			if b.cfg.OnLine != nil {
				b.cfg.OnLine()
			}
		}
		if werr == nil {
			if werr = w.Flush(); werr != nil {
				b.outGone.Store(true)
			}
		}
	}
	if werr != nil && errors.Is(werr, syscall.EPIPE) {
		return ErrOutputClosed
	}
	return werr
}

// ErrOutputClosed is Run's error when the reader of the result lines went away (| head): the
// reader's choice, not a failure; no line was sent after it.
var ErrOutputClosed = errors.New("the reader of the result lines stopped reading")
