package cmd

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/brellium/brellium/output"
	"github.com/brellium/brellium/request"
	"github.com/brellium/brellium/retry"
)

var methodHelp = map[string]struct{ short, example string }{
	"GET": {"Read a resource", `  brellium get /v2/audits/a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d --emulator
  brellium get /v2/audits/ID --retry 5 --max-time 60
  brellium get /v2/audits -f limit=10 -i                  # -f/-F fields are the query of a GET
  brellium get /v2/audits -f limit=100 --paginate -q .audit_id   # every page, one id a line
  brellium get /v2/audits --paginate --slurp > audits.json        # one array of every audit
  brellium get /v2/audits/ID -q '.flags[]'                 # jq, without jq installed
  brellium get /v2/audits/ID -o audit.json -w '%{http_code} %{request_id}\n'
  brellium get /v2/audits/ID --curl                        # the same call as a curl line
  brellium get /v2/documents/DOC_ID --until '.status == "processed"' --poll 5s --max-time 10m
  brellium get /v2/audits/ID --log-format json 2> attempts.jsonl`},
	"HEAD":   {"Read a resource's headers", `  brellium head /v2/audits/ID -i`},
	"DELETE": {"Delete a resource", `  brellium delete /v2/users/USER_ID      # safe: a 404 after an unknown outcome means done`},
	"POST": {"Create a resource (not repeated after an unknown outcome unless safe)", `  brellium post /v2/users -d '{"email":"a@example.com"}'
  brellium post /v2/users -f email=a@example.com -f role=reviewer   # fields build the JSON body
  brellium post /v2/audits/batch_update -F 'audit_ids[]=ID1' -F 'flags[]=Reviewed' --dry-run
  brellium post /v2/documents -d @documents.json
  echo '{"email":"r@example.com"}' | brellium post /v2/email_recipients -d @- --idempotent
  brellium post /v1/payments -d '{"amount":1}' --idempotency-key auto --base-url https://api.example.com`},
	"PUT":   {"Replace a resource", `  brellium put /v1/things/1 -d '{"name":"x"}' --idempotent --base-url https://api.example.com`},
	"PATCH": {"Update a resource", `  brellium patch /v2/audits/ID -d '{"flags":["Reviewed"]}'   # safe: flags are replaced`},
}

// NewCmdMethod builds `brellium get|head|delete|post|put|patch PATH`.
func NewCmdMethod(f *Factory, g *GlobalOptions, method string, runF func(*RequestOptions) error) *cobra.Command {
	o := newRequestOptions()
	o.Method = method
	help := methodHelp[method]
	c := &cobra.Command{
		Use:               strings.ToLower(method) + " PATH",
		Short:             help.short,
		Example:           help.example,
		Args:              exactArgs(1, "one PATH, such as /v2/audits/ID"),
		ValidArgsFunction: pathCompletion(method),
	}
	if method == http.MethodGet {
		c.Flags().StringVar(&o.Until, "until", "", "repeat the GET every --poll until the jq expression holds for its 2xx body (exit 4 when --max-time ends first)")
		c.Flags().Var(&o.Poll, "poll", "with --until: the time between polls")
	}
	return withRequestRun(c, f, g, o, runF, func(args []string) { o.Target = args[0] })
}

// withRequestRun gives a single-call command its flags and its RunE: take the arguments, check
// the flags and read the environment, then run runF (tests) or the call.
func withRequestRun(c *cobra.Command, f *Factory, g *GlobalOptions, o *RequestOptions, runF func(*RequestOptions) error, takeArgs func([]string)) *cobra.Command {
	c.RunE = func(c *cobra.Command, args []string) error {
		takeArgs(args)
		if err := prepare(c, f, g, o.check); err != nil {
			return err
		}
		if runF != nil {
			return runF(o)
		}
		return runRequest(c.Context(), f, g, o)
	}
	addRequestFlags(c, o)
	g.addFlags(c, allGlobal)
	return c
}

// NewCmdRequest builds `brellium request METHOD PATH`.
func NewCmdRequest(f *Factory, g *GlobalOptions, runF func(*RequestOptions) error) *cobra.Command {
	o := newRequestOptions()
	c := &cobra.Command{
		Use:   "request METHOD PATH",
		Short: "Send a request with any method",
		Example: `  brellium request OPTIONS /v2/audits
  brellium request POST /v2/audits/batch_update -d @updates.json`,
		Args:              exactArgs(2, "METHOD and PATH"),
		ValidArgsFunction: methodThenPath,
	}
	o.viaRequest = true
	return withRequestRun(c, f, g, o, runF, func(args []string) { o.Method, o.Target = strings.ToUpper(args[0]), args[1] })
}

// newIdempotencyKey returns a random UUID v4 for --idempotency-key auto.
func newIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// loadBody reads -d, -f and -F (their @FILE and @-) and checks what can be checked before
// anything is set up: the body is one JSON value (unless -H gives another Content-Type) and every
// -H is a header.
func loadBody(f *Factory, o *RequestOptions) ([]byte, error) {
	contentType := ""
	for _, h := range o.Headers {
		name, value, err := request.ParseHeader(h)
		if err != nil {
			return nil, err
		}
		if name == "Content-Type" {
			contentType = value
		}
	}
	o.fields = o.fields[:0]
	for _, raw := range o.RawFields {
		fl, err := request.ParseField(raw, false, f.IOStreams.In)
		if err != nil {
			return nil, err
		}
		o.fields = append(o.fields, fl)
	}
	for _, raw := range o.Fields {
		fl, err := request.ParseField(raw, true, f.IOStreams.In)
		if err != nil {
			return nil, err
		}
		o.fields = append(o.fields, fl)
	}
	if !o.DataSet {
		return nil, nil
	}
	body, err := request.LoadData(o.Data, f.IOStreams.In)
	if err != nil {
		return nil, err
	}
	if !request.JSONContentType(contentType) {
		return body, nil
	}
	// A byte-order mark that an editor put before a JSON file is no part of JSON (RFC 8259 §8.1
	// lets a parser ignore it): it is not sent.
	body = bytes.TrimPrefix(body, []byte("\uFEFF"))
	return body, request.ValidateJSON(body)
}

// buildSpec turns the options and the loaded body into the call to send: fields go to the query
// of a GET or HEAD and make the body of a write; --url-query adds to the query.
func buildSpec(o *RequestOptions, body []byte, base *url.URL) (*request.Spec, error) {
	key := o.IdempotencyKey
	if key == "auto" {
		key = newIdempotencyKey()
	}
	target := o.Target
	if len(o.fields) > 0 {
		if o.Method == http.MethodGet || o.Method == http.MethodHead {
			target = request.AppendQuery(target, request.QueryPairs(o.fields))
		} else {
			b, err := request.FieldsBody(o.fields)
			if err != nil {
				return nil, err
			}
			body = b
		}
	}
	var pairs [][2]string
	for _, q := range o.URLQuery {
		k, v, _ := strings.Cut(q, "=")
		pairs = append(pairs, [2]string{k, v})
	}
	target = request.AppendQuery(target, pairs)
	return request.New(base, request.Options{
		Method: o.Method, Target: target, Headers: o.Headers, Body: body,
		Idempotent: o.Idempotent, IdempotencyKey: key,
	})
}

// newLogger settles --color for the command and returns its attempt log, as -s, -v and
// --log-format say.
func newLogger(f *Factory, g *GlobalOptions, o *RequestOptions) (*output.Logger, error) {
	if err := f.IOStreams.SetColorMode(g.Color, false); err != nil {
		return nil, request.Usagef("%v", err)
	}
	return output.NewLogger(f.IOStreams, output.LogOptions{Format: o.LogFormat, Silent: o.Silent, Verbose: o.Verbose, Secrets: f.Secrets()}), nil
}

func runRequest(ctx context.Context, f *Factory, g *GlobalOptions, o *RequestOptions) error {
	logger, err := newLogger(f, g, o)
	if err != nil {
		return err
	}
	e := &ending{ctx: ctx, f: f, o: o, logger: logger, start: time.Now()}
	body, err := loadBody(f, o)
	if err != nil {
		return e.finish(err)
	}
	if o.DryRun || o.Curl {
		return e.finish(showCall(f, g, o, body))
	}
	if e.sess, err = newSession(ctx, f, g, o, logger, sessionExtras{}); err != nil {
		return e.finish(err)
	}
	defer e.sess.close()
	spec, err := buildSpec(o, body, e.sess.base)
	if err != nil {
		return e.finish(err)
	}
	switch {
	case o.Paginate:
		return e.finish(paginate(ctx, f, e.sess, o, spec, &e.out))
	case o.until != nil:
		return e.finish(pollUntil(ctx, f, e.sess, o, spec, &e.out))
	}
	return e.finish(callOnce(ctx, f, e.sess, o, spec, &e.out))
}

// ending ends a command of one call (or of its pages or polls): the -w line, the done event
// with its hint, and the error that sets the exit code.
type ending struct {
	ctx    context.Context
	f      *Factory
	o      *RequestOptions
	logger *output.Logger
	start  time.Time
	sess   *session
	out    callOutcome
}

func (e *ending) finish(err error) error {
	if err != nil && errors.Is(err, context.Canceled) {
		if intr := interruption(e.ctx); intr != nil {
			err = intr
		}
	}
	if closedStdout(err) {
		err = nil // a closed pipe on stdout is the reader's choice, not an error
	}
	final := output.Final{Outcome: outcomeOf(err), ExitCode: ExitCode(err), Elapsed: time.Since(e.start), Err: err,
		Attempts: e.out.attempts}
	if r := e.out.last; r != nil {
		final.Status, final.RequestID = r.Status, r.RequestID
	}
	final.Hint = hintFor(final.Outcome, err)
	var ae *retry.AuthError
	if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized && e.sess != nil {
		final.Hint = e.sess.tokenHint
	}
	if e.out.hint != "" {
		final.Hint = e.out.hint
	}
	if e.o.WriteOut != "" {
		_ = output.WriteWriteOut(e.f.IOStreams.Out, e.o.WriteOut, writeOutOf(final, e.out.last))
	}
	e.logger.Done(final)
	if err != nil {
		return &reportedError{err: err}
	}
	return nil
}

// callOutcome is what the command's end needs of its calls: the last answer, the attempts, and a
// hint of the command's own.
type callOutcome struct {
	last     *retry.Response
	attempts int
	hint     string
}

func (c *callOutcome) add(res *retry.Result) {
	if res != nil {
		c.attempts += res.Attempts
		if res.Response != nil {
			c.last = res.Response
		}
	}
}

// writeOutOf fills the -w variables in from how the command ended.
func writeOutOf(final output.Final, last *retry.Response) output.WriteOut {
	w := output.WriteOut{TimeTotal: final.Elapsed, ExitCode: final.ExitCode, Attempts: final.Attempts, Outcome: final.Outcome,
		Header: http.Header{}}
	if last != nil {
		w.HTTPCode, w.RequestID, w.Header = last.Status, last.RequestID, last.Header
		if rl := last.RateLimit; rl.Present {
			w.RateLimitPresent, w.RateLimitLimit, w.RateLimitRemaining, w.RateLimitReset = true, rl.Limit, rl.Remaining, rl.Reset
		}
	}
	return w
}

// callOnce sends the call and writes its answer: the body (or what --jq makes of a 2xx body) to
// stdout or -o FILE.
func callOnce(ctx context.Context, f *Factory, sess *session, o *RequestOptions, spec *request.Spec, out *callOutcome) error {
	dest, indent, color, err := openDest(f, o)
	if err != nil {
		return err
	}
	defer dest.discard()
	dest.keepAll = o.query != nil
	policy := sess.policy
	policy.Body = dest
	res, callErr := sess.engine.Do(ctx, spec, policy)
	out.add(res)
	if res != nil && res.Response != nil && !dest.spilled && (dest.file == nil || ok2xx(res.Response)) {
		if dest.file != nil {
			if werr := dest.file.restart(); werr != nil && callErr == nil {
				callErr = &retry.StreamWriteError{Err: werr}
			}
		}
		if werr := writeResponse(ctx, dest, res.Response, o, indent, color); werr != nil && callErr == nil {
			callErr = werr
		}
	}
	if callErr == nil && res != nil && ok2xx(res.Response) {
		callErr = dest.commit()
	}
	return callErr
}

// openDest is where the answer of a call goes: stdout, or the temp file of -o FILE, created now
// so that a bad path costs no request. indent and color say how a JSON body is shown. The caller
// defers dest.discard.
func openDest(f *Factory, o *RequestOptions) (dest *callBody, indent, color bool, err error) {
	ios := f.IOStreams
	dest = &callBody{out: ios.Out, include: o.Include || o.Method == http.MethodHead}
	indent, color = ios.IsStdoutTTY() || ios.ColorEnabled(), ios.ColorEnabled()
	if o.Output != "" && o.Output != "-" {
		if dest.file, err = createOutFile(o.Output); err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) { // the temporary file's name means nothing to the user
				err = pe.Err
			}
			return nil, false, false, request.Usagef("-o %s: %v", o.Output, err)
		}
		dest.out, indent, color = dest.file, false, false
	}
	return dest, indent, color, nil
}

// commit puts -o FILE in place once the whole answer is written; nothing for stdout.
func (b *callBody) commit() error {
	if b.file == nil {
		return nil
	}
	if err := b.file.commit(); err != nil {
		return &retry.StreamWriteError{Err: err}
	}
	return nil
}

// discard removes the temp file of -o that was not committed; nothing for stdout.
func (b *callBody) discard() {
	if b.file != nil {
		b.file.discard()
	}
}

// ok2xx reports a whole 2xx answer.
func ok2xx(r *retry.Response) bool {
	return r != nil && r.Status >= 200 && r.Status < 300 && !r.Truncated && r.StreamErr == nil
}

// writeResponse writes the head (for -i, and always for HEAD, as curl -I does) and the body, or
// what --jq makes of a 2xx body; an error body is written as it is.
func writeResponse(ctx context.Context, dest *callBody, r *retry.Response, o *RequestOptions, indent, color bool) error {
	w := dest.out
	if dest.include {
		if err := output.WriteHead(w, r); err != nil {
			return &retry.StreamWriteError{Err: err}
		}
	}
	if o.Method == http.MethodHead {
		return nil
	}
	if o.query != nil && r.Status >= 200 && r.Status < 300 {
		if err := writeJQ(ctx, w, o.query, r.Body); err != nil {
			return err
		}
		return nil
	}
	if err := output.WriteBody(w, r.Body, indent, color); err != nil {
		return &retry.StreamWriteError{Err: err}
	}
	return nil
}

// writeJQ writes what a jq expression makes of a JSON body; a body that is not JSON, or an
// expression that fails on it, is an error of the command's (exit 1 is a bug; this is the
// user's expression meeting the data, so it is a usage error).
func writeJQ(ctx context.Context, w io.Writer, q *output.Query, body []byte) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil // a 204, or any empty 2xx: nothing to filter, as gh api --jq prints nothing
	}
	v, err := output.DecodeJSON(body)
	if err != nil {
		return request.Usagef("--jq: %v", err)
	}
	return writeQuery(ctx, w, q, v)
}

// writeQuery writes what a jq expression makes of a decoded JSON value: the values it gave
// before any error, then the error as the user's (a usage error).
func writeQuery(ctx context.Context, w io.Writer, q *output.Query, v any) error {
	values, err := q.Run(ctx, v)
	if werr := output.WriteValues(w, values); werr != nil {
		return &retry.StreamWriteError{Err: werr}
	}
	if err != nil {
		return request.Usagef("--jq: %v", err)
	}
	return nil
}

// hintFor says what to do next after an outcome, or "".
func hintFor(o string, err error) string {
	switch retry.Outcome(o) {
	case retry.Blocked:
		return "the client is blocked: stop sending, check the request, then lower concurrency; retrying keeps the block in place"
	case retry.UnknownOutcome:
		return "check whether the write ran before sending it again; if a repeat is harmless, mark it --idempotent or send --idempotency-key"
	case retry.Exhausted:
		var ce retry.CallError
		if errors.As(err, &ce) && ce.Details().Status == 0 && ce.Details().Cause != nil {
			return "no answer came: check that the server is up and --base-url is right"
		}
		return "raise --retry or --max-time, or lower the request rate"
	}
	return ""
}
