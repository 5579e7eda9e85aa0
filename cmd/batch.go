package cmd

import (
	"context"
	"net/http"
	"net/url"
	"os"
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
	Drain time.Duration

	// budgetRatio and shard are --retry-budget and --shard, parsed by check.
	budgetRatio float64
	shard       batch.Shard
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
	o.shard, err = parseShard(o.Shard)
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
	if o.Output != "" {
		file, err := os.Create(o.Output)
		if err != nil {
			return report(request.Usagef("-o %s: %v", o.Output, err), 0)
		}
		defer file.Close()
		out = file
	}
	extras := sessionExtras{budget: &retry.RetryBudget{Ratio: o.budgetRatio, Min: 10},
		gate: limit.NewBreaker(o.BreakerFailures, o.BreakerCooldown, nil)}
	sess, err := newSession(ctx, f, g, o.RequestOptions, logger, extras)
	if err != nil {
		return report(err, 0)
	}
	defer sess.close()
	cfg := batch.Config{
		Input: in, Out: out, Journal: journal, Concurrency: o.Concurrency, Shard: o.shard,
		Base: sess.base, Headers: o.Headers, Idempotent: o.Idempotent, AutoKey: o.IdempotencyKey == "auto",
		Engine: sess.engine, Policy: sess.policy, Drain: o.Drain, Counts: batch.NewCounts(in.Total),
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
	counts := cfg.Counts
	if progress != nil {
		progress.Finish()
	}
	if journal != nil {
		if err := journal.Close(); err != nil && fatal == nil {
			fatal = err
		}
	}
	err = fatal
	if intr := interruption(ctx); intr != nil {
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
