package batch

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sync/semaphore"

	"github.com/brellium/brellium/retry"
)

// DefaultMaxBody is --max-body's default: the largest body a result line embeds.
const DefaultMaxBody = 8 << 20

// keepSmall is what a line keeps of any body before it asks for more memory: most bodies fit.
const keepSmall = 128 << 10

// MemoryForBodies is how much the bodies held across all workers (read, queued and being
// written) may take, whatever the server sends; a --max-body above it raises it to one body.
const MemoryForBodies = 48 << 20

// lineBody is the body policy of one line's call. Every body byte it holds in memory is
// reserved from the batch's memory for bodies until the line is written, so a batch's memory
// stays bounded at any concurrency; a worker that needs more waits for lines to be written.
//
// With --bodies DIR, a 2xx body goes to a file in DIR as it arrives, and any other final body
// after it (the result line names the file). Without it, a 2xx body over --max-body ends the
// line with a *retry.BodyTooLargeError, and an error body past what is kept is not embedded.
type lineBody struct {
	b    *run
	line int
	held int64 // bytes reserved

	buf     *capped   // a 2xx body too large for keepSmall, in memory
	file    *bodyFile // with --bodies
	spilled bool
}

func (lb *lineBody) dir() string { return lb.b.cfg.BodiesDir }

// Keep starts an attempt: what the last one held is let go, and keepSmall is reserved.
func (lb *lineBody) Keep(status int) int64 {
	lb.buf, lb.spilled = nil, false
	lb.setHeld(keepSmall)
	if status >= 200 && status < 300 {
		if lb.dir() != "" {
			return 0
		}
		// A --max-body under keepSmall is the limit too: a larger 2xx body spills and is refused.
		return min(keepSmall, lb.b.maxBody)
	}
	return keepSmall
}

func (lb *lineBody) Restarts() bool { return true }

func (lb *lineBody) Spill(r *retry.Response) (io.Writer, error) {
	if lb.dir() != "" {
		lb.spilled = true
		if lb.file == nil {
			f, err := newBodyFile(lb.dir(), lb.line)
			if err != nil {
				return nil, err
			}
			lb.file = f
		}
		return lb.file, lb.file.restart()
	}
	if r.Status < 200 || r.Status > 299 {
		return nil, nil // an error body is not embedded past what is kept
	}
	size := lb.b.maxBody
	if n, err := strconv.ParseInt(r.Header.Get("Content-Length"), 10, 64); err == nil && n >= 0 && n < size {
		size = n
	}
	if err := lb.setHeld(keepSmall + size); err != nil {
		return nil, err
	}
	lb.spilled = true
	lb.buf = &capped{b: make([]byte, 0, size), limit: lb.b.maxBody, status: r.Status}
	return lb.buf, nil
}

// setHeld makes the line's reservation n bytes, waiting for memory when it grows.
func (lb *lineBody) setHeld(n int64) error {
	switch {
	case n < lb.held:
		lb.b.mem.Release(lb.held - n)
	case n > lb.held:
		if err := lb.b.mem.Acquire(lb.b.work, n-lb.held); err != nil {
			return err
		}
	}
	lb.held = n
	return nil
}

// body returns the call's final body and whether it is whole: the spilled one, or what the
// answer kept. It holds only the memory the body takes from then on.
func (lb *lineBody) body(r *retry.Response) ([]byte, bool) {
	body, whole := r.Body, !r.Truncated && r.StreamErr == nil
	if lb.spilled && lb.buf != nil {
		body = lb.buf.b
	}
	_ = lb.setHeld(int64(len(body)))
	return body, whole
}

// release lets go of all the line holds.
func (lb *lineBody) release() { _ = lb.setHeld(0) }

// capped is an in-memory body that refuses to grow past limit.
type capped struct {
	b      []byte
	limit  int64
	status int
}

func (c *capped) Write(p []byte) (int, error) {
	if int64(len(c.b)+len(p)) > c.limit {
		return 0, &retry.BodyTooLargeError{Status: c.status, Limit: c.limit,
			Hint: "use --bodies DIR to write bodies to files, or raise --max-body"}
	}
	c.b = append(c.b, p...)
	return len(p), nil
}

// bodyFile is a line's body on its way to DIR: a private temporary file, renamed to
// DIR/LINE.EXT once the body is whole.
type bodyFile struct {
	dir  string
	line int
	f    *os.File
}

func newBodyFile(dir string, line int) (*bodyFile, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf(".%d.%s.tmp", line, hex.EncodeToString(b[:]))), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--bodies: %w", err)
	}
	return &bodyFile{dir: dir, line: line, f: f}, nil
}

func (f *bodyFile) Write(p []byte) (int, error) { return f.f.Write(p) }

func (f *bodyFile) restart() error {
	if err := f.f.Truncate(0); err != nil {
		return err
	}
	_, err := f.f.Seek(0, io.SeekStart)
	return err
}

// commit names the file after the line, with an extension for its content type, and returns
// its path.
func (f *bodyFile) commit(contentType string) (string, error) {
	if err := f.f.Close(); err != nil {
		return "", err
	}
	path := filepath.Join(f.dir, strconv.Itoa(f.line)+extension(contentType))
	if err := os.Rename(f.f.Name(), path); err != nil {
		return "", err
	}
	return path, nil
}

func (f *bodyFile) discard() {
	_ = f.f.Close()
	_ = os.Remove(f.f.Name())
}

// extension is a body file's: .json for JSON, .txt for text, .xml, .html, else .bin.
func extension(contentType string) string {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch {
	case mt == "application/json" || (len(mt) > 5 && mt[len(mt)-5:] == "+json"):
		return ".json"
	case mt == "text/html":
		return ".html"
	case mt == "application/xml" || mt == "text/xml":
		return ".xml"
	case len(mt) > 5 && mt[:5] == "text/":
		return ".txt"
	}
	return ".bin"
}

// newMemory returns the batch's memory for bodies, room for at least one body of maxBody.
func newMemory(maxBody int64) *semaphore.Weighted {
	return semaphore.NewWeighted(max(MemoryForBodies, maxBody+keepSmall))
}
