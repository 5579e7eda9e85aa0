package cmd

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/brellium/brellium/output"
)

// parse runs argv through a command built with runF, so only flag handling runs.
func parse(t *testing.T, env map[string]string, build func(*Factory, *GlobalOptions, func(*RequestOptions) error) *cobra.Command, args ...string) (*RequestOptions, *GlobalOptions, error) {
	t.Helper()
	ios, _, _, _ := output.Test()
	f := &Factory{IOStreams: ios, Getenv: func(k string) string { return env[k] }}
	g := &GlobalOptions{}
	var got *RequestOptions
	root := &cobra.Command{Use: "brellium", SilenceErrors: true, SilenceUsage: true}
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(build(f, g, func(o *RequestOptions) error { got = o; return nil }))
	root.SetArgs(args)
	err := root.Execute()
	return got, g, err
}

func getCmd(f *Factory, g *GlobalOptions, runF func(*RequestOptions) error) *cobra.Command {
	return NewCmdMethod(f, g, "GET", runF)
}

func TestRequestFlags(t *testing.T) {
	o, g, err := parse(t, nil, getCmd, "get", "/v2/audits/a", "--retry", "5", "--max-time", "1m30s", "--timeout", "2.5",
		"-H", "X-A: 1", "-H", "X-B: 2", "-i", "-s", "-v", "-L", "--log-format", "json", "--idempotency-key", "auto",
		"--backoff-base", "100ms", "--backoff-cap", "2s", "-o", "out.json", "--rate", "2", "--burst", "10", "--limiter", "process", "--color", "never")
	if err != nil {
		t.Fatal(err)
	}
	if o.Method != "GET" || o.Target != "/v2/audits/a" || o.Retry != 5 || time.Duration(o.MaxTime) != 90*time.Second ||
		time.Duration(o.Timeout) != 2500*time.Millisecond || strings.Join(o.Headers, "|") != "X-A: 1|X-B: 2" ||
		!o.Include || !o.Silent || !o.Verbose || !o.Location || o.LogFormat != "json" || o.IdempotencyKey != "auto" ||
		time.Duration(o.BackoffBase) != 100*time.Millisecond || time.Duration(o.BackoffCap) != 2*time.Second || o.Output != "out.json" {
		t.Errorf("options = %+v", o)
	}
	if g.Rate != 2 || g.Burst != 10 || g.Limiter != "process" || g.Color != "never" {
		t.Errorf("globals = %+v", g)
	}
}

func TestDefaults(t *testing.T) {
	o, g, err := parse(t, nil, getCmd, "get", "/x")
	if err != nil {
		t.Fatal(err)
	}
	if o.Retry != 4 || time.Duration(o.MaxTime) != time.Minute || time.Duration(o.Timeout) != 30*time.Second ||
		time.Duration(o.BackoffBase) != 500*time.Millisecond || time.Duration(o.BackoffCap) != 20*time.Second || o.LogFormat != "text" {
		t.Errorf("defaults = %+v", o)
	}
	if g.BaseURL != DefaultBaseURL || g.Rate != 5 || g.Burst != 100 || g.Limiter != "local" || g.Color != "auto" {
		t.Errorf("global defaults = %+v", g)
	}
}

func TestEnvironmentAndFlagsWin(t *testing.T) {
	env := map[string]string{"BRELLIUM_BASE_URL": "https://env.example", "BRELLIUM_RATE": "3", "BRELLIUM_BURST": "7",
		"BRELLIUM_LIMITER": "off", "NO_COLOR": "1"}
	_, g, err := parse(t, env, getCmd, "get", "/x")
	if err != nil {
		t.Fatal(err)
	}
	if g.BaseURL != "https://env.example" || g.Rate != 3 || g.Burst != 7 || g.Limiter != "off" || g.Color != "never" {
		t.Errorf("from the environment: %+v", g)
	}
	_, g, err = parse(t, env, getCmd, "get", "/x", "--rate", "9", "--base-url", "https://flag.example", "--color", "always")
	if err != nil {
		t.Fatal(err)
	}
	if g.BaseURL != "https://flag.example" || g.Rate != 9 || g.Burst != 7 || g.Color != "always" {
		t.Errorf("flags should win: %+v", g)
	}
}

func TestBadFlagsAreUsageErrors(t *testing.T) {
	cases := [][]string{
		{"get"},
		{"get", "/a", "/b"},
		{"get", "/x", "--retry", "-1"},
		{"get", "/x", "--max-time", "soon"},
		{"get", "/x", "--max-time", "-5"},
		{"get", "/x", "--log-format", "xml"},
		{"get", "/x", "--limiter", "memcached://x"},
		{"get", "/x", "--rate", "0"},
		{"get", "/x", "--burst", "0"},
		{"get", "/x", "--backoff-base", "2s", "--backoff-cap", "1s"},
		{"get", "/x", "--emulator", "--base-url", "http://127.0.0.1:1"},
	}
	for _, args := range cases {
		_, _, err := parse(t, nil, getCmd, args...)
		if err == nil || ExitCode(err) != 2 {
			t.Errorf("%v: err = %v, want a usage error", args, err)
		}
	}
	_, _, err := parse(t, map[string]string{"BRELLIUM_RATE": "fast"}, getCmd, "get", "/x")
	if err == nil || !strings.Contains(err.Error(), "BRELLIUM_RATE") {
		t.Errorf("bad BRELLIUM_RATE: %v", err)
	}
}

func TestRequestCommandTakesAMethod(t *testing.T) {
	o, _, err := parse(t, nil, NewCmdRequest, "request", "options", "/v2/audits")
	if err != nil || o.Method != "OPTIONS" || o.Target != "/v2/audits" {
		t.Fatalf("request: %+v %v", o, err)
	}
}

// --rate auto (or BRELLIUM_RATE=auto) starts at the documented rate and learns; a number turns
// learning off again; --reserve and BRELLIUM_RESERVE are checked against the burst.
func TestRateAutoAndReserveFlags(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		args []string
		rate float64
		auto bool
	}{
		{nil, []string{"get", "/x", "--rate", "auto"}, 5, true},
		{nil, []string{"get", "/x", "--rate", "AUTO"}, 5, true},
		{map[string]string{"BRELLIUM_RATE": "auto"}, []string{"get", "/x"}, 5, true},
		{map[string]string{"BRELLIUM_RATE": "auto"}, []string{"get", "/x", "--rate", "7"}, 7, false},
		{nil, []string{"get", "/x", "--rate", "auto", "--rate", "2.5"}, 2.5, false},
		{nil, []string{"get", "/x"}, 5, false},
	} {
		_, g, err := parse(t, c.env, getCmd, c.args...)
		if err != nil || g.Rate != c.rate || g.RateAuto != c.auto {
			t.Errorf("%v %v: rate %v auto %v (%v), want %v %v", c.env, c.args, g.Rate, g.RateAuto, err, c.rate, c.auto)
		}
	}
	_, g, err := parse(t, map[string]string{"BRELLIUM_RESERVE": "7"}, getCmd, "get", "/x", "--burst", "50")
	if err != nil || g.Reserve != 7 {
		t.Errorf("BRELLIUM_RESERVE=7: %d %v", g.Reserve, err)
	}
	_, g, err = parse(t, nil, getCmd, "get", "/x")
	if err != nil || g.Reserve != -1 {
		t.Errorf("no --reserve: %d %v, want -1 (the command's default)", g.Reserve, err)
	}
	for _, args := range [][]string{{"--rate", "fast"}, {"--reserve", "100"}, {"--reserve", "5", "--burst", "5"}, {"--reserve", "-2"}} {
		if _, _, err := parse(t, nil, getCmd, append([]string{"get", "/x"}, args...)...); err == nil || ExitCode(err) != 2 {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}
