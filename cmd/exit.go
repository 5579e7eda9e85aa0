package cmd

import (
	"errors"
	"os"
	"syscall"

	"github.com/brellium/brellium/batch"
	"github.com/brellium/brellium/request"
	"github.com/brellium/brellium/retry"
)

// The contract's outcomes that are not a call's: the engine gives the others (retry.Outcome).
const (
	outcomeInternal    = "internal"
	outcomeUsage       = "usage"
	outcomeInterrupted = "interrupted"
)

// exitCodes is the contract's exit-code table, by outcome.
var exitCodes = map[string]int{
	string(retry.OK): 0, outcomeInternal: 1, outcomeUsage: 2, string(retry.APIFailure): 3, string(retry.Exhausted): 4,
	string(retry.Blocked): 5, string(retry.UnknownOutcome): 6, string(retry.AuthFailure): 7, outcomeInterrupted: 130,
}

// Interrupted is the error of a command stopped by a signal.
type Interrupted struct{ Signal os.Signal }

func (e *Interrupted) Error() string { return "interrupted (" + signalName(e.Signal) + ")" }

func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// outcomeOf names the outcome an error stands for, as the contract's `outcome`: "ok" for nil.
func outcomeOf(err error) string {
	if err == nil {
		return string(retry.OK)
	}
	var (
		intr   *Interrupted
		usage  *request.UsageError
		failed *batch.Failed
	)
	switch {
	case errors.As(err, &intr):
		return outcomeInterrupted
	case errors.As(err, &usage):
		return outcomeUsage
	case errors.As(err, &failed):
		if failed.Outcome == "invalid" {
			return outcomeUsage // a line that could not be parsed is bad input
		}
		return failed.Outcome
	}
	if o := retry.OutcomeOf(err); o != "" {
		return string(o)
	}
	return outcomeInternal
}

// ExitCode maps an error to the contract's exit codes, through its outcome. It is the only place
// that does. An interruption by SIGTERM is 143.
func ExitCode(err error) int {
	o := outcomeOf(err)
	var intr *Interrupted
	if o == outcomeInterrupted && errors.As(err, &intr) && intr.Signal == syscall.SIGTERM {
		return 143
	}
	return exitCodes[o]
}

// closedStdout reports an error that is stdout's reader going away (| head): the reader's
// choice, not a failure (exit 0). Only a write of ours out counts: EPIPE is also what a server
// that closed the connection while a request was being written gives, and that is a failed
// attempt inside a call's failure.
func closedStdout(err error) bool {
	var swe *retry.StreamWriteError
	if errors.As(err, &swe) {
		return errors.Is(swe.Err, syscall.EPIPE)
	}
	var call interface{ Details() *retry.Failure }
	if errors.As(err, &call) {
		return false
	}
	return errors.Is(err, syscall.EPIPE)
}
