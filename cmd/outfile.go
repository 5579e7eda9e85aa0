package cmd

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/brellium/brellium/output"
	"github.com/brellium/brellium/retry"
)

// outFile is -o FILE of a single call: the body goes to a temporary file beside FILE, which
// replaces FILE only when a 2xx body has arrived whole. Any other ending leaves FILE as it was.
// The temporary file is created with mode 0666 less the umask, as curl creates its output, or
// with the mode of the file it replaces.
//
// FILE that is not a regular file (/dev/null, a FIFO, a terminal), or a name of a file already
// open (/dev/stdout redirected to a file, /dev/fd/N), is written directly, as curl writes it: a
// device must never be replaced by a regular file, nor a file the shell appends to. A symbolic
// link is followed: the file it points at is replaced (or made), and the link stays.
type outFile struct {
	path   string
	tmp    *os.File
	direct bool // tmp is FILE itself
}

// createOutFile makes the temporary file beside path (or opens path itself when it is not a
// regular file), before anything is sent, so a bad path never costs a request.
func createOutFile(path string) (*outFile, error) {
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return nil, errors.New("is a directory")
	case err == nil && (!st.Mode().IsRegular() || isSpecialPath(path)):
		// O_APPEND: /dev/stdout reopens what the shell opened, `>>` or `>` (already emptied).
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return nil, err
		}
		return &outFile{path: path, tmp: f, direct: true}, nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	if err != nil {
		// A link to a file not made yet makes that file, as curl does; the link stays.
		hops := linkHops(path)
		path = hops[len(hops)-1]
	} else {
		if path, err = filepath.EvalSymlinks(path); err != nil {
			return nil, err
		}
		// A file the user may not write (0444, another user's) is refused as curl refuses it,
		// though the folder would let a rename replace it. Opened without O_TRUNC: unchanged.
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		_ = f.Close()
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	for i := 0; ; i++ {
		var b [6]byte
		_, _ = rand.Read(b[:])
		name := filepath.Join(dir, "."+base+".brellium-"+hex.EncodeToString(b[:]))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, os.ErrExist) && i < 10 {
			continue
		}
		if err != nil {
			return nil, err
		}
		if st != nil {
			_ = f.Chmod(st.Mode().Perm())
		}
		return &outFile{path: path, tmp: f}, nil
	}
}

// linkHops is path and, when it is a symbolic link, each name its chain of links leads to, up to
// the kernel's own limit of 40 links: the last is the file a write through them reaches.
func linkHops(path string) []string {
	hops := []string{path}
	for range 40 {
		target, err := os.Readlink(path)
		if err != nil {
			break // not a link
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		path = target
		hops = append(hops, path)
	}
	return hops
}

// isStream reports an output path that must be written as it is, never replaced, truncated or
// read back: an existing file that is not a regular file, or a name of a file already open.
func isStream(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.Mode().IsRegular() || isSpecialPath(path)
}

// isSpecialPath reports a path that names a file the process already has open (/dev/stdout,
// /dev/fd/N, /proc/self/fd/N), or a link whose chain passes through one: it resolves to a
// regular file when stdout is redirected to one, and a rename there would replace the file the
// shell appends to. (/dev/null and other devices are not regular files: isStream has them.)
func isSpecialPath(path string) bool {
	for _, hop := range linkHops(path) {
		if abs, err := filepath.Abs(hop); err == nil && namesAnOpenFile(abs) {
			return true
		}
	}
	return false
}

// namesAnOpenFile reports /dev/stdin, /dev/stdout, /dev/stderr, /dev/fd/N and /proc/PID/fd/N.
func namesAnOpenFile(abs string) bool {
	switch abs {
	case "/dev/stdin", "/dev/stdout", "/dev/stderr":
		return true
	}
	if strings.HasPrefix(abs, "/dev/fd/") {
		return true
	}
	rest, ok := strings.CutPrefix(abs, "/proc/")
	return ok && strings.Contains(rest, "/fd/")
}

// Write writes to the temporary file.
func (o *outFile) Write(p []byte) (int, error) { return o.tmp.Write(p) }

// restart empties the temporary file for another attempt's body; what went to a device is gone
// and nothing is taken back (the engine does not repeat an attempt spilled there).
func (o *outFile) restart() error {
	if o.direct {
		return nil
	}
	if err := o.tmp.Truncate(0); err != nil {
		return err
	}
	_, err := o.tmp.Seek(0, io.SeekStart)
	return err
}

// commit puts the temporary file in FILE's place.
func (o *outFile) commit() error {
	if o.direct {
		return o.tmp.Close()
	}
	if err := o.tmp.Sync(); err != nil {
		return err
	}
	if err := o.tmp.Close(); err != nil {
		return err
	}
	return os.Rename(o.tmp.Name(), o.path)
}

// discard removes the temporary file; after commit it does nothing. FILE written directly is
// only closed.
func (o *outFile) discard() {
	_ = o.tmp.Close()
	if !o.direct {
		_ = os.Remove(o.tmp.Name())
	}
}

// callBody is where the body of a single call goes: stdout, or -o FILE (2xx bodies only). A
// body too large to keep is spilled there as it arrives, after the head for -i.
type callBody struct {
	out     io.Writer
	file    *outFile // nil: stdout
	include bool
	spilled bool
	// keepAll keeps a 2xx body in memory, up to maxJQBody, for --jq.
	keepAll bool
}

// maxJQBody is the largest 2xx body --jq reads.
const maxJQBody = 256 << 20

func (b *callBody) Keep(status int) int64 {
	if b.keepAll && status >= 200 && status < 300 {
		return maxJQBody
	}
	return retry.DefaultBody{}.Keep(status)
}

// Restarts is true for -o FILE: the temporary file can start over (a device cannot).
func (b *callBody) Restarts() bool { return b.file != nil && !b.file.direct }

func (b *callBody) Spill(r *retry.Response) (io.Writer, error) {
	if b.keepAll && r.Status >= 200 && r.Status < 300 {
		return nil, &retry.BodyTooLargeError{Status: r.Status, Limit: maxJQBody, Hint: "--jq reads bodies up to that size"}
	}
	if b.file != nil {
		if r.Status < 200 || r.Status > 299 {
			return nil, nil // an error body does not replace the file
		}
		if err := b.file.restart(); err != nil {
			return nil, err
		}
	}
	b.spilled = true
	if b.include {
		if err := output.WriteHead(b.out, r); err != nil {
			return nil, err
		}
	}
	return b.out, nil
}
