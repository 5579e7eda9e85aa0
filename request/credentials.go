package request

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/gofrs/flock"
)

// TokenMargin is how long before its expiry a cached token stops being used.
const TokenMargin = 60 * time.Second

// Minted is a token fresh from the token endpoint.
type Minted struct {
	AccessToken string
	ExpiresIn   time.Duration
}

// Minter mints a token from client credentials (through the retry engine).
type Minter func(ctx context.Context) (Minted, error)

// cachedToken is the token cache file.
type cachedToken struct {
	AccessToken string    `json:"access_token"`
	ExpiresAt   time.Time `json:"expires_at"`
	BaseURL     string    `json:"base_url"`
	ClientID    string    `json:"client_id"`
}

// ClientCredentials is an Authorizer (see retry.Authorizer) that mints tokens from a client id and
// secret, caches them in a folder shared by every process (folder 0700, file 0600, written
// atomically), reuses them until TokenMargin before they expire, and lets one process mint while
// the others wait on a file lock and then read its result.
type ClientCredentials struct {
	// Origin and ClientID key the cache.
	Origin   string
	ClientID string
	// CacheDir is the cache folder.
	CacheDir string
	Mint     Minter
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	mu      sync.Mutex
	current *cachedToken
}

func (c *ClientCredentials) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

// CachePath is the token's cache file: one per origin and client id.
func (c *ClientCredentials) CachePath() string {
	sum := sha256.Sum256([]byte(c.Origin + "\x00" + c.ClientID))
	return filepath.Join(c.CacheDir, "tokens", hex.EncodeToString(sum[:12])+".json")
}

// Authorization returns "Bearer TOKEN", minting or reading the cache as needed.
func (c *ClientCredentials) Authorization(ctx context.Context) (string, error) {
	tok, err := c.Token(ctx)
	if err != nil {
		return "", err
	}
	return "Bearer " + tok, nil
}

// Renewable is true: a refused token can be re-minted.
func (c *ClientCredentials) Renewable() bool { return true }

// Renew mints a new token after a 401, unless another process already replaced the refused one.
func (c *ClientCredentials) Renew(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	refused := ""
	if c.current != nil {
		refused = c.current.AccessToken
	}
	_, err := c.get(ctx, refused)
	return err
}

// Token returns a valid access token.
func (c *ClientCredentials) Token(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.valid(c.current) {
		return c.current.AccessToken, nil
	}
	t, err := c.get(ctx, "")
	if err != nil {
		return "", err
	}
	return t.AccessToken, nil
}

func (c *ClientCredentials) valid(t *cachedToken) bool {
	return t != nil && t.AccessToken != "" && c.now().Add(TokenMargin).Before(t.ExpiresAt)
}

// get returns the cached token when it is valid and not the refused one; otherwise it mints
// under the file lock, so that processes that need a token at once mint it once.
func (c *ClientCredentials) get(ctx context.Context, refused string) (*cachedToken, error) {
	path := c.CachePath()
	usable := func(t *cachedToken) bool { return c.valid(t) && t.AccessToken != refused }
	if t := c.read(path); usable(t) {
		c.current = t
		return t, nil
	}
	if err := ensureDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	lock := flock.New(path + ".lock")
	locked, err := lock.TryLockContext(ctx, 20*time.Millisecond)
	if err != nil || !locked {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("locking the token cache %s: %v", path+".lock", err)
	}
	defer lock.Unlock()
	// Another process may have minted while this one waited.
	if t := c.read(path); usable(t) {
		c.current = t
		return t, nil
	}
	m, err := c.Mint(ctx)
	if err != nil {
		return nil, err
	}
	t := &cachedToken{AccessToken: m.AccessToken, ExpiresAt: c.now().Add(m.ExpiresIn), BaseURL: c.Origin, ClientID: c.ClientID}
	if err := writeAtomic(path, t); err != nil {
		return nil, err
	}
	c.current = t
	return t, nil
}

// read returns the cached token, or nil when the file is missing, damaged, not this user's, open
// to others, or for another origin or client: such a file is never trusted.
func (c *ClientCredentials) read(path string) *cachedToken {
	if !privateFile(path) {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var t cachedToken
	if json.Unmarshal(b, &t) != nil || t.BaseURL != c.Origin || t.ClientID != c.ClientID || t.AccessToken == "" {
		return nil
	}
	return &t
}

// privateFile reports whether path is a regular file of this user that no one else can read.
// (On Windows, where modes and owners do not map, only the regular-file check applies.)
func privateFile(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || (runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0) {
		return false
	}
	return ownedByMe(fi)
}

// ensureDir makes a private folder (0700) inside the cache folder, the cache folder too when it
// is missing, and tightens the private folder when it is looser. An existing cache folder is left
// as it is: it may be one the user shares on purpose.
func ensureDir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("making the cache folder %s: %w", filepath.Dir(dir), err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("making the cache folder %s: %w", dir, err)
	}
	if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("making %s private: %w", dir, err)
		}
	}
	return nil
}

// writeAtomic writes v as JSON to path through a temporary file (0600) and a rename.
func writeAtomic(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("writing the token cache: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the token cache: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing the token cache: %w", err)
	}
	return nil
}

// TokenStatus describes the cached token without showing it.
type TokenStatus struct {
	Path      string
	Cached    bool
	ExpiresAt time.Time
	Valid     bool
}

// Status reports on the cached token; it never returns the token.
func (c *ClientCredentials) Status() TokenStatus {
	s := TokenStatus{Path: c.CachePath()}
	if t := c.read(s.Path); t != nil {
		s.Cached, s.ExpiresAt, s.Valid = true, t.ExpiresAt, c.valid(t)
	}
	return s
}

// Logout removes the cached token. It reports whether there was one.
func (c *ClientCredentials) Logout() (bool, error) {
	err := os.Remove(c.CachePath())
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}
