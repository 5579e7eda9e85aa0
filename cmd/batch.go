package cmd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/brellium/brellium/batch"
	"github.com/brellium/brellium/output"
	"github.com/brellium/brellium/request"
	"github.com/brellium/brellium/retry"
	"github.com/brellium/brellium/retry/limit"
	"github.com/brellium/brellium/retry/transport"
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
	Drain   time.Duration
	Bodies  string
	MaxBody string

	// budgetRatio, shard and maxBody are --retry-budget, --shard and --max-body, parsed by check.
	budgetRatio float64
	shard       batch.Shard
	maxBody     int64
}

// NewCmdBatch builds `brellium batch [FILE|-]`.
func NewCmdBatch(f *Factory, g *GlobalOptions, runF func(*BatchOptions) error) *cobra.Command {
	o := &BatchOptions{RequestOptions: newRequestOptions(), Concurrency: 4, RetryBudget: "20%",
		BreakerFailures: 5, BreakerCooldown: 5 * time.Second, Drain: 5 * time.Second, MaxBody: "8MiB"}
	c := &cobra.Command{
		Use:   "batch [FILE|-]",
		Short: "Send one request per input line through one shared budget",
		Long: `Send one request per input line, several at a time, through one retry engine and one
client budget. A line is JSON, {"id":"a","method":"GET","path":"/v2/…","body":{…},
"headers":{"X-A":"b"},"idempotent":false} (only path is required), or text, METHOD PATH
[JSON-BODY]. Blank lines and lines starting with # are skipped, but count in line numbers.

Every request line yields one JSON line on stdout (or -o FILE), in completion order:
{"line":12,"id":"…","method":"GET","path":"/v2/…","status":200,"outcome":"ok","attempts":1,
"request_id":"…","elapsed_ms":35,"body":…}. No line is ok unless its whole body is in the
output: a body over --max-body ends its line (outcome usage) unless --bodies DIR writes each
body to a file there (the line names it in "body_file").

With --journal, a rerun with the same input sends only what is not done, and never sends again
an unsafe line that may have run; -o FILE then appends, and lines done in an earlier run are not
written to it again. Without --journal, -o FILE starts anew. Result files and journals are
created 0600: they hold API data.

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
	fl.Lookup("output").Usage = "write the result lines to FILE instead of stdout (with --journal, appended)"
	fl.IntVar(&o.Concurrency, "concurrency", o.Concurrency, "requests in flight at once (every worker shares the one budget)")
	fl.StringVar(&o.RetryBudget, "retry-budget", o.RetryBudget, "repeats after 5xx and dropped connections may add at most this share of the requests sent (never fewer than 10)")
	fl.StringVar(&o.Journal, "journal", "", "append-only journal: a rerun with the same input sends only what is not done (and -o appends)")
	fl.StringVar(&o.Shard, "shard", "", "K/N: only lines whose number modulo N is K-1")
	fl.StringVar(&o.Bodies, "bodies", "", "write each line's body to a file in DIR (named after the line) instead of the result line")
	fl.StringVar(&o.MaxBody, "max-body", o.MaxBody, "without --bodies, the largest body a result line embeds (e.g. 8MiB, 64MiB)")
	_ = c.MarkFlagDirname("bodies")
	g.addFlags(c, allGlobal)
	_ = c.RegisterFlagCompletionFunc("log-format", fixedCompletion("text", "json"))
	return c
}

// check validates the flags and parses --retry-budget and --shard, once.
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
	var err error
	if o.budgetRatio, err = parseBudget(o.RetryBudget); err != nil {
		return err
	}
	if o.shard, err = parseShard(o.Shard); err != nil {
		return err
	}
	if o.maxBody, err = request.ParseSize(o.MaxBody); err != nil || o.maxBody < 1 {
		return request.Usagef("invalid --max-body %q: want a size such as 8MiB", o.MaxBody)
	}
	return nil
}

// parseBudget reads --retry-budget: "20%" or "20" (a percentage).
func parseBudget(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || v < 0 || v > 1000 {
		return 0, request.Usagef("invalid --retry-budget %q: want a percentage such as 20%%", s)
	}
	return v / 100, nil
}

// parseShard reads --shard K/N; "" is every line.
func parseShard(s string) (batch.Shard, error) {
	if s == "" {
		return batch.Shard{}, nil
	}
	ks, ns, ok := strings.Cut(s, "/")
	k, err1 := strconv.Atoi(ks)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil || n < 1 || k < 1 || k > n {
		return batch.Shard{}, request.Usagef("invalid --shard %q: want K/N with 1 ≤ K ≤ N, e.g. 2/4", s)
	}
	return batch.Shard{K: k, N: n}, nil
}

func runBatch(ctx context.Context, f *Factory, g *GlobalOptions, o *BatchOptions) error {
	ios := f.IOStreams
	logger, err := newLogger(f, g, o.RequestOptions)
	if err != nil {
		return err
	}
	start := time.Now()
	report := func(err error, attempts int64) error {
		logger.Done(output.Final{Outcome: outcomeOf(err), ExitCode: ExitCode(err), Elapsed: time.Since(start), Err: err, Attempts: int(attempts)})
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
	in, err := batch.OpenInput(o.Input, ios.In, o.shard)
	if err != nil {
		return report(err, 0)
	}
	defer in.Close()
	var journal *batch.Journal
	if o.Journal != "" {
		if journal, err = batch.OpenJournal(o.Journal, in.Name, in.SHA256); err != nil {
			return report(err, 0)
		}
		defer journal.Close()
	}
	out := ios.Out
	var written *batch.LineSet
	if o.Output != "" && o.Output != "-" {
		// With a journal the file gathers every run's results; without, it starts anew. A
		// stream (/dev/stdout, a FIFO) is written as stdout is: appended to, never read back.
		stream := isStream(o.Output)
		mode := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if journal != nil || stream {
			mode = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		}
		file, err := os.OpenFile(o.Output, mode, 0o600)
		if err != nil {
			return report(request.Usagef("-o %s: %v", o.Output, err), 0)
		}
		defer file.Close()
		out = file
		if journal != nil && !stream {
			// The lines that earlier runs wrote; a done line whose result was lost (the process
			// was killed between the journal and the file) is written again.
			r, err := os.Open(o.Output)
			if err == nil {
				written, err = batch.ResultLines(r)
				r.Close()
			}
			if err != nil {
				return report(fmt.Errorf("-o %s: reading the earlier results: %w", o.Output, err), 0)
			}
		}
	}
	if o.Bodies != "" {
		if err := os.MkdirAll(o.Bodies, 0o700); err != nil {
			return report(request.Usagef("--bodies %s: %v", o.Bodies, err), 0)
		}
	}
	defer limitMemory(batch.MemoryForBodies + o.maxBody + 40<<20)()
	breaker := limit.NewBreaker(o.BreakerFailures, o.BreakerCooldown, nil)
	breaker.OnChange = logger.Breaker
	extras := sessionExtras{budget: &retry.RetryBudget{Ratio: o.budgetRatio, Min: 10}, gate: breaker, reserveByDefault: true}
	sess, err := newSession(ctx, f, g, o.RequestOptions, logger, extras)
	if err != nil {
		return report(err, 0)
	}
	defer sess.close()
	cfg := batch.Config{
		Input: in, Out: out, Journal: journal, Concurrency: o.Concurrency, Shard: o.shard,
		Base: sess.base, Headers: o.Headers, Idempotent: o.Idempotent, AutoKey: o.IdempotencyKey == "auto",
		Engine: sess.engine, Policy: sess.policy, Drain: o.Drain, Counts: batch.NewCounts(in.Total),
		BodiesDir: o.Bodies, MaxBody: o.maxBody, Written: written, Scrub: f.Secrets().ScrubBytes,
	}
	if fast && direct(sess.base) {
		// The fast client belongs to the batch's work: a block or the end of the drain closes
		// every connection at once.
		cfg.Connect = func(work context.Context) (retry.Sender, func()) {
			fc := transport.NewFastClient(work, sess.base, 2*o.Concurrency)
			return transport.Route{Fast: fc, Net: sess.net}, fc.CloseIdleConnections
		}
	}
	if o.Verbose || o.LogFormat == "json" {
		cfg.Sink = logger
	}
	var progress *output.Progress
	if o.LogFormat != "json" {
		progress = output.NewProgress(ios, cfg.Counts)
		cfg.OnLine = progress.Line
	}
	fatal := batch.Run(ctx, cfg)
	// A reader that stopped reading (| head) ends the batch early and quietly, as a closed pipe
	// ends a single call: exit 0 unless a line written before it failed.
	closed := errors.Is(fatal, batch.ErrOutputClosed)
	if closed {
		fatal = nil
	}
	counts := cfg.Counts
	intr := interruption(ctx)
	stopped := intr != nil || fatal != nil || closed
	unread := int64(-1)
	if t := counts.Tally(); stopped && t.Total >= 0 {
		unread = t.Total - t.Done
	}
	if progress != nil {
		progress.Finish(stopped, unread)
	}
	if intr != nil && o.LogFormat != "json" {
		logger.Warn(resumeHint(f.args, o, unread))
	}
	if journal != nil {
		if err := journal.Close(); err != nil && fatal == nil {
			fatal = err
		}
	}
	err = fatal
	if intr != nil {
		err = intr
	} else if err == nil {
		err = counts.Err()
	}
	// The summary line told the outcome of each line; a fatal error gets its own line, and the
	// JSON log its done event.
	if o.LogFormat == "json" || fatal != nil {
		return report(err, counts.Tally().Requests)
	}
	if err != nil {
		return &reportedError{err: err}
	}
	return nil
}

// fastClient reports whether the batch may send what it can through the fast client: unless
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

// resumeHint says how to pick an interrupted batch up where it stopped.
func resumeHint(args []string, o *BatchOptions, unread int64) string {
	left := "the rest of the input was not read"
	if unread >= 0 {
		left = fmt.Sprintf("%d %s never read", unread, output.Plural(unread, "line was", "lines were"))
	}
	if o.Journal == "" {
		return "interrupted: " + left + "; this batch has no --journal, so a rerun sends every line again (run with --journal FILE to make a batch resumable)"
	}
	if o.Input == "" || o.Input == "-" {
		return "interrupted: " + left + "; to resume, run the same command with the same input on standard input: brellium " + shellJoin(args)
	}
	return "interrupted: " + left + "; to resume, run: brellium " + shellJoin(args)
}

// limitMemory sets the collector's soft memory limit to n bytes for a long-running command,
// unless the user set GOMEMLIMIT, and returns what restores it.
func limitMemory(n int64) (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	old := debug.SetMemoryLimit(n)
	return func() { debug.SetMemoryLimit(old) }
}
