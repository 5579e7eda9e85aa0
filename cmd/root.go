// Package cmd wires the command line: one file per command, an Options struct, NewCmdX and
// runX. It is the only package that knows about cobra, flags and environment variables.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/brellium/brellium/output"
	"github.com/brellium/brellium/request"
	"github.com/brellium/brellium/retry"
	"github.com/brellium/brellium/retry/transport"
)

// Build information, stamped with -ldflags -X by the release build.
var (
	Version = "dev"
	Commit  = ""
	Date    = ""
)

// Factory holds what commands need from the outside world, so tests can replace it.
type Factory struct {
	IOStreams *output.IOStreams
	// Getenv reads an environment variable.
	Getenv func(string) string
	// Transport sends HTTP requests; nil is a clone of http.DefaultTransport.
	Transport http.RoundTripper
	// Clock is the engine's clock; nil is the system clock.
	Clock retry.Clock
	// Rand is the engine's random source for jitter; nil is math/rand.
	Rand func() float64

	// args is the command line Run was given, for messages that repeat it.
	args []string
	// secrets are the credentials of this run, scrubbed from everything it prints.
	secrets *output.Secrets
}

// Secrets returns the run's secrets: every token, client secret and password it knows of.
func (f *Factory) Secrets() *output.Secrets {
	if f.secrets == nil {
		f.secrets = &output.Secrets{}
	}
	return f.secrets
}

func (f *Factory) env(name string) string {
	if f.Getenv == nil {
		return ""
	}
	return f.Getenv(name)
}

func (f *Factory) transport() http.RoundTripper {
	if f.Transport != nil {
		return f.Transport
	}
	return transport.NewTransport()
}

// paceGC sets the collector's pace (GOGC percent) for a long-running command, unless the user
// set GOGC, and returns what restores it.
func paceGC(percent int) (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(percent)
	return func() { debug.SetGCPercent(old) }
}

// reportedError is an error that the command has already shown on stderr.
type reportedError struct{ err error }

func (e *reportedError) Error() string { return e.err.Error() }
func (e *reportedError) Unwrap() error { return e.err }

// Execute runs the command line with the process's streams, environment and signals, and
// returns the exit code for main.
func Execute(args []string) int {
	// Writes to a closed pipe return EPIPE instead of killing the process.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		if s, ok := <-sigs; ok {
			stop(&Interrupted{Signal: s})
		}
	}()
	f := &Factory{IOStreams: output.System(), Getenv: os.Getenv}
	return Run(ctx, f, args)
}

// Run runs the command line with f and returns the exit code. A context cancelled with an
// *Interrupted cause ends the command with 130 or 143.
func Run(ctx context.Context, f *Factory, args []string) int {
	f.args = args
	for _, name := range []string{"BRELLIUM_ACCESS_TOKEN", "BRELLIUM_CLIENT_SECRET"} {
		f.Secrets().Add(strings.TrimSpace(f.env(name)))
	}
	f.Secrets().Add(request.URLPassword(f.env("BRELLIUM_LIMITER")))
	root := NewCmdRoot(f)
	started := false
	root.PersistentPreRun = func(*cobra.Command, []string) { started = true }
	root.SetArgs(args)
	root.SetIn(f.IOStreams.In)
	root.SetOut(f.IOStreams.Out)
	root.SetErr(f.IOStreams.ErrOut)
	err := root.ExecuteContext(ctx)
	if closedStdout(err) {
		return 0 // stdout was closed by its reader (| head): the reader's choice, not an error
	}
	var rep *reportedError
	if err != nil && !errors.As(err, &rep) {
		if intr := interruption(ctx); intr != nil {
			err = intr
		} else if !started && ExitCode(err) == 1 {
			// An error before any command ran comes from cobra itself (unknown command or
			// flag): a usage error.
			err = &request.UsageError{Msg: err.Error()}
		}
		// One style for every error: the logger's.
		pal := output.NewPalette(f.IOStreams.ColorErrEnabled())
		fmt.Fprintln(f.IOStreams.ErrOut, f.Secrets().Scrub(pal.Red("error:")+" "+output.Inert(err.Error())))
		var usage *request.UsageError
		if errors.As(err, &usage) && !usage.NotArgs {
			fmt.Fprintln(f.IOStreams.ErrOut, "Run '"+commandPath(root, args)+" --help' for usage.")
		}
	}
	return ExitCode(err)
}

// commandPath is the command that args name ("brellium batch"), for the usage hint.
func commandPath(root *cobra.Command, args []string) string {
	if c, _, err := root.Find(args); err == nil && c != nil {
		return c.CommandPath()
	}
	return root.Name()
}

// interruption returns the signal that cancelled ctx, or nil.
func interruption(ctx context.Context) *Interrupted {
	var intr *Interrupted
	if errors.As(context.Cause(ctx), &intr) {
		return intr
	}
	return nil
}

// NewCmdRoot builds the root command and every subcommand.
func NewCmdRoot(f *Factory) *cobra.Command {
	g := &GlobalOptions{}
	root := &cobra.Command{
		Use:   "brellium",
		Short: "A curl-like client for the Brellium API and rate-limited JSON APIs",
		Long: `brellium sends requests to the Brellium REST API (or any JSON API behind --base-url) and
repeats them only when that is safe: it honours Retry-After, backs off with full jitter,
caps attempts and total time, paces itself with a client-side token bucket, and exits with
a distinct code for each way a call can end.`,
		Example: `  brellium get /v2/audits/a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d --emulator
  brellium get /v2/audits/ID --retry 5 --max-time 60
  brellium patch /v2/audits/ID -d '{"flags":["Reviewed"]}'
  brellium explain POST /v2/users`,
		Version:       versionLine(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	// --version without a shorthand: -v is --verbose on the request commands.
	root.Flags().Bool("version", false, "print the version on one line")
	root.SetFlagErrorFunc(flagError)
	withExitCodes(root)
	for _, m := range []string{"GET", "HEAD", "DELETE", "POST", "PUT", "PATCH"} {
		root.AddCommand(NewCmdMethod(f, g, m, nil))
	}
	root.AddCommand(NewCmdRequest(f, g, nil))
	root.AddCommand(NewCmdUpload(f, g, nil))
	root.AddCommand(NewCmdBatch(f, g, nil))
	root.AddCommand(NewCmdExplain(f, g, nil))
	root.AddCommand(NewCmdAuth(f, g))
	root.AddCommand(NewCmdEmulator(f, nil))
	root.AddCommand(NewCmdVersion(f))
	return root
}

// flagError makes a flag parsing error a usage error.
func flagError(c *cobra.Command, err error) error {
	return &request.UsageError{Msg: err.Error()}
}

func versionLine() string {
	v, c, d := buildInfo()
	line := "brellium " + v
	if c != "" {
		line += " (" + c
		if d != "" {
			line += ", " + d
		}
		line += ")"
	}
	return line
}

// buildInfo returns the version, commit and date: the stamped ones, else what the Go module
// system recorded.
func buildInfo() (version, commit, date string) {
	version, commit, date = Version, Commit, Date
	if bi, ok := debug.ReadBuildInfo(); ok {
		if version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && commit == "":
				commit = s.Value
			case s.Key == "vcs.time" && date == "":
				date = s.Value
			}
		}
	}
	return version, commit, date
}

// shellJoin quotes args for a POSIX shell, so that a printed command line can be pasted back.
func shellJoin(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") == "" {
			quoted[i] = a
		} else {
			quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(quoted, " ")
}
