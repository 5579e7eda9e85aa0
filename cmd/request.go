package cmd

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/brellium/brellium/output"
	"github.com/brellium/brellium/request"
	"github.com/brellium/brellium/retry"
)

var methodHelp = map[string]struct{ short, example string }{
	"GET": {"Read a resource", `  brellium get /v2/audits/a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d --emulator
  brellium get /v2/audits/ID --retry 5 --max-time 60
  brellium get '/v2/audits?limit=10' -i
  brellium get /v2/audits/ID --log-format json 2> attempts.jsonl`},
	"HEAD":   {"Read a resource's headers", `  brellium head /v2/audits/ID -i`},
	"DELETE": {"Delete a resource", `  brellium delete /v2/users/USER_ID      # safe: a 404 after an unknown outcome means done`},
	"POST": {"Create a resource (not repeated after an unknown outcome unless safe)", `  brellium post /v2/users -d '{"email":"a@example.com"}'
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
		Args: exactArgs(2, "METHOD and PATH"),
		ValidArgsFunction: func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			switch len(args) {
			case 0:
				return []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}, cobra.ShellCompDirectiveNoFileComp
			case 1:
				return pathCompletion(strings.ToUpper(args[0]))(nil, nil, toComplete)
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
	}
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

// loadBody reads -d and checks what can be checked before anything is set up: the body is
// one JSON value and every -H is a header.
func loadBody(f *Factory, o *RequestOptions) ([]byte, error) {
	for _, h := range o.Headers {
		if _, _, err := request.ParseHeader(h); err != nil {
			return nil, err
		}
	}
	if !o.DataSet {
		return nil, nil
	}
	body, err := request.LoadData(o.Data, f.IOStreams.In)
	if err != nil {
		return nil, err
	}
	return body, request.ValidateJSON(body)
}

// buildSpec turns the options and the loaded body into the call to send.
func buildSpec(o *RequestOptions, body []byte, base *url.URL) (*request.Spec, error) {
	key := o.IdempotencyKey
	if key == "auto" {
		key = newIdempotencyKey()
	}
	return request.New(base, request.Options{
		Method: o.Method, Target: o.Target, Headers: o.Headers, Body: body,
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
	ios := f.IOStreams
	logger, err := newLogger(f, g, o)
	if err != nil {
		return err
	}
	start := time.Now()
	var sess *session
	finish := func(res *retry.Result, err error) error {
		if err != nil && errors.Is(err, context.Canceled) {
			if intr := interruption(ctx); intr != nil {
				err = intr
			}
		}
		final := output.Final{Outcome: outcomeOf(err), ExitCode: ExitCode(err), Elapsed: time.Since(start), Err: err}
		if res != nil {
			final.Attempts = res.Attempts
		}
		final.Hint = hintFor(final.Outcome, err)
		var ae *retry.AuthError
		if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized && sess != nil {
			final.Hint = sess.tokenHint
		}
		logger.Done(final)
		if err != nil {
			return &reportedError{err: err}
		}
		return nil
	}

	body, err := loadBody(f, o)
	if err != nil {
		return finish(nil, err)
	}
	if sess, err = newSession(ctx, f, g, o, logger, sessionExtras{}); err != nil {
		return finish(nil, err)
	}
	defer sess.close()
	spec, err := buildSpec(o, body, sess.base)
	if err != nil {
		return finish(nil, err)
	}
	dest := &callBody{out: ios.Out, include: o.Include}
	toTerminal := ios.IsStdoutTTY()
	if o.Output != "" && o.Output != "-" {
		if dest.file, err = createOutFile(o.Output); err != nil {
			return finish(nil, request.Usagef("-o %s: %v", o.Output, err))
		}
		defer dest.file.discard()
		dest.out, toTerminal = dest.file, false
	}
	policy := sess.policy
	policy.Body = dest
	res, callErr := sess.engine.Do(ctx, spec, policy)
	if res != nil && res.Response != nil && !dest.spilled && (dest.file == nil || ok2xx(res.Response)) {
		if dest.file != nil {
			if werr := dest.file.restart(); werr != nil && callErr == nil {
				callErr = &retry.StreamWriteError{Err: werr}
			}
		}
		if werr := writeResponse(dest.out, res.Response, o, toTerminal, ios.ColorEnabled()); werr != nil && callErr == nil {
			callErr = &retry.StreamWriteError{Err: werr}
		}
	}
	if dest.file != nil && callErr == nil && res != nil && ok2xx(res.Response) {
		if werr := dest.file.commit(); werr != nil {
			callErr = &retry.StreamWriteError{Err: werr}
		}
	}
	if errors.Is(callErr, syscall.EPIPE) {
		callErr = nil // a closed pipe on stdout is the reader's choice, not an error
	}
	return finish(res, callErr)
}

// ok2xx reports a whole 2xx answer.
func ok2xx(r *retry.Response) bool {
	return r != nil && r.Status >= 200 && r.Status < 300 && !r.Truncated && r.StreamErr == nil
}

func writeResponse(w io.Writer, r *retry.Response, o *RequestOptions, terminal, color bool) error {
	if o.Include {
		if err := output.WriteHead(w, r); err != nil {
			return err
		}
	}
	if o.Method == http.MethodHead {
		return nil
	}
	return output.WriteBody(w, r.Body, terminal, color)
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
