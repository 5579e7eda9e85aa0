package retry

import (
	"errors"
	"fmt"
	"strings"
)

// Failure is what every typed call error carries: the last answer and why brellium stopped.
type Failure struct {
	Method, Path string
	// Status is the last answer's status, 0 when there was none.
	Status int
	// Code, Message and RequestID come from the API's error envelope and x-request-id.
	Code, Message, RequestID string
	// Reason says what brellium decided and why.
	Reason string
	// Attempts is how many requests were sent (or tried) for the call.
	Attempts int
	// Cause is the transport error of the last attempt, if any.
	Cause error
}

// Summary names the call and its last answer: "GET /v2/x 404 NOT_FOUND: message", or the
// transport error when no answer came.
func (f *Failure) Summary() string {
	var b strings.Builder
	b.WriteString(f.Method + " " + f.Path)
	if f.Status != 0 {
		fmt.Fprintf(&b, " %d", f.Status)
	}
	if f.Code != "" {
		b.WriteString(" " + f.Code)
	}
	if f.Message != "" {
		b.WriteString(": " + f.Message)
	}
	if f.Status == 0 && f.Cause != nil && !strings.Contains(f.Reason, f.Cause.Error()) {
		b.WriteString(": " + f.Cause.Error())
	}
	return b.String()
}

func (f *Failure) describe(kind string) string {
	s := kind + ": " + f.Summary()
	if f.Reason != "" {
		s += " (" + f.Reason + ")"
	}
	if f.RequestID != "" {
		s += " request-id " + f.RequestID
	}
	return s
}

// Details returns the failure itself; every typed error has it.
func (f *Failure) Details() *Failure { return f }

// Unwrap returns the transport error of the last attempt.
func (f *Failure) Unwrap() error { return f.Cause }

// APIError is a final error answer that retrying cannot fix (exit 3).
type APIError struct{ Failure }

func (e *APIError) Error() string { return e.describe("api error") }

// ExhaustedError is a retryable failure that lasted past --retry or --max-time (exit 4).
type ExhaustedError struct{ Failure }

func (e *ExhaustedError) Error() string { return e.describe("gave up") }

// BlockedError is a bare 403: the client is blocked (exit 5).
type BlockedError struct{ Failure }

func (e *BlockedError) Error() string { return e.describe("blocked") }

// UnknownOutcomeError is an unsafe write that may or may not have run, not repeated (exit 6).
type UnknownOutcomeError struct{ Failure }

func (e *UnknownOutcomeError) Error() string { return e.describe("outcome unknown") }

// AuthError is a refused credential: 401 after one re-mint, or access_denied (exit 7).
type AuthError struct{ Failure }

func (e *AuthError) Error() string { return e.describe("auth error") }

// CallError is implemented by every typed error of the engine.
type CallError interface {
	error
	Details() *Failure
}

func newCallError(o Outcome, f Failure) error {
	switch o {
	case Exhausted:
		return &ExhaustedError{f}
	case Blocked:
		return &BlockedError{f}
	case UnknownOutcome:
		return &UnknownOutcomeError{f}
	case AuthFailure:
		return &AuthError{f}
	default:
		return &APIError{f}
	}
}

// OutcomeOf returns the outcome that err stands for: OK for nil, "" for an error that is not
// one of the engine's typed errors.
func OutcomeOf(err error) Outcome {
	if err == nil {
		return OK
	}
	var (
		api *APIError
		ex  *ExhaustedError
		bl  *BlockedError
		uo  *UnknownOutcomeError
		au  *AuthError
	)
	switch {
	case errors.As(err, &bl):
		return Blocked
	case errors.As(err, &uo):
		return UnknownOutcome
	case errors.As(err, &au):
		return AuthFailure
	case errors.As(err, &ex):
		return Exhausted
	case errors.As(err, &api):
		return APIFailure
	}
	return ""
}
