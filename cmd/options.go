package cmd

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/brellium/brellium/output"
	"github.com/brellium/brellium/request"
)

// DefaultBaseURL is the Brellium API's origin.
const DefaultBaseURL = "https://api.brellium.com"

// GlobalOptions are the settings that several commands share, from flags or the environment.
type GlobalOptions struct {
	BaseURL string
	Rate    float64
	Burst   int
	Limiter string
	Color   string
	// Reserve is --reserve: the organization's tokens never spent; -1 until set, then the
	// command's default (a batch's is a tenth of the burst, a single call's 0).
	Reserve int
	// RateAuto is --rate auto: Rate starts at the documented rate and rises to the refill the
	// server's headers show.
	RateAuto bool
}

// documentedRate is the API's documented refill, where --rate auto starts.
const documentedRate = 5

// rateValue is --rate: requests a second, or auto.
type rateValue struct{ g *GlobalOptions }

func (r rateValue) String() string {
	if r.g.RateAuto {
		return "auto"
	}
	return strconv.FormatFloat(r.g.Rate, 'g', -1, 64)
}
func (r rateValue) Type() string { return "rate" }
func (r rateValue) Set(s string) error {
	if strings.EqualFold(strings.TrimSpace(s), "auto") {
		r.g.Rate, r.g.RateAuto = documentedRate, true
		return nil
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return fmt.Errorf("want requests per second or auto")
	}
	r.g.Rate, r.g.RateAuto = v, false
	return nil
}

// defaultReserve is a batch's reserve: a tenth of the burst, rounded up, and below the burst.
func defaultReserve(burst int) int { return min((burst+9)/10, burst-1) }

// The groups of global flags; each command takes those that act on it.
const (
	baseFlag   = 1 << iota // --base-url
	budgetFlag             // --rate, --burst, --limiter, --reserve
	colorFlag              // --color
	allGlobal  = baseFlag | budgetFlag | colorFlag
)

// maxRate bounds --rate: a million requests a second is far past any API.
const maxRate = 1e6

// addFlags binds the global flags of the groups in which to c.
func (g *GlobalOptions) addFlags(c *cobra.Command, which int) {
	fl := c.Flags()
	if which&baseFlag != 0 {
		fl.StringVar(&g.BaseURL, "base-url", DefaultBaseURL, "API origin (env BRELLIUM_BASE_URL)")
	}
	if which&budgetFlag != 0 {
		g.Rate = documentedRate
		fl.Var(rateValue{g}, "rate", "client budget: requests per second, above 0 and at most 1000000, or auto to learn the refill from the headers (env BRELLIUM_RATE)")
		fl.IntVar(&g.Burst, "burst", 100, "client budget: burst size, at least 1 (env BRELLIUM_BURST)")
		fl.StringVar(&g.Limiter, "limiter", "local", "budget scope: local|process|off|redis://HOST:PORT/DB (env BRELLIUM_LIMITER)")
		fl.IntVar(&g.Reserve, "reserve", -1, "never spend the organization's last N tokens as RateLimit-Remaining reports them (env BRELLIUM_RESERVE; default: batch a tenth of --burst, a single call 0)")
		_ = c.RegisterFlagCompletionFunc("limiter", fixedCompletion("local", "process", "off", "redis://127.0.0.1:6379/0"))
	}
	if which&colorFlag != 0 {
		fl.StringVar(&g.Color, "color", "auto", "colour: auto|always|never (NO_COLOR set means never)")
		_ = c.RegisterFlagCompletionFunc("color", fixedCompletion("auto", "always", "never"))
	}
}

func fixedCompletion(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

// resolve fills what no flag set from the environment (flags win) and checks the values, for the
// global flags that the command has. An error names the flag or the variable it came from, and
// the range it wants.
func (g *GlobalOptions) resolve(c *cobra.Command, f *Factory) error {
	fl := c.Flags()
	source := map[string]string{}
	for _, name := range []string{"base-url", "rate", "burst", "limiter", "reserve"} {
		source[name] = "--" + name
	}
	fromEnv := func(flag, env string, set func(string) error) error {
		if fl.Lookup(flag) == nil || fl.Changed(flag) {
			return nil
		}
		v := strings.TrimSpace(f.env(env))
		if v == "" {
			return nil
		}
		source[flag] = env
		if err := set(v); err != nil {
			return err
		}
		return nil
	}
	number := func(env, what string, parse func(string) error) func(string) error {
		return func(v string) error {
			if parse(v) != nil {
				return request.Usagef("%s=%q: want %s", env, v, what)
			}
			return nil
		}
	}
	err := firstError(
		fromEnv("base-url", "BRELLIUM_BASE_URL", func(v string) error { g.BaseURL = v; return nil }),
		fromEnv("rate", "BRELLIUM_RATE", number("BRELLIUM_RATE", "requests per second, a number above 0 and at most 1000000, or auto",
			rateValue{g}.Set)),
		fromEnv("burst", "BRELLIUM_BURST", number("BRELLIUM_BURST", "a whole number, at least 1",
			func(v string) (err error) { g.Burst, err = strconv.Atoi(v); return })),
		fromEnv("limiter", "BRELLIUM_LIMITER", func(v string) error { g.Limiter = v; return nil }),
		fromEnv("reserve", "BRELLIUM_RESERVE", number("BRELLIUM_RESERVE", "a whole number of tokens, 0 or more and below the burst",
			func(v string) (err error) { g.Reserve, err = strconv.Atoi(v); return })),
	)
	if err != nil {
		return err
	}
	f.Secrets().Add(request.URLPassword(g.Limiter))
	if fl.Lookup("color") != nil && !fl.Changed("color") && f.env("NO_COLOR") != "" {
		g.Color = "never"
	}
	switch {
	case fl.Lookup("rate") != nil && (!(g.Rate > 0) || g.Rate > maxRate):
		return request.Usagef("invalid %s %v: want requests per second, above 0 and at most 1000000 (--limiter off turns pacing off)", source["rate"], g.Rate)
	case fl.Lookup("burst") != nil && g.Burst < 1:
		return request.Usagef("invalid %s %d: want a burst of at least 1", source["burst"], g.Burst)
	case (fl.Changed("reserve") || source["reserve"] != "--reserve") && (g.Reserve < 0 || g.Reserve >= g.Burst):
		return request.Usagef("invalid %s %d: want 0 or more tokens, below the burst (%d)", source["reserve"], g.Reserve, g.Burst)
	case fl.Lookup("limiter") != nil:
		return validLimiter(source["limiter"], g.Limiter)
	}
	return nil
}

func validLimiter(source, v string) error {
	switch {
	case v == "local" || v == "process" || v == "off":
		return nil
	case strings.HasPrefix(v, "redis://"):
		return nil
	}
	return request.Usagef("invalid %s %q: want local, process, off or redis://HOST:PORT/DB", source, request.RedactURL(v))
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// durationValue is a flag that takes seconds ("60") or a Go duration ("1m30s").
type durationValue time.Duration

func (d *durationValue) String() string { return time.Duration(*d).String() }
func (d *durationValue) Type() string   { return "duration" }
func (d *durationValue) Set(s string) error {
	v, err := request.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = durationValue(v)
	return nil
}

// RequestOptions are the flags of one call, shared by get, post, request and the others.
type RequestOptions struct {
	Method string
	Target string

	Retry          int
	MaxTime        durationValue
	Timeout        durationValue
	BackoffBase    durationValue
	BackoffCap     durationValue
	Idempotent     bool
	IdempotencyKey string
	Data           string
	DataSet        bool
	Headers        []string
	Location       bool
	Include        bool
	Output         string
	Silent         bool
	Verbose        bool
	LogFormat      string
	Emulator       bool

	// The front door: fields and queries (as gh api and curl take them), filtering, pages,
	// write-out, and showing the call without sending it.
	RawFields []string
	Fields    []string
	URLQuery  []string
	JQ        string
	Paginate  bool
	Slurp     bool
	MaxPages  int
	WriteOut  string
	DryRun    bool
	Curl      bool

	// Waiting: --until repeats a GET every --poll until its jq expression holds.
	Until string
	Poll  durationValue

	// viaRequest says that the method came as an argument of `brellium request`.
	viaRequest bool
	// query is --jq, and until --until, compiled by check.
	query, until *output.Query
	// fields are -f and -F, read by loadBody.
	fields []request.Field
}

func newRequestOptions() *RequestOptions {
	return &RequestOptions{
		Retry: 4, MaxTime: durationValue(60 * time.Second), Timeout: durationValue(30 * time.Second),
		BackoffBase: durationValue(500 * time.Millisecond), BackoffCap: durationValue(20 * time.Second),
		LogFormat: "text", Poll: durationValue(5 * time.Second),
	}
}

// addRetryFlags binds the flags that cap a call's attempts and time.
func addRetryFlags(fl *pflag.FlagSet, o *RequestOptions) {
	fl.IntVar(&o.Retry, "retry", o.Retry, "retries after the first attempt (0 disables)")
	fl.Var(&o.MaxTime, "max-time", "cap on the whole call, waits included: seconds or a duration like 1m30s (0: none)")
	fl.Var(&o.Timeout, "timeout", "cap on each attempt (0: none)")
	fl.Var(&o.BackoffBase, "backoff-base", "full-jitter backoff: the first ceiling")
	fl.Var(&o.BackoffCap, "backoff-cap", "full-jitter backoff: the largest ceiling")
}

// addPolicyFlags binds the flags that shape retries and output.
func addPolicyFlags(fl *pflag.FlagSet, o *RequestOptions) {
	addRetryFlags(fl, o)
	fl.BoolVar(&o.Idempotent, "idempotent", false, "this call is safe to repeat")
	fl.StringVar(&o.IdempotencyKey, "idempotency-key", "", "send Idempotency-Key (KEY, or auto for a random one), the same on every attempt; implies --idempotent")
	fl.StringArrayVarP(&o.Headers, "header", "H", nil, "extra header 'Name: value' (repeatable)")
	fl.BoolVarP(&o.Location, "location", "L", false, "follow redirects (Authorization is dropped on another origin)")
	fl.StringVarP(&o.Output, "output", "o", "", "write the body to FILE instead of stdout")
	fl.BoolVarP(&o.Silent, "silent", "s", false, "drop the lines of successful attempts (errors still print)")
	fl.BoolVarP(&o.Verbose, "verbose", "v", false, "show request and response headers (credentials redacted)")
	fl.StringVar(&o.LogFormat, "log-format", o.LogFormat, "stderr format: text or json")
	fl.BoolVar(&o.Emulator, "emulator", false, "run against an in-process emulator of the API on a loopback port, with a sandbox token")
}

// addRequestFlags binds every flag of a single call.
func addRequestFlags(c *cobra.Command, o *RequestOptions) {
	fl := c.Flags()
	fl.StringVarP(&o.Data, "data", "d", "", "JSON body: literal text, @FILE, or @- for standard input")
	fl.BoolVarP(&o.Include, "include", "i", false, "print the status line and headers before the body")
	addPolicyFlags(fl, o)
	fl.StringArrayVarP(&o.RawFields, "raw-field", "f", nil, "add key=value as a string: a query parameter of a GET or HEAD, a field of a write's JSON body (repeatable)")
	fl.StringArrayVarP(&o.Fields, "field", "F", nil, "like -f, typed: true, false, null and integers as JSON, @FILE or @- for a file's text; key[]=v appends, key[sub]=v nests")
	fl.StringArrayVar(&o.URLQuery, "url-query", nil, "add key=value to the query string, encoded, with any method (repeatable)")
	fl.StringVarP(&o.JQ, "jq", "q", "", "print the jq expression's results on a 2xx body instead of the body: strings raw, other values as JSON, one a line")
	fl.BoolVar(&o.Paginate, "paginate", false, "GET every page of a list (has_more and starting_after, or Link: rel=\"next\") and print the items, one a line")
	fl.BoolVar(&o.Slurp, "slurp", false, "with --paginate: print one JSON array of every item")
	fl.IntVar(&o.MaxPages, "max-pages", 0, "with --paginate: stop after N pages (0: no limit)")
	fl.StringVarP(&o.WriteOut, "write-out", "w", "", "after the body, print FORMAT on stdout: %{http_code}, %{request_id}, %header{NAME}, %{json}… (see --help)")
	fl.BoolVar(&o.DryRun, "dry-run", false, "print the request that would go out (credentials as ***) and its repeat rule; send nothing")
	fl.BoolVar(&o.Curl, "curl", false, "print an equivalent curl command (the token as \"$BRELLIUM_ACCESS_TOKEN\"); send nothing")
	_ = c.RegisterFlagCompletionFunc("log-format", fixedCompletion("text", "json"))
}

// check validates flag combinations that flags alone cannot, and compiles --jq.
func (o *RequestOptions) check(c *cobra.Command) error {
	fl := c.Flags()
	o.DataSet = fl.Changed("data")
	hasFields := len(o.RawFields)+len(o.Fields) > 0
	reads := o.Method == http.MethodGet || o.Method == http.MethodHead
	switch {
	case o.DataSet && hasFields:
		return request.Usagef("-d and -f/-F do not go together: the fields build the body (or, on a GET, the query)")
	case o.DataSet && reads && !o.viaRequest:
		return request.Usagef("'brellium %s' sends no body: use 'brellium request %s PATH -d …' to send one anyway", strings.ToLower(o.Method), o.Method)
	case o.Paginate && o.Method != http.MethodGet:
		return request.Usagef("--paginate reads pages with GET: it does not go with %s", o.Method)
	case o.Paginate && o.Include:
		return request.Usagef("-i and --paginate do not go together: --paginate prints the items of every page, not their heads")
	case (o.Slurp || fl.Changed("max-pages")) && !o.Paginate:
		return request.Usagef("--slurp and --max-pages go with --paginate")
	case o.MaxPages < 0:
		return request.Usagef("invalid --max-pages %d: want 0 (no limit) or more", o.MaxPages)
	case o.DryRun && o.Curl:
		return request.Usagef("--dry-run and --curl do not go together: choose one way to show the call")
	case fl.Changed("poll") && o.Until == "":
		return request.Usagef("--poll goes with --until: it is the time between polls")
	case o.Until != "" && o.Paginate:
		return request.Usagef("--until and --paginate do not go together: --until polls one resource")
	case o.Until != "" && o.Poll <= 0:
		return request.Usagef("invalid --poll %s: want a time above 0, such as 5s", o.Poll.String())
	}
	if o.Until != "" {
		q, err := output.ParseQuery(o.Until)
		if err != nil {
			return request.Usagef("--until: %v", err)
		}
		o.until = q
	}
	for _, q := range o.URLQuery {
		if k, _, ok := strings.Cut(q, "="); !ok || k == "" {
			return request.Usagef("--url-query %q: want key=value", q)
		}
	}
	if o.JQ != "" {
		q, err := output.ParseQuery(o.JQ)
		if err != nil {
			return request.Usagef("--jq: %v", err)
		}
		o.query = q
	}
	if err := output.CheckWriteOut(o.WriteOut); err != nil {
		return request.Usagef("-w: %v", err)
	}
	switch {
	case o.Retry < 0:
		return request.Usagef("invalid --retry %d: want 0 or more", o.Retry)
	case o.BackoffCap < o.BackoffBase:
		return request.Usagef("--backoff-cap %s is below --backoff-base %s", o.BackoffCap.String(), o.BackoffBase.String())
	case o.LogFormat != "text" && o.LogFormat != "json":
		return request.Usagef("invalid --log-format %q: want text or json", o.LogFormat)
	case o.Emulator && c.Flags().Changed("base-url"):
		return request.Usagef("--emulator and --base-url do not go together: --emulator points the base URL at itself")
	}
	return nil
}

// exactArgs is cobra.ExactArgs with a usage error that says what is missing.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return request.Usagef("'%s' takes %s (got %d argument%s)", c.CommandPath(), what, len(args), plural(len(args)))
		}
		return nil
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// prepare is the first step of every command's RunE: check the flag combinations that flags
// alone cannot, then fill what no flag set from the environment.
func prepare(c *cobra.Command, f *Factory, g *GlobalOptions, check func(*cobra.Command) error) error {
	if err := check(c); err != nil {
		return err
	}
	return g.resolve(c, f)
}
