package cmd

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/brellium/brellium/output"
	"github.com/brellium/brellium/request"
	"github.com/brellium/brellium/retry"
)

// BatchOptions are the flags of `brellium batch`.
type BatchOptions struct {
	*RequestOptions
	Input       string
	Concurrency int
	RetryBudget string
	Journal     string
	Shard       string

	// BreakerFailures consecutive failed attempts open the circuit breaker for BreakerCooldown.
	BreakerFailures int
	BreakerCooldown time.Duration
	// Drain is how long in-flight requests get after SIGINT or SIGTERM.
	Drain time.Duration
}

// NewCmdBatch builds `brellium batch [FILE|-]`.
func NewCmdBatch(f *Factory, g *GlobalOptions, runF func(*BatchOptions) error) *cobra.Command {
	o := &BatchOptions{RequestOptions: newRequestOptions(), Concurrency: 4, RetryBudget: "20%",
		BreakerFailures: 5, BreakerCooldown: 5 * time.Second, Drain: 5 * time.Second}
	c := &cobra.Command{
		Use:   "batch [FILE|-]",
		Short: "Send one request per input line through one shared budget",
		Long: `Send one request per input line, several at a time, through one retry engine and one
client budget. A line is JSON, {"id":"a","method":"GET","path":"/v2/…","body":{…},
"headers":{"X-A":"b"},"idempotent":false} (only path is required), or text, METHOD PATH
[JSON-BODY]. Blank lines and lines starting with # are skipped, but count in line numbers.

Every request line yields one JSON line on stdout (or -o FILE), in completion order:
{"line":12,"id":"…","method":"GET","path":"/v2/…","status":200,"outcome":"ok","attempts":1,
"request_id":"…","elapsed_ms":35,"body":…}. With --journal, a rerun with the same input sends
only what is not done, and never sends again an unsafe line that may have run.

Lines that may be repeated go out over a lean HTTP/1.1 client; BRELLIUM_BATCH_CLIENT=net sends
every line through Go's net/http instead.`,
		Example: `  brellium batch audits.txt --emulator
  brellium batch requests.jsonl --concurrency 8 --journal run.journal -o results.jsonl
  brellium batch big.jsonl --shard 2/4 --limiter redis://127.0.0.1:6379/0
  seq 1 100 | sed 's|^|GET /v2/audits?limit=|' | brellium batch - --emulator | jq .status`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return request.Usagef("'brellium batch' takes at most one FILE (or - for standard input)")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Input = args[0]
			}
			if err := prepare(c, f, g, o.check); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runBatch(c.Context(), f, g, o)
		},
	}
	fl := c.Flags()
	addPolicyFlags(fl, o.RequestOptions)
	fl.IntVar(&o.Concurrency, "concurrency", o.Concurrency, "requests in flight at once (every worker shares the one budget)")
	fl.StringVar(&o.RetryBudget, "retry-budget", o.RetryBudget, "repeats after 5xx and dropped connections may add at most this share of the requests sent (never fewer than 10)")
	fl.StringVar(&o.Journal, "journal", "", "append-only journal: a rerun with the same input sends only what is not done")
	fl.StringVar(&o.Shard, "shard", "", "K/N: only lines whose number modulo N is K-1")
	_ = c.RegisterFlagCompletionFunc("log-format", fixedCompletion("text", "json"))
	return c
}

func (o *BatchOptions) check(c *cobra.Command) error {
	if err := o.RequestOptions.check(c); err != nil {
		return err
	}
	if o.Concurrency < 1 || o.Concurrency > 1024 {
		return request.Usagef("invalid --concurrency %d: want 1 to 1024", o.Concurrency)
	}
	if o.IdempotencyKey != "" && o.IdempotencyKey != "auto" {
		return request.Usagef("--idempotency-key %s would send one key with every line; use --idempotency-key auto for a key of each line's own", o.IdempotencyKey)
	}
	if _, err := parseBudget(o.RetryBudget); err != nil {
		return err
	}
	_, _, err := parseShard(o.Shard)
	return err
}

// parseBudget reads --retry-budget: "20%" or "20" (a percentage).
func parseBudget(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || v < 0 || v > 1000 {
		return 0, request.Usagef("invalid --retry-budget %q: want a percentage such as 20%%", s)
	}
	return v / 100, nil
}

// parseShard reads --shard K/N; "" is no sharding (0, 0).
func parseShard(s string) (k, n int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	ks, ns, ok := strings.Cut(s, "/")
	k, err1 := strconv.Atoi(ks)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil || n < 1 || k < 1 || k > n {
		return 0, 0, request.Usagef("invalid --shard %q: want K/N with 1 ≤ K ≤ N, e.g. 2/4", s)
	}
	return k, n, nil
}

// input is the batch's source and what is known of it before reading.
type input struct {
	r     io.Reader
	name  string
	sha   string // for a regular file
	total int64  // request lines in the shard, -1 when unknown
	close func()
}

// openInput opens FILE or standard input. A regular file is read once first for its SHA-256
// (which ties a journal to it) and its number of request lines (for the progress bar).
func openInput(f *Factory, name string, k, n int) (*input, error) {
	if name == "" || name == "-" {
		return &input{r: f.IOStreams.In, name: "-", total: -1, close: func() {}}, nil
	}
	file, err := os.Open(name)
	if err != nil {
		return nil, request.Usagef("batch input %s: %v", name, err)
	}
	in := &input{r: file, name: name, total: -1, close: func() { file.Close() }}
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
		if inShard(num, k, n) {
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
	in.sha, in.total = hex.EncodeToString(h.Sum(nil)), total
	return in, nil
}

func inShard(line, k, n int) bool { return n == 0 || line%n == k-1 }

// batchError is the error object of a result line.
type batchError struct {
	Code      string `json:"code,omitempty"`
	Message   string `json:"message,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// batchResult is one output line.
type batchResult struct {
	Line      int             `json:"line"`
	ID        string          `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Path      string          `json:"path,omitempty"`
	Status    int             `json:"status,omitempty"`
	Outcome   string          `json:"outcome"`
	Attempts  int             `json:"attempts"`
	RequestID string          `json:"request_id,omitempty"`
	ElapsedMS int64           `json:"elapsed_ms"`
	Body      json.RawMessage `json:"body,omitempty"`
	Error     *batchError     `json:"error,omitempty"`

	hash uint64
}

type batchJob struct {
	line request.Line
	spec *request.Spec
}

// batchRun is the shared state of one batch.
type batchRun struct {
	f        *Factory
	o        *BatchOptions
	sess     *session
	journal  *request.Journal
	tally    *output.Tally
	logger   *output.Logger
	attempts bool // show attempt events

	blocked atomic.Bool
	work    context.Context
	stop    context.CancelFunc

	mu    sync.Mutex
	fatal error
}

func (b *batchRun) setFatal(err error) {
	b.mu.Lock()
	if b.fatal == nil {
		b.fatal = err
	}
	b.mu.Unlock()
	b.stop()
}

func (b *batchRun) fatalErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fatal
}

func runBatch(ctx context.Context, f *Factory, g *GlobalOptions, o *BatchOptions) error {
	ios := f.IOStreams
	logger, err := newLogger(f, g, o.RequestOptions)
	if err != nil {
		return err
	}
	start := time.Now()
	report := func(err error, attempts int) error {
		logger.Done(output.Final{Outcome: OutcomeName(err), ExitCode: ExitCode(err), Elapsed: time.Since(start), Err: err, Attempts: attempts})
		if err == nil {
			return nil
		}
		return &reportedError{err: err}
	}
	fast, err := fastClient(f)
	if err != nil {
		return report(err, 0)
	}
	// A batch's live heap stays a few MiB (a million lines peak at about 25 MiB RSS), and the
	// collector's default pace cost a tenth of its throughput (README, Performance).
	defer paceGC(200)()
	ratio, _ := parseBudget(o.RetryBudget)
	k, n, _ := parseShard(o.Shard)
	in, err := openInput(f, o.Input, k, n)
	if err != nil {
		return report(err, 0)
	}
	defer in.close()
	var journal *request.Journal
	if o.Journal != "" {
		if journal, err = request.OpenJournal(o.Journal, in.name, in.sha); err != nil {
			return report(err, 0)
		}
		defer journal.Close()
	}
	out := ios.Out
	if o.Output != "" {
		file, err := os.Create(o.Output)
		if err != nil {
			return report(request.Usagef("-o %s: %v", o.Output, err), 0)
		}
		defer file.Close()
		out = file
	}
	sess, err := newSession(ctx, f, g, o.RequestOptions, logger)
	if err != nil {
		return report(err, 0)
	}
	defer sess.close()
	sess.engine.Budget = &retry.RetryBudget{Ratio: ratio, Min: 10}
	sess.engine.Gate = retry.NewBreaker(o.BreakerFailures, o.BreakerCooldown, nil)

	work, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	if fast && direct(sess.base) {
		fc := retry.NewFastClient(work, sess.base, 2*o.Concurrency)
		defer fc.CloseIdleConnections()
		sess.engine.Fast = fc
	}
	b := &batchRun{f: f, o: o, sess: sess, journal: journal, tally: output.NewTally(in.total), logger: logger,
		attempts: o.Verbose || o.LogFormat == "json", work: work, stop: stop}
	// SIGINT or SIGTERM: stop taking lines now, give in-flight requests o.Drain.
	go func() {
		select {
		case <-ctx.Done():
			t := time.AfterFunc(o.Drain, stop)
			<-work.Done()
			t.Stop()
		case <-work.Done():
		}
	}()

	var progress *output.Progress
	if o.LogFormat != "json" {
		progress = output.NewProgress(ios, b.tally)
	}
	jobs := make(chan *batchJob, o.Concurrency)
	results := make(chan *batchResult, 4*o.Concurrency)
	var wg sync.WaitGroup
	wg.Add(1 + o.Concurrency)
	go func() { defer wg.Done(); b.read(ctx, in, jobs, results) }()
	for i := 0; i < o.Concurrency; i++ {
		go func() { defer wg.Done(); b.worker(ctx, jobs, results) }()
	}
	go func() { wg.Wait(); close(results) }()

	werr := b.write(out, results, progress)
	if progress != nil {
		progress.Finish()
	}
	if journal != nil {
		if err := journal.Close(); err != nil && werr == nil {
			werr = err
		}
	}
	err = b.exitError(ctx, werr)
	// The summary line told the outcome of each line; a fatal error gets its own line, and the
	// JSON log its done event.
	if o.LogFormat == "json" || b.fatalErr() != nil || werr != nil {
		return report(err, int(b.tally.Requests))
	}
	if err != nil {
		return &reportedError{err: err}
	}
	return nil
}

// fastClient reports whether the batch may send what it can through retry.FastClient: unless
// BRELLIUM_BATCH_CLIENT=net asks for net/http alone, or a test replaced the transport.
func fastClient(f *Factory) (bool, error) {
	switch v := f.env("BRELLIUM_BATCH_CLIENT"); v {
	case "", "fast":
		return f.Transport == nil, nil
	case "net":
		return false, nil
	default:
		return false, request.Usagef("BRELLIUM_BATCH_CLIENT=%s: want fast or net", v)
	}
}

// direct reports that no proxy from the environment stands between brellium and base: the fast
// client speaks to the origin only.
func direct(base *url.URL) bool {
	proxy, err := http.ProxyFromEnvironment(&http.Request{URL: base})
	return err == nil && proxy == nil
}

// read streams the input into jobs; lines that need no request go straight to results.
func (b *batchRun) read(ctx context.Context, in *input, jobs chan<- *batchJob, results chan<- *batchResult) {
	defer close(jobs)
	k, n, _ := parseShard(b.o.Shard)
	lr := request.NewLineReader(in.r)
	for {
		if ctx.Err() != nil || b.blocked.Load() || b.fatalErr() != nil {
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
		if !inShard(num, k, n) {
			continue
		}
		line, skip := request.ParseLine(num, text)
		if skip {
			continue
		}
		if tooLong {
			line.Err = fmt.Errorf("line %d: longer than %d bytes", num, request.MaxLineBytes)
		}
		job := &batchJob{line: line}
		if line.Err == nil {
			job.spec, line.Err = b.lineSpec(in, line)
		}
		if line.Err != nil {
			results <- &batchResult{Line: num, ID: line.ID, Method: line.Method, Path: line.Path, Outcome: "invalid",
				Error: &batchError{Reason: line.Err.Error()}}
			continue
		}
		if b.journal != nil {
			prior, err := b.journal.Prior(num, line.Hash)
			if err != nil {
				b.setFatal(err)
				return
			}
			switch prior {
			case request.Done:
				results <- b.noSend(job, "skipped", "already done: the journal records it ok")
				continue
			case request.Unknown:
				results <- b.noSend(job, "unknown_outcome", "the journal records it sent and never finished (or unknown): not sent again")
				continue
			}
		}
		select {
		case jobs <- job:
		case <-b.work.Done():
			return
		}
	}
}

// lineSpec builds a line's call: the command's flags, plus the line's own headers and
// idempotent mark.
func (b *batchRun) lineSpec(in *input, l request.Line) (*request.Spec, error) {
	sort.Strings(l.Headers)
	key := ""
	if b.o.IdempotencyKey == "auto" {
		key = lineKey(in, l)
	}
	return request.New(b.sess.base, request.Options{
		Method: l.Method, Target: l.Path, Body: l.Body,
		Headers:    append(append([]string(nil), b.o.Headers...), l.Headers...),
		Idempotent: b.o.Idempotent || l.Idempotent, IdempotencyKey: key,
	})
}

// lineKey is a line's Idempotency-Key for --idempotency-key auto: derived from the input and the
// line, so a rerun sends the same key.
func lineKey(in *input, l request.Line) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s|%s|%d|%x", in.name, in.sha, l.N, l.Hash)))
	h[6] = h[6]&0x0f | 0x40
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

func (b *batchRun) noSend(job *batchJob, outcome, why string) *batchResult {
	return &batchResult{Line: job.line.N, ID: job.line.ID, Method: job.spec.Method, Path: job.spec.Path(),
		Outcome: outcome, Error: &batchError{Reason: why}, hash: job.line.Hash}
}

func (b *batchRun) worker(ctx context.Context, jobs <-chan *batchJob, results chan<- *batchResult) {
	for job := range jobs {
		switch {
		case b.blocked.Load():
			results <- b.noSend(job, "skipped", "not sent: the client was blocked (bare 403)")
		case ctx.Err() != nil || b.work.Err() != nil:
			results <- b.noSend(job, "skipped", "not sent: interrupted")
		default:
			results <- b.send(job)
		}
	}
}

// send runs one line through the engine: the same engine as a single call.
func (b *batchRun) send(job *batchJob) *batchResult {
	l := job.line
	class := request.Classify(job.spec)
	started := false
	if b.journal != nil && !class.Safe {
		if err := b.journal.Start(l.N, l.Hash); err != nil {
			b.setFatal(err)
			return b.noSend(job, "skipped", "not sent: "+err.Error())
		}
		started = true
	}
	eng := *b.sess.engine
	eng.Sink = retry.SinkFunc(func(ev retry.Event) {
		if ev.Outcome == retry.Blocked && b.blocked.CompareAndSwap(false, true) {
			b.stop() // at the decision, before the call returns: every worker stops now
		}
		b.tally.Attempt(ev.Response != nil && ev.Response.Status == 429)
		if b.attempts {
			ev.Line = l.N
			b.logger.Attempt(ev)
		}
	})
	res, err := eng.Do(b.work, job.spec, b.sess.policy)
	r := &batchResult{Line: l.N, ID: l.ID, Method: job.spec.Method, Path: job.spec.Path(), hash: l.Hash}
	if res != nil {
		r.Attempts, r.ElapsedMS = res.Attempts, res.Elapsed.Milliseconds()
		if resp := res.Response; resp != nil {
			r.Status, r.RequestID = resp.Status, resp.RequestID
			r.Body = bodyJSON(resp.Body, resp.JSON)
		}
	}
	if errors.Is(err, context.Canceled) {
		why := "not sent: interrupted"
		if b.blocked.Load() {
			why = "not sent: the client was blocked (bare 403)"
		}
		if !class.Safe && res != nil && res.MayHaveRun {
			r.Outcome, r.Error = "unknown_outcome", &batchError{Reason: "interrupted after it was sent: it may or may not have run"}
		} else {
			r.Outcome, r.Error, r.Status, r.Body = "skipped", &batchError{Reason: why}, 0, nil
		}
		b.end(r, started)
		return r
	}
	r.Outcome = string(OutcomeName(err))
	var ce retry.CallError
	if errors.As(err, &ce) {
		d := ce.Details()
		r.Error = &batchError{Code: d.Code, Message: d.Message, RequestID: d.RequestID, Reason: d.Reason}
	} else if err != nil {
		r.Error = &batchError{Reason: err.Error()}
	}
	b.end(r, true)
	return r
}

// end journals how a line ended, at once; the writer syncs before the line counts as done.
func (b *batchRun) end(r *batchResult, record bool) {
	if b.journal == nil || !record {
		return
	}
	if err := b.journal.End(r.Line, r.hash, r.Outcome); err != nil {
		b.setFatal(err)
	}
}

// bodyJSON embeds a JSON body (compacted onto one line) and any other body as a JSON string.
// known says that the body was already found to be valid JSON.
func bodyJSON(body []byte, known bool) json.RawMessage {
	if len(body) == 0 {
		return nil
	}
	if known || json.Valid(body) {
		// Most JSON bodies end with a newline and hold no other: cut it rather than compact.
		trimmed := bytes.TrimRight(body, " \t\r\n")
		if bytes.IndexByte(trimmed, '\n') < 0 && bytes.IndexByte(trimmed, '\r') < 0 {
			return json.RawMessage(trimmed)
		}
		var b bytes.Buffer
		if json.Compact(&b, body) == nil {
			return b.Bytes()
		}
	}
	s, _ := json.Marshal(string(body))
	return s
}

// appendJSON appends the result as one JSON object, the body embedded as it is (bodyJSON made
// it one valid line): the batch's hot path, written by hand to skip encoding/json's reflection
// and the re-validation of the body.
func (r *batchResult) appendJSON(b []byte) []byte {
	b = append(b, `{"line":`...)
	b = strconv.AppendInt(b, int64(r.Line), 10)
	b = appendField(b, "id", r.ID)
	b = appendField(b, "method", r.Method)
	b = appendField(b, "path", r.Path)
	if r.Status != 0 {
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(r.Status), 10)
	}
	b = append(b, `,"outcome":`...)
	b = appendString(b, r.Outcome)
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(r.Attempts), 10)
	b = appendField(b, "request_id", r.RequestID)
	b = append(b, `,"elapsed_ms":`...)
	b = strconv.AppendInt(b, r.ElapsedMS, 10)
	if len(r.Body) > 0 {
		b = append(b, `,"body":`...)
		b = append(b, r.Body...)
	}
	if r.Error != nil {
		e, _ := json.Marshal(r.Error)
		b = append(b, `,"error":`...)
		b = append(b, e...)
	}
	return append(b, '}')
}

// appendField appends ,"name":"value" when value is not empty.
func appendField(b []byte, name, value string) []byte {
	if value == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendString(b, value)
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// write is the single writer: it journals each group of results, syncs, then writes their lines.
func (b *batchRun) write(out io.Writer, results <-chan *batchResult, progress *output.Progress) error {
	w := bufio.NewWriterSize(out, 64<<10)
	var werr error
	var line []byte
	group := make([]*batchResult, 0, 256)
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
		if b.journal != nil {
			if err := b.journal.Sync(); err != nil {
				b.setFatal(err)
			}
		}
		for _, r := range group {
			line = append(r.appendJSON(line[:0]), '\n')
			if werr == nil {
				if _, err := w.Write(line); err != nil {
					werr = err
				}
			}
			b.tally.Add(r.Outcome)
			if progress != nil {
				progress.Line()
			}
		}
		if werr == nil {
			werr = w.Flush()
		}
	}
	if werr != nil && errors.Is(werr, syscall.EPIPE) {
		return nil
	}
	return werr
}

// batchPrecedence is the order in which outcomes decide a batch's exit code.
var batchPrecedence = []retry.Outcome{retry.Blocked, retry.UnknownOutcome, retry.AuthFailure, retry.Exhausted, retry.APIFailure}

// exitError is the batch's final error: an interruption, a fatal error, or the first present of
// blocked, unknown_outcome, auth_error, exhausted, api_error, invalid.
func (b *batchRun) exitError(ctx context.Context, werr error) error {
	if intr := interruption(ctx); intr != nil {
		return intr
	}
	if err := b.fatalErr(); err != nil {
		return err
	}
	if werr != nil {
		return fmt.Errorf("writing the results: %w", werr)
	}
	for _, o := range batchPrecedence {
		if c := b.tally.Count(string(o)); c > 0 {
			return batchOutcomeError(o, c)
		}
	}
	if c := b.tally.Count("invalid"); c > 0 {
		return request.Usagef("%d invalid line%s (see their \"error\" in the output)", c, plural(int(c)))
	}
	return nil
}

// batchOutcomeError stands for n lines that ended with outcome o.
func batchOutcomeError(o retry.Outcome, n int64) error {
	f := retry.Failure{Method: "batch", Reason: fmt.Sprintf("%d line%s ended %s", n, plural(int(n)), o)}
	switch o {
	case retry.Blocked:
		return &retry.BlockedError{Failure: f}
	case retry.UnknownOutcome:
		return &retry.UnknownOutcomeError{Failure: f}
	case retry.AuthFailure:
		return &retry.AuthError{Failure: f}
	case retry.Exhausted:
		return &retry.ExhaustedError{Failure: f}
	}
	return &retry.APIError{Failure: f}
}
