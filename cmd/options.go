package cmd

import (
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/brellium/brellium/request"
)

// DefaultBaseURL is the Brellium API's origin.
const DefaultBaseURL = "https://api.brellium.com"

// GlobalOptions are the settings every command shares, from flags or the environment.
type GlobalOptions struct {
	BaseURL string
	Rate    float64
	Burst   int
	Limiter string
	Color   string
}

func (g *GlobalOptions) addFlags(root *cobra.Command) {
	fl := root.PersistentFlags()
	fl.StringVar(&g.BaseURL, "base-url", DefaultBaseURL, "API origin (env BRELLIUM_BASE_URL)")
	fl.Float64Var(&g.Rate, "rate", 5, "client budget: requests per second (env BRELLIUM_RATE)")
	fl.IntVar(&g.Burst, "burst", 100, "client budget: burst size (env BRELLIUM_BURST)")
	fl.StringVar(&g.Limiter, "limiter", "local", "budget scope: local|process|off|redis://HOST:PORT/DB (env BRELLIUM_LIMITER)")
	fl.StringVar(&g.Color, "color", "auto", "colour: auto|always|never (NO_COLOR set means never)")
	_ = root.RegisterFlagCompletionFunc("limiter", fixedCompletion("local", "process", "off", "redis://127.0.0.1:6379/0"))
	_ = root.RegisterFlagCompletionFunc("color", fixedCompletion("auto", "always", "never"))
}

func fixedCompletion(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

// resolve fills what no flag set from the environment (flags win) and checks the values.
func (g *GlobalOptions) resolve(c *cobra.Command, f *Factory) error {
	fl := c.Flags()
	fromEnv := func(flag, env string, set func(string) error) error {
		if fl.Changed(flag) {
			return nil
		}
		v := strings.TrimSpace(f.env(env))
		if v == "" {
			return nil
		}
		if err := set(v); err != nil {
			return request.Usagef("%s=%q: %v", env, request.RedactURL(v), err)
		}
		return nil
	}
	err := firstError(
		fromEnv("base-url", "BRELLIUM_BASE_URL", func(v string) error { g.BaseURL = v; return nil }),
		fromEnv("rate", "BRELLIUM_RATE", func(v string) (err error) { g.Rate, err = strconv.ParseFloat(v, 64); return }),
		fromEnv("burst", "BRELLIUM_BURST", func(v string) (err error) { g.Burst, err = strconv.Atoi(v); return }),
		fromEnv("limiter", "BRELLIUM_LIMITER", func(v string) error { g.Limiter = v; return nil }),
	)
	if err != nil {
		return err
	}
	f.Secrets().Add(request.URLPassword(g.Limiter))
	if !fl.Changed("color") && f.env("NO_COLOR") != "" {
		g.Color = "never"
	}
	switch {
	case !(g.Rate > 0) || g.Rate > 1e6:
		return request.Usagef("invalid --rate %v: want requests per second above 0 (use --limiter off to disable pacing)", g.Rate)
	case g.Burst < 1:
		return request.Usagef("invalid --burst %d: want at least 1", g.Burst)
	}
	return validLimiter(g.Limiter)
}

func validLimiter(v string) error {
	switch {
	case v == "local" || v == "process" || v == "off":
		return nil
	case strings.HasPrefix(v, "redis://"):
		return nil
	}
	return request.Usagef("invalid --limiter %q: want local, process, off or redis://HOST:PORT/DB", request.RedactURL(v))
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
}

func newRequestOptions() *RequestOptions {
	return &RequestOptions{
		Retry: 4, MaxTime: durationValue(60 * time.Second), Timeout: durationValue(30 * time.Second),
		BackoffBase: durationValue(500 * time.Millisecond), BackoffCap: durationValue(20 * time.Second),
		LogFormat: "text",
	}
}

// addPolicyFlags binds the flags that shape retries and output.
func addPolicyFlags(fl *pflag.FlagSet, o *RequestOptions) {
	fl.IntVar(&o.Retry, "retry", o.Retry, "retries after the first attempt (0 disables)")
	fl.Var(&o.MaxTime, "max-time", "cap on the whole call, waits included: seconds or a duration like 1m30s (0: none)")
	fl.Var(&o.Timeout, "timeout", "cap on each attempt (0: none)")
	fl.Var(&o.BackoffBase, "backoff-base", "full-jitter backoff: the first ceiling")
	fl.Var(&o.BackoffCap, "backoff-cap", "full-jitter backoff: the largest ceiling")
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
	_ = c.RegisterFlagCompletionFunc("log-format", fixedCompletion("text", "json"))
}

// check validates flag combinations that flags alone cannot.
func (o *RequestOptions) check(c *cobra.Command) error {
	o.DataSet = c.Flags().Changed("data")
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
			return request.Usagef("'brellium %s' takes %s (got %d argument%s); see --help", c.Name(), what, len(args), plural(len(args)))
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
