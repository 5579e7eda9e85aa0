package output

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/brellium/brellium/retry"
)

// LogOptions say what goes on stderr.
type LogOptions struct {
	// Format is "text" (one line per attempt) or "json" (one event object per line).
	Format string
	// Silent drops the lines of successful attempts; errors still print.
	Silent bool
	// Verbose adds request and response headers, Authorization and cookies redacted.
	Verbose bool
	// Secrets are scrubbed from every line; nil scrubs nothing.
	Secrets *Secrets
}

// Logger writes the attempt events and the final outcome to stderr. It is a retry.Sink and is
// safe for concurrent use. Response bodies never go into it.
type Logger struct {
	mu   sync.Mutex
	w    io.Writer
	opts LogOptions
	pal  *Palette
}

// NewLogger returns a logger on the streams' stderr.
func NewLogger(s *IOStreams, opts LogOptions) *Logger {
	if opts.Format == "" {
		opts.Format = "text"
	}
	return &Logger{w: s.ErrOut, opts: opts, pal: NewPalette(s.ColorErrEnabled() && opts.Format == "text")}
}

// Attempt writes one attempt.
// Attempt writes one attempt. -s drops the line of a successful attempt; -v's headers still
// print.
func (l *Logger) Attempt(ev retry.Event) {
	quiet := l.opts.Silent && ev.Decision == "done"
	if quiet && !l.opts.Verbose {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.opts.Format == "json" {
		if !quiet {
			l.writeJSON(attemptJSON(ev, l.opts.Verbose))
		}
		return
	}
	if l.opts.Verbose {
		l.writeHeaders(ev)
	}
	if !quiet {
		l.println(l.attemptLine(ev))
	}
}

// println writes one line of the text log, scrubbed of secrets.
func (l *Logger) println(line string) {
	_, _ = io.WriteString(l.w, l.opts.Secrets.Scrub(line)+"\n")
}

// Pace says that brellium's pace changed, and why: "pace: …" in text, {"event":"pace",…} in
// JSON, with the estimate of the others' draw a second, the rate and the reserve.
func (l *Logger) Pace(why string, others, rate float64, reserve int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.opts.Format == "json" {
		l.writeJSON(struct {
			Event   string  `json:"event"`
			Why     string  `json:"why"`
			Others  float64 `json:"others_per_second"`
			Rate    float64 `json:"rate"`
			Reserve int     `json:"reserve"`
		}{"pace", why, math.Round(others*10) / 10, rate, reserve})
		return
	}
	l.println(l.pal.Cyan("pace:") + " " + Inert(why))
}

// Breaker says that a batch's circuit breaker opened (every worker holds) or closed: "breaker: …"
// in text, {"event":"breaker","state":"open"|"closed","why":…} in JSON.
func (l *Logger) Breaker(open bool, why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.opts.Format == "json" {
		state := "closed"
		if open {
			state = "open"
		}
		l.writeJSON(struct {
			Event string `json:"event"`
			State string `json:"state"`
			Why   string `json:"why"`
		}{"breaker", state, why})
		return
	}
	l.println(l.pal.Yellow("breaker:") + " " + Inert(why))
}

// Warn writes a warning: "warning: …" in text, {"event":"warning","message":…} in JSON.
func (l *Logger) Warn(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.opts.Format == "json" {
		l.writeJSON(map[string]string{"event": "warning", "message": msg})
		return
	}
	l.println(l.pal.Yellow("warning:") + " " + Inert(msg))
}

func (l *Logger) attemptLine(ev retry.Event) string {
	p := l.pal
	var b strings.Builder
	if ev.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", ev.Line)
	}
	b.WriteString(p.Bold(Inert(ev.Method)) + " " + Inert(ev.Path) + " ")
	if r := ev.Response; r != nil {
		status := strconv.Itoa(r.Status)
		switch {
		case r.Status < 300:
			status = p.Green(status)
		case r.Status == http.StatusTooManyRequests || r.Status < 400:
			status = p.Yellow(status)
		default:
			status = p.Red(status)
		}
		b.WriteString(status)
		if c := r.Code(); c != "" {
			b.WriteString(" " + Inert(c))
		}
		if rl := r.RateLimit; rl.Present {
			fmt.Fprintf(&b, " · ratelimit %d/%d reset %ds", rl.Remaining, rl.Limit, rl.Reset)
		}
		if r.RequestID != "" {
			b.WriteString(" · request-id " + Inert(r.RequestID))
		}
	} else {
		sent := "not sent"
		if ev.Sent {
			sent = "sent"
		}
		b.WriteString(p.Red(Inert(errString(ev.Err))) + " (" + sent + ")")
	}
	b.WriteString(" · ")
	switch ev.Decision {
	case "retry":
		if ev.Wait == 0 && ev.WaitSource == "reused connection" {
			b.WriteString(p.Yellow("sent again at once") + " (" + Inert(ev.Why) + ")")
			break
		}
		b.WriteString(p.Yellow(fmt.Sprintf("retry %d/%d in %s", ev.Retry, ev.Retries, retry.FormatDuration(ev.Wait))))
		b.WriteString(" (" + Inert(ev.WaitSource) + ")")
	case "done":
		if ev.Why != "" && ev.Why != "done" {
			b.WriteString(p.Green("done: " + Inert(ev.Why)))
		} else {
			b.WriteString(p.Green("done in " + retry.FormatDuration(ev.Elapsed)))
		}
	case "renew":
		b.WriteString(p.Yellow("re-minting the token, then repeating once"))
	case "poll":
		b.WriteString(p.Yellow("polling again in "+retry.FormatDuration(ev.Wait)) + " (" + Inert(ev.Why) + ")")
	default:
		b.WriteString(p.Red("stop: " + Inert(ev.Why)))
	}
	return b.String()
}

func errString(err error) string {
	if err == nil {
		return "no answer"
	}
	return err.Error()
}

func (l *Logger) writeHeaders(ev retry.Event) {
	l.println(l.pal.Gray(">") + " " + Inert(ev.Method) + " " + Inert(ev.Path))
	for _, line := range HeaderLines(ev.RequestHeader) {
		l.println(l.pal.Gray(">") + " " + Inert(line))
	}
	if r := ev.Response; r != nil {
		l.println(l.pal.Gray("<") + " " + Inert(r.Proto) + " " + Inert(r.StatusText))
		for _, line := range HeaderLines(r.Header) {
			l.println(l.pal.Gray("<") + " " + Inert(line))
		}
	}
}

// Redact hides credentials in a header value: Authorization keeps its scheme.
func Redact(name, value string) string {
	switch http.CanonicalHeaderKey(name) {
	case "Authorization", "Proxy-Authorization":
		if scheme, _, ok := strings.Cut(value, " "); ok {
			return scheme + " ***"
		}
		return "***"
	case "Cookie", "Set-Cookie":
		return "***"
	}
	return value
}

// HeaderLines returns "Name: value" lines sorted by name, credentials redacted.
func HeaderLines(h http.Header) []string {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	var lines []string
	for _, k := range names {
		for _, v := range h[k] {
			lines = append(lines, k+": "+Redact(k, v))
		}
	}
	return lines
}

type rateLimitJSON struct {
	Limit     int `json:"limit"`
	Remaining int `json:"remaining"`
	Reset     int `json:"reset"`
}

type attemptEvent struct {
	Event       string            `json:"event"`
	Line        int               `json:"line,omitempty"`
	Method      string            `json:"method"`
	Path        string            `json:"path"`
	Attempt     int               `json:"attempt"`
	Status      int               `json:"status,omitempty"`
	Code        string            `json:"code,omitempty"`
	RequestID   string            `json:"request_id,omitempty"`
	RateLimit   *rateLimitJSON    `json:"ratelimit,omitempty"`
	Decision    string            `json:"decision"`
	WaitMS      int64             `json:"wait_ms"`
	ElapsedMS   int64             `json:"elapsed_ms"`
	Error       string            `json:"error,omitempty"`
	Sent        *bool             `json:"sent,omitempty"`
	Why         string            `json:"why,omitempty"`
	WaitSource  string            `json:"wait_source,omitempty"`
	RequestHdr  map[string]string `json:"request_headers,omitempty"`
	ResponseHdr map[string]string `json:"response_headers,omitempty"`
}

func attemptJSON(ev retry.Event, verbose bool) attemptEvent {
	e := attemptEvent{Event: "attempt", Line: ev.Line, Method: ev.Method, Path: ev.Path, Attempt: ev.Attempt,
		Decision: ev.Decision, WaitMS: ev.Wait.Milliseconds(), ElapsedMS: ev.Elapsed.Milliseconds(),
		Why: ev.Why, WaitSource: ev.WaitSource}
	if r := ev.Response; r != nil {
		e.Status, e.Code, e.RequestID = r.Status, r.Code(), r.RequestID
		if r.RateLimit.Present {
			e.RateLimit = &rateLimitJSON{r.RateLimit.Limit, r.RateLimit.Remaining, r.RateLimit.Reset}
		}
		if verbose {
			e.ResponseHdr = flatHeaders(r.Header)
		}
	} else {
		sent := ev.Sent
		e.Error, e.Sent = errString(ev.Err), &sent
	}
	if verbose {
		e.RequestHdr = flatHeaders(ev.RequestHeader)
	}
	return e
}

func flatHeaders(h http.Header) map[string]string {
	m := make(map[string]string, len(h))
	for k, vs := range h {
		m[k] = Redact(k, strings.Join(vs, ", "))
	}
	return m
}

// Final is how a command ended, for the last log line or event.
type Final struct {
	// Outcome is the contract's outcome name (ok, usage, api_error, …).
	Outcome  string
	ExitCode int
	Attempts int
	Elapsed  time.Duration
	// Err is the error that ended the call; nil for ok.
	Err error
	// Hint is one more sentence on what to do, or "".
	Hint string
	// Status and RequestID are the last answer's, when one came.
	Status    int
	RequestID string
}

type doneEvent struct {
	Event     string `json:"event"`
	Outcome   string `json:"outcome"`
	ExitCode  int    `json:"exit_code"`
	Attempts  int    `json:"attempts"`
	ElapsedMS int64  `json:"elapsed_ms"`
	Status    int    `json:"status,omitempty"`
	Code      string `json:"code,omitempty"`
	Message   string `json:"message,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	Error     string `json:"error,omitempty"`
	Hint      string `json:"hint,omitempty"`
}

// Done writes the end of a command: in text, the error line (nothing for ok); in JSON, the
// done event.
func (l *Logger) Done(f Final) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var fail *retry.Failure
	var ce retry.CallError
	if errors.As(f.Err, &ce) {
		fail = ce.Details()
	}
	if l.opts.Format == "json" {
		e := doneEvent{Event: "done", Outcome: f.Outcome, ExitCode: f.ExitCode, Attempts: f.Attempts,
			ElapsedMS: f.Elapsed.Milliseconds(), Hint: f.Hint}
		e.Status, e.RequestID = f.Status, f.RequestID
		if fail != nil {
			e.Status, e.Code, e.Message, e.RequestID, e.Error = fail.Status, fail.Code, fail.Message, fail.RequestID, fail.Reason
		} else if f.Err != nil {
			e.Error = f.Err.Error()
		}
		l.writeJSON(e)
		return
	}
	if f.Err == nil {
		return
	}
	l.println(l.pal.Red("error:") + " " + ErrorLine(f.Err))
	if f.Hint != "" {
		l.println("hint: " + Inert(f.Hint))
	}
}

// ErrorLine describes a final error in one line: the call, the status, the error code and
// message, the full request id (users send it to support), and why brellium stopped. Every
// server-supplied part is made Inert; the message and reason are cut when very long, the
// request id only when absurd.
func ErrorLine(err error) string {
	var ce retry.CallError
	if !errors.As(err, &ce) {
		return Inert(err.Error())
	}
	f := *ce.Details()
	f.Method, f.Path = Inert(f.Method), Inert(f.Path)
	f.Code, f.Message, f.Reason = inertN(f.Code, 256), Inert(f.Message), Inert(f.Reason)
	if f.Cause != nil {
		f.Cause = errors.New(Inert(f.Cause.Error()))
	}
	var b strings.Builder
	b.WriteString(f.Summary())
	if f.RequestID != "" {
		b.WriteString(" · request-id " + inertN(f.RequestID, 256))
	}
	if f.Reason != "" {
		b.WriteString(" · " + f.Reason)
	}
	return b.String()
}

func (l *Logger) writeJSON(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	_, _ = l.w.Write(append(l.opts.Secrets.ScrubBytes(b), '\n'))
}
