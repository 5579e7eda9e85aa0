package transport

import (
	"fmt"
	"io"
	"net/http"

	"github.com/brellium/brellium/retry"
)

// maxDrain bounds how much of an unread body is read so the connection can be reused.
const maxDrain = 64 << 10

// Body limits: an error body is kept up to MaxErrorBody bytes; a 2xx body is kept in memory up
// to StreamAfter bytes and, when the attempt has a Stream, streamed past that.
const (
	MaxErrorBody = 4 << 20
	StreamAfter  = 8 << 20
)

// reply is a status line and headers, with the body still to read.
type reply struct {
	status            int
	statusText, proto string
	header            http.Header
	contentLength     int64 // -1 when unknown
	body              io.Reader
}

// read reads the body as the attempt says: in full up to a limit, then streamed out or cut.
// describe turns a read error into what the engine reports.
func (a reply) read(o *retry.Outgoing, describe func(error) error) (*retry.Response, error) {
	if o.Spec.Method == http.MethodHead {
		_, _ = io.CopyN(io.Discard, a.body, maxDrain)
		return retry.NewResponse(a.status, a.statusText, a.proto, a.header, nil), nil
	}
	limit := int64(MaxErrorBody)
	if a.status >= 200 && a.status < 300 {
		limit = StreamAfter
	}
	body, err := readBody(a.body, a.contentLength, limit)
	if err != nil {
		return nil, fmt.Errorf("%d answer cut short: %w", a.status, describe(err))
	}
	if int64(len(body)) <= limit {
		return retry.NewResponse(a.status, a.statusText, a.proto, a.header, body), nil
	}
	if limit == MaxErrorBody || o.Stream == nil {
		// Too large to keep: keep the first part, drop the rest.
		r := retry.NewResponse(a.status, a.statusText, a.proto, a.header, body[:limit])
		r.Truncated = true
		_, _ = io.CopyN(io.Discard, a.body, maxDrain)
		return r, nil
	}
	// A large 2xx body: stream it out as it arrives.
	r := retry.NewResponse(a.status, a.statusText, a.proto, a.header, nil)
	out, err := o.Stream(r)
	if err != nil {
		return r, &retry.StreamWriteError{Err: err}
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
	return io.ReadAll(io.LimitReader(body, limit+1))
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
