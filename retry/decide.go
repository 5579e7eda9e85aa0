package retry

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/brellium/brellium/request"
)

// Outcome is how a call ended, as the contract names it (`outcome` in JSON). The engine gives
// these six; usage errors, interruptions and internal errors are the command line's.
type Outcome string

// The outcomes a call can have.
const (
	OK             Outcome = "ok"
	APIFailure     Outcome = "api_error"
	Exhausted      Outcome = "exhausted"
	Blocked        Outcome = "blocked"
	UnknownOutcome Outcome = "unknown_outcome"
	AuthFailure    Outcome = "auth_error"
)

// Verdict is what to do after an attempt.
type Verdict int

// The verdicts.
const (
	// Stop ends the call with Decision.Outcome.
	Stop Verdict = iota
	// Again repeats the call after a wait.
	Again
	// Renew mints a new token and repeats the call at once.
	Renew
)

// Attempt is what one attempt gave, and what the policy needs to know of the call.
type Attempt struct {
	// Response is the answer, or nil when the attempt got none.
	Response *Response
	// Err is the transport error when Response is nil.
	Err error
	// Sent says that the request may have reached the server (some of it was written).
	Sent bool
	// Class is what the endpoint table and the flags say of the call.
	Class request.Class
	// Ran says that an earlier attempt of this call may have run it.
	Ran bool
	// CanRenew says that the credential can be re-minted and has not been yet in this call.
	CanRenew bool
}

// Decision is the policy's answer for one attempt.
type Decision struct {
	Verdict Verdict
	// Outcome is how the call ends when Verdict is Stop.
	Outcome Outcome
	// Why says what led to the decision, in a few words.
	Why string
	// ServerWait says that the server's wait headers, when present, set the wait.
	ServerWait bool
	// Ran says that this attempt may have run the call.
	Ran bool
	// Converged says that an endpoint rule turned an error answer into "already done".
	Converged bool
}

// UploadRefused says what a refused upload URL means and how to get a new one.
const UploadRefused = "the upload URL has expired or is refused; get a new one by repeating POST /v2/documents with the same external_id"

// Decide classifies one attempt. It is a pure function of the attempt: the contract's repeat
// table, the endpoint rules and the server's x-should-retry word.
func Decide(a Attempt) Decision {
	safe := a.Class.Safe
	r := a.Response
	if r == nil {
		var (
			big     *HeadersTooLargeError
			refused *RedirectRefusedError
		)
		switch {
		case errors.As(a.Err, &big):
			return Decision{Verdict: Stop, Outcome: APIFailure, Ran: true, Why: big.Error() + "; the same request would get the same answer: not repeated"}
		case errors.As(a.Err, &refused):
			return Decision{Verdict: Stop, Outcome: APIFailure, Ran: true, Why: refused.Error()}
		}
		if !a.Sent {
			return Decision{Verdict: Again, Why: "no connection made (" + errText(a.Err) + "), nothing was sent"}
		}
		if safe {
			return Decision{Verdict: Again, Ran: true, Why: "sent, then " + errText(a.Err)}
		}
		return Decision{Verdict: Stop, Outcome: UnknownOutcome, Ran: true,
			Why: "sent, then " + errText(a.Err) + "; an unsafe write is not repeated: it may or may not have run"}
	}
	code := r.Code()
	rule := a.Class.Rule
	if rule != nil && a.Ran {
		for _, m := range rule.DoneAfterRun {
			if m.Matches(r.Status, code) {
				return Decision{Verdict: Stop, Outcome: OK, Converged: true,
					Why: "already done: an earlier attempt may have run it"}
			}
		}
	}
	switch {
	case r.Status >= 200 && r.Status < 300:
		return Decision{Verdict: Stop, Outcome: OK, Why: "done"}
	case a.Class.Upload && (r.Status == http.StatusForbidden || r.Status == http.StatusUnauthorized):
		// A storage host's refusal, not a Brellium block: the signed URL expired or is wrong.
		return Decision{Verdict: Stop, Outcome: APIFailure, Why: fmt.Sprintf("%d from the upload host: %s", r.Status, UploadRefused)}
	case r.Status == http.StatusUnauthorized:
		if a.CanRenew {
			return Decision{Verdict: Renew, Why: "401: re-minting the token once"}
		}
		return Decision{Verdict: Stop, Outcome: AuthFailure, Why: "401: the token was refused"}
	case r.Status == http.StatusForbidden && r.Bare():
		return Decision{Verdict: Stop, Outcome: Blocked,
			Why: "bare 403: the client is blocked; stop, check the request, lower concurrency"}
	case r.Status == http.StatusForbidden && strings.EqualFold(code, "access_denied"):
		return Decision{Verdict: Stop, Outcome: AuthFailure, Why: "access_denied: the client credentials were refused"}
	}

	d := Decision{Verdict: Stop, Outcome: APIFailure}
	again := false
	switch {
	case r.Status == http.StatusTooManyRequests:
		again, d.ServerWait, d.Why = true, true, "rate limited: a refused request changed nothing"
	case r.Status == http.StatusRequestTimeout:
		again, d.Why = true, "408: the server did not take the request"
	case matchRepeat(rule, r.Status, code, &d):
		again = true
	case isTransient5xx(r.Status):
		d.Ran, d.ServerWait = true, true
		if safe {
			again, d.Why = true, "safe to repeat"
		} else {
			d.Outcome, d.Why = UnknownOutcome, "an unsafe write is not repeated: it may or may not have run"
		}
	case r.Status == http.StatusConflict && a.Class.KeySent && isIdempotencyConflict(r):
		again, d.Why = true, "idempotency_conflict: the first attempt is still running; same key again"
	case r.Status >= 300 && r.Status < 400:
		d.Why = fmt.Sprintf("%d redirect to %s not followed (use -L to follow it)", r.Status, r.Header.Get("Location"))
	default:
		d.Why = "retrying cannot fix it"
	}
	switch ShouldRetry(r.Header) {
	case 1:
		if !again {
			again, d.Why = true, "the server said x-should-retry: true"
		}
	case -1:
		if again {
			again, d.Why = false, "the server said x-should-retry: false"
		}
	}
	if again {
		d.Verdict = Again
		d.Outcome = ""
	}
	return d
}

func matchRepeat(rule *request.Rule, status int, code string, d *Decision) bool {
	if rule == nil {
		return false
	}
	for _, rep := range rule.Repeats {
		if rep.Matches(status, code) {
			d.Ran, d.ServerWait = rep.Ran, true
			d.Why = rule.Name + " repeats it"
			return true
		}
	}
	return false
}

func isTransient5xx(status int) bool {
	switch status {
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

func isIdempotencyConflict(r *Response) bool {
	if r.Envelope == nil {
		return false
	}
	return strings.EqualFold(r.Envelope.Code, "idempotency_conflict") || strings.EqualFold(r.Envelope.Type, "idempotency_conflict")
}

func errText(err error) string {
	if err == nil {
		return "no answer"
	}
	return err.Error()
}
