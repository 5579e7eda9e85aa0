package cmd

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/brellium/brellium/request"
	"github.com/brellium/brellium/retry"
)

// NewCmdExplain builds `brellium explain METHOD PATH [-d BODY]`: which rule applies to a call
// and what each outcome would lead to. It sends nothing.
func NewCmdExplain(f *Factory, g *GlobalOptions, runF func(*RequestOptions) error) *cobra.Command {
	o := newRequestOptions()
	c := &cobra.Command{
		Use:   "explain METHOD PATH",
		Short: "Show how a call would be retried, and why (sends nothing)",
		Example: `  brellium explain POST /v2/users -d '{"email":"a@example.com"}'
  brellium explain POST /v2/documents -d @documents.json
  brellium explain PUT /v1/things/1 --idempotent`,
		Args:              exactArgs(2, "METHOD and PATH"),
		ValidArgsFunction: methodThenPath,
		RunE: func(c *cobra.Command, args []string) error {
			o.Method, o.Target = strings.ToUpper(args[0]), args[1]
			if err := prepare(c, f, g, o.check); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runExplain(f, g, o)
		},
	}
	fl := c.Flags()
	fl.StringVarP(&o.Data, "data", "d", "", "JSON body: literal text, @FILE, or @- for standard input")
	fl.BoolVar(&o.Idempotent, "idempotent", false, "this call is safe to repeat")
	fl.StringVar(&o.IdempotencyKey, "idempotency-key", "", "an Idempotency-Key would be sent (implies --idempotent)")
	fl.StringArrayVarP(&o.Headers, "header", "H", nil, "extra header 'Name: value' (repeatable)")
	fl.IntVar(&o.Retry, "retry", o.Retry, "retries after the first attempt")
	fl.Var(&o.MaxTime, "max-time", "cap on the whole call")
	fl.Var(&o.BackoffBase, "backoff-base", "full-jitter backoff: the first ceiling")
	fl.Var(&o.BackoffCap, "backoff-cap", "full-jitter backoff: the largest ceiling")
	g.addFlags(c, baseFlag)
	return c
}

// scenario is one outcome an attempt could have.
type scenario struct {
	label string
	resp  *retry.Response
	err   error
	sent  bool
	ran   bool
	renew bool
}

func jsonError(status int, code string, headers ...string) *retry.Response {
	h := http.Header{"Content-Type": {"application/json"}}
	for i := 0; i+1 < len(headers); i += 2 {
		h.Set(headers[i], headers[i+1])
	}
	body := fmt.Sprintf(`{"error":{"type":"api_error","code":%q,"message":"","request_id":"r"}}`, code)
	return retry.NewResponse(status, "", "HTTP/1.1", h, []byte(body))
}

func scenarios(class request.Class) []scenario {
	list := []scenario{
		{label: "2xx", resp: retry.NewResponse(200, "", "HTTP/1.1", http.Header{}, nil)},
		{label: "429 RATE_LIMITED", resp: jsonError(429, "RATE_LIMITED", "Retry-After", "1")},
		{label: "408", resp: retry.NewResponse(408, "", "HTTP/1.1", http.Header{}, nil)},
		{label: "500, 502, 503, 504", resp: jsonError(503, "UNAVAILABLE")},
	}
	if r := class.Rule; r != nil {
		for _, rep := range r.Repeats {
			list = append(list, scenario{label: fmt.Sprintf("%d %s", rep.Status, strings.Join(rep.Codes, " or ")),
				resp: jsonError(rep.Status, firstCode(rep.Codes))})
		}
		for _, m := range r.DoneAfterRun {
			label := fmt.Sprint(m.Status)
			if len(m.Codes) > 0 {
				label += " " + strings.Join(m.Codes, " or ")
			}
			list = append(list, scenario{label: label + " after an attempt that may have run it",
				resp: jsonError(m.Status, firstCode(m.Codes)), ran: true})
		}
	}
	if class.KeySent {
		list = append(list, scenario{label: "409 idempotency_conflict", resp: jsonError(409, "idempotency_conflict")})
	}
	list = append(list,
		scenario{label: "other 4xx, other 5xx (400, 404, 409, 422, 501, …)", resp: jsonError(404, "NOT_FOUND")},
		scenario{label: "bare 403 (no JSON body)", resp: retry.NewResponse(403, "", "HTTP/1.1", http.Header{}, []byte("Forbidden"))},
		scenario{label: "401 with client credentials", resp: jsonError(401, "UNAUTHORIZED"), renew: true},
		scenario{label: "401 with BRELLIUM_ACCESS_TOKEN, or after the re-mint", resp: jsonError(401, "UNAUTHORIZED")},
		scenario{label: "no connection made (DNS, refused, TLS)", err: errors.New("connection refused")},
		scenario{label: "sent, then reset, EOF or timeout", err: errors.New("EOF"), sent: true},
		scenario{label: "429 with x-should-retry: false", resp: jsonError(429, "RATE_LIMITED", "X-Should-Retry", "false")},
		scenario{label: "503 with x-should-retry: false", resp: jsonError(503, "UNAVAILABLE", "X-Should-Retry", "false")},
		scenario{label: "404 with x-should-retry: true", resp: jsonError(404, "NOT_FOUND", "X-Should-Retry", "true")},
	)
	return list
}

func firstCode(codes []string) string {
	if len(codes) == 0 {
		return ""
	}
	return codes[0]
}

func runExplain(f *Factory, g *GlobalOptions, o *RequestOptions) error {
	base, err := request.ParseBaseURL(g.BaseURL)
	if err != nil {
		return err
	}
	body, err := loadBody(f, o)
	if err != nil {
		return err
	}
	spec, err := buildSpec(o, body, base)
	if err != nil {
		return err
	}
	class := request.Classify(spec)
	retries := o.Retry
	if class.Rule != nil && class.Rule.MaxAttempts > 0 {
		retries = min(retries, class.Rule.MaxAttempts-1)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", spec.Method, spec.Path())
	rule := "none (the method decides)"
	if class.Rule != nil {
		rule = class.Rule.Name
	}
	safe := "no"
	if class.Safe {
		safe = "yes"
	}
	maxTime := "no time cap"
	if o.MaxTime > 0 {
		maxTime = "within --max-time " + time.Duration(o.MaxTime).String()
	}
	b.WriteString(wrap("endpoint rule: "+rule, "", explainWidth))
	b.WriteString(wrap("safe to repeat: "+safe+" — "+class.Why, "  ", explainWidth))
	b.WriteString(wrap(fmt.Sprintf("attempts: at most %d, %s; backoff: full jitter, ceilings from %s up to %s",
		retries+1, maxTime, time.Duration(o.BackoffBase), time.Duration(o.BackoffCap)), "  ", explainWidth))
	b.WriteString(wrap("pacing: every attempt takes a token of the client budget (--rate, --burst, shared by the "+
		"processes of the machine, or machines with Redis), and keeps the organization's level as RateLimit-Remaining "+
		"reports it at or above --reserve (a single call 0, a batch a tenth of the burst): each answer re-anchors that "+
		"shared level, so the pace falls to what others leave of the refill and rises when they stop", "  ", explainWidth))
	b.WriteString("\nwhen an attempt gets …\n    → what brellium does\n\n")
	for _, sc := range scenarios(class) {
		d := retry.Decide(retry.Attempt{Response: sc.resp, Err: sc.err, Sent: sc.sent, Class: class, Ran: sc.ran, CanRenew: sc.renew})
		b.WriteString(wrap(sc.label, "  ", explainWidth))
		b.WriteString(wrap("→ "+describeDecision(d), "      ", explainWidth, "    "))
	}
	_, err = io.WriteString(f.IOStreams.Out, b.String())
	return err
}

// explainWidth is the width explain's text keeps to.
const explainWidth = 80

// wrap folds text into lines of at most width runes (a longer word stands alone), the first
// line prefixed by first (default "") and the others by indent.
func wrap(text, indent string, width int, first ...string) string {
	lead := ""
	if len(first) > 0 {
		lead = first[0]
	}
	var b strings.Builder
	line := lead
	for _, word := range strings.Fields(text) {
		if utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width && strings.TrimSpace(line) != "" {
			b.WriteString(line + "\n")
			line = indent
		}
		if strings.TrimSpace(line) != "" {
			line += " "
		}
		line += word
	}
	return b.String() + line + "\n"
}

func describeDecision(d retry.Decision) string {
	switch d.Verdict {
	case retry.Again:
		if d.ServerWait {
			return "repeat after the server's wait (Retry-After, retry-after-ms or RateLimit-Reset) + 0–500 ms jitter, else backoff"
		}
		return "repeat after full-jitter backoff"
	case retry.Renew:
		return "re-mint the token once and repeat once"
	}
	if d.Outcome == retry.OK {
		if d.Converged {
			return "done (exit 0): " + d.Why
		}
		return "done (exit 0)"
	}
	return fmt.Sprintf("stop: exit %d %s (%s)", exitCodes[string(d.Outcome)], d.Outcome, d.Why)
}
