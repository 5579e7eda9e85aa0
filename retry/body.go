package retry

import (
	"fmt"
	"io"
)

// Body limits of the default BodyPolicy: a 2xx body is kept up to DefaultKeep bytes, any other
// up to DefaultKeepError (enough for any error envelope).
const (
	DefaultKeep      = 8 << 20
	DefaultKeepError = 4 << 20
)

// BodyPolicy says where an answer's body goes. A sender reads up to Keep bytes into
// Response.Body; when the body is longer (or at once when Keep is 0), it asks Spill where the
// whole body goes, and copies it there, the kept part first.
type BodyPolicy interface {
	// Keep is how many bytes of a body with this status to hold in memory.
	Keep(status int) int64
	// Spill is called with the answer so far (status, headers, the kept part in Body) when the
	// body goes past Keep. It returns where the whole body goes; nil to read no more of it (the
	// Response is then Truncated); or an error that ends the attempt (such as a
	// *BodyTooLargeError, or the output that could not be opened).
	Spill(r *Response) (io.Writer, error)
	// Restarts says that Spill gives a fresh target on each call, so that a spilled body cut
	// short can be fetched again; otherwise the part already written out stays, and the call is
	// not repeated.
	Restarts() bool
}

// DefaultBody keeps up to DefaultKeep bytes of a 2xx body and DefaultKeepError of any other, and
// drops the rest (the Response is Truncated).
type DefaultBody struct{}

// Keep is DefaultKeep for a 2xx, DefaultKeepError otherwise.
func (DefaultBody) Keep(status int) int64 {
	if status >= 200 && status < 300 {
		return DefaultKeep
	}
	return DefaultKeepError
}

// Spill drops the rest.
func (DefaultBody) Spill(*Response) (io.Writer, error) { return nil, nil }

// Restarts is false: nothing is spilled.
func (DefaultBody) Restarts() bool { return false }

// BodyTooLargeError is a body over the limit that a BodyPolicy keeps, with nowhere else to go.
// The call has run (its answer came), so it is not repeated.
type BodyTooLargeError struct {
	Status int
	Limit  int64
	// Hint says how to get the body, e.g. which flags raise the limit.
	Hint string
}

func (e *BodyTooLargeError) Error() string {
	s := fmt.Sprintf("the %d body is over %s and was not kept", e.Status, FormatSize(e.Limit))
	if e.Hint != "" {
		s += ": " + e.Hint
	}
	return s
}

// HeadersTooLargeError is an answer whose headers are over the senders' limit (MaxHeaderBytes).
// The same request would get the same answer, so it is not repeated.
type HeadersTooLargeError struct{ Err error }

func (e *HeadersTooLargeError) Error() string {
	return fmt.Sprintf("the answer's headers are over %s (%v)", FormatSize(MaxHeaderBytes), e.Err)
}

// Unwrap returns the sender's own error.
func (e *HeadersTooLargeError) Unwrap() error { return e.Err }

// MaxHeaderBytes caps the headers of an answer, on every sender.
const MaxHeaderBytes = 64 << 10

// StaleConnectionError is a request written on a reused idle connection that the server had
// closed: the connection failed before any byte of the answer came. The server did not act on
// it, so it is sent again at once on a new connection, without counting against the call's
// retries, the retry budget or the breaker.
type StaleConnectionError struct{ Err error }

func (e *StaleConnectionError) Error() string {
	return "the server had closed the reused connection (" + e.Err.Error() + ")"
}

// Unwrap returns the connection's own error.
func (e *StaleConnectionError) Unwrap() error { return e.Err }

// FormatSize shows a byte count in binary units: 512 B, 64 KiB, 8 MiB, 1.5 GiB.
func FormatSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, suffix := float64(n), ""
	for _, s := range []string{"KiB", "MiB", "GiB", "TiB"} {
		v /= unit
		suffix = s
		if v < unit {
			break
		}
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), suffix)
	}
	return fmt.Sprintf("%.1f %s", v, suffix)
}

// RedirectRefusedError is a redirect that brellium will not follow: it would carry something of
// the call to another origin. The call stops there.
type RedirectRefusedError struct {
	Status   int
	Location string
	Why      string
}

func (e *RedirectRefusedError) Error() string {
	return fmt.Sprintf("a %d redirect to %s not followed: %s", e.Status, e.Location, e.Why)
}
