package transport

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/brellium/brellium/retry"
)

// maxDrain bounds how much of an unread body is read so the connection can be reused.
const maxDrain = 64 << 10

// reply is a status line and headers, with the body still to read.
type reply struct {
	status            int
	statusText, proto string
	header            http.Header
	contentLength     int64 // -1 when unknown
	body              io.Reader
}

// read reads the body as the attempt's body policy says: up to Keep bytes into the Response,
// and a longer body whole to where Spill says (or no further). A body shorter than its
// Content-Length is cut short, whether kept or spilled. describe turns a read error into what
// the engine reports.
func (a reply) read(o *retry.Outgoing, describe func(error) error) (*retry.Response, error) {
	if o.Spec.Method == http.MethodHead {
		_, _ = io.CopyN(io.Discard, a.body, maxDrain)
		return retry.NewResponse(a.status, a.statusText, a.proto, a.header, nil), nil
	}
	policy := o.Body
	if policy == nil {
		policy = retry.DefaultBody{}
	}
	keep := policy.Keep(a.status)
	body, err := readBody(a.body, a.contentLength, keep)
	if err != nil {
		return nil, fmt.Errorf("%d answer cut short: %w", a.status, describe(err))
	}
	if int64(len(body)) <= keep {
		return retry.NewResponse(a.status, a.statusText, a.proto, a.header, body), nil
	}
	// Longer than what is kept: the policy says where the whole body goes.
	r := retry.NewResponse(a.status, a.statusText, a.proto, a.header, body[:keep])
	out, err := policy.Spill(r)
	var tooLarge *retry.BodyTooLargeError
	switch {
	case errors.As(err, &tooLarge):
		return r, err
	case err != nil:
		return r, &retry.StreamWriteError{Err: err}
	case out == nil:
		r.Truncated = true
		_, _ = io.CopyN(io.Discard, a.body, maxDrain)
		return r, nil
	}
	n, werr := out.Write(body)
	r.Streamed = int64(n)
	if werr != nil {
		return r, &retry.StreamWriteError{Err: werr}
	}
	m, err := io.Copy(writerOnly{out, &werr}, a.body)
	r.Streamed += m
	switch {
	case werr != nil:
		return r, &retry.StreamWriteError{Err: werr}
	case err != nil:
		r.StreamErr = describe(err)
	case a.contentLength >= 0 && r.Streamed < a.contentLength:
		r.StreamErr = fmt.Errorf("%d of the %d bytes announced came: %w", r.Streamed, a.contentLength, io.ErrUnexpectedEOF)
	}
	return r, nil
}

// readBody reads up to limit+1 bytes of the body, in one allocation when the length is known.
func readBody(body io.Reader, length, limit int64) ([]byte, error) {
	if length > 0 && length <= limit {
		b := make([]byte, length)
		_, err := io.ReadFull(body, b)
		return b, err
	}
	b, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err == nil && length > int64(len(b)) && int64(len(b)) <= limit {
		err = io.ErrUnexpectedEOF
	}
	return b, err
}

// writerOnly records the writer's own error, to tell it from the body's read error in io.Copy.
type writerOnly struct {
	w   io.Writer
	err *error
}

func (w writerOnly) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil {
		*w.err = err
	}
	return n, err
}
