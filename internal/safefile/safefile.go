// Package safefile handles the files that brellium keeps in its cache folder, which other
// processes (and, in a shared folder, other users) may touch: a lock shared by every process on
// the machine (github.com/gofrs/flock), checks that a file is the user's own and private, a
// private folder, and writes that replace a file whole.
package safefile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/gofrs/flock"
)

// Lock is an exclusive lock on a file, shared by every process on the machine that locks the
// same path.
type Lock struct{ f *flock.Flock }

// NewLock returns the lock on path (the file is created 0600 when first locked; a symbolic
// link there is refused).
func NewLock(path string) *Lock {
	return &Lock{f: flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR|noFollow), flock.SetPermissions(0o600))}
}

// Acquire takes the lock, trying every poll until ctx is done; then it returns ctx's error, or a
// plain error when the lock could not be had.
func (l *Lock) Acquire(ctx context.Context, poll time.Duration) error {
	ok, err := l.f.TryLockContext(ctx, poll)
	if ok && err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err == nil {
		err = fmt.Errorf("%s is held", l.f.Path())
	}
	return err
}

// Release lets the lock go.
func (l *Lock) Release() { _ = l.f.Unlock() }

// Close lets the lock go and closes its file.
func (l *Lock) Close() error { return l.f.Close() }

// Private reports whether path is a regular file (not a link) of this user that no one else can
// read or write. On Windows, where modes and owners do not map, only the regular-file check
// applies.
func Private(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && PrivateInfo(fi)
}

// PrivateInfo is Private for a file already looked at with Lstat or Stat.
func PrivateInfo(fi os.FileInfo) bool {
	if !fi.Mode().IsRegular() || (runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0) {
		return false
	}
	return ownedByMe(fi)
}

// EnsureDir makes dir a private folder (0700) of this user, making its parent too when it is
// missing (0700). An existing dir must be a folder of this user, not a link: it is tightened to
// 0700 when looser; anything else is refused. An existing parent is left as it is: it may be a
// folder the user shares on purpose.
func EnsureDir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("making the cache folder %s: %w", filepath.Dir(dir), err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("making the cache folder %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("the cache folder %s: %w", dir, err)
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("the cache folder %s is a link: refusing to follow it", dir)
	case !fi.IsDir():
		return fmt.Errorf("the cache folder %s is not a folder", dir)
	case !ownedByMe(fi):
		return fmt.Errorf("the cache folder %s belongs to another user", dir)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("making %s private: %w", dir, err)
		}
	}
	return nil
}

// OpenPrivate opens a file of this user that no one else can read or write, creating it 0600
// with os.O_CREATE in flag. A link in its place is refused, and so is a file that is another
// user's or open to others.
func OpenPrivate(path string, flag int) (*os.File, error) {
	if noFollow == 0 {
		if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s is a link: refusing to follow it", path)
		}
	}
	f, err := os.OpenFile(path, flag|noFollow, 0o600)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !PrivateInfo(fi) {
		err = fmt.Errorf("%s is not a private file of this user", path)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// WriteAtomic writes data to path through a private temporary file in the same folder, synced
// and renamed into place: a reader sees the old file or the new one, never a part.
func WriteAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
