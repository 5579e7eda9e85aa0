package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/brellium/brellium/internal/safefile"
)

// TokenMargin is how long before its expiry a cached token stops being used, at most: a token
// that lives less than twice as long is used for the first half of its life.
const TokenMargin = 60 * time.Second

// MaxTokenLife caps the life a token endpoint may give a token: past it, brellium mints anew.
const MaxTokenLife = 30 * 24 * time.Hour

// maxCacheFile caps how much of a token cache file is read.
const maxCacheFile = 64 << 10

// Minted is a token fresh from the token endpoint.
type Minted struct {
	AccessToken string
	ExpiresIn   time.Duration
}

// Minter mints a token from client credentials.
type Minter func(ctx context.Context) (Minted, error)

// cachedToken is the token cache file.
type cachedToken struct {
	AccessToken string    `json:"access_token"`
	ExpiresAt   time.Time `json:"expires_at"`
	// MintedAt is when the token was minted; the zero time (older caches) counts as long ago.
	MintedAt time.Time `json:"minted_at,omitzero"`
	BaseURL  string    `json:"base_url"`
	ClientID string    `json:"client_id"`
}

// margin is how long before its expiry the token stops being used.
func (t *cachedToken) margin() time.Duration {
	if t.MintedAt.IsZero() {
		return TokenMargin
	}
	return min(TokenMargin, t.ExpiresAt.Sub(t.MintedAt)/2)
}

// ClientCredentials is a retry.Authorizer that mints tokens from a client id and secret, caches
// them in a folder shared by every process (folder 0700, file 0600, written atomically), reuses
// them until TokenMargin before they expire, and lets one process mint while the others wait on a
// file lock and then read its result.
type ClientCredentials struct {
	// Origin and ClientID key the cache.
	Origin   string
	ClientID string
	// CacheDir is the cache folder.
	CacheDir string
	Mint     Minter
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// OnToken, when set, hears every token read from the cache or minted, so that it can be
	// kept out of every output.
	OnToken func(token string)

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
	return t != nil && t.AccessToken != "" && c.now().Add(t.margin()).Before(t.ExpiresAt)
}

// use makes t the current token, and tells OnToken.
func (c *ClientCredentials) use(t *cachedToken) *cachedToken {
	c.current = t
	if c.OnToken != nil {
		c.OnToken(t.AccessToken)
	}
	return t
}

// get returns the cached token when it is valid and not the refused one; otherwise it mints
// under the file lock, so that processes that need a token at once mint it once.
func (c *ClientCredentials) get(ctx context.Context, refused string) (*cachedToken, error) {
	path := c.CachePath()
	usable := func(t *cachedToken) bool { return c.valid(t) && t.AccessToken != refused }
	if t := c.read(path); usable(t) {
		return c.use(t), nil
	}
	if err := safefile.EnsureDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	lock := safefile.NewLock(path + ".lock")
	if err := lock.Acquire(ctx, 20*time.Millisecond); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("locking the token cache %s: %v", path+".lock", err)
	}
	defer lock.Close()
	// Another process may have minted while this one waited.
	if t := c.read(path); usable(t) {
		return c.use(t), nil
	}
	m, err := c.Mint(ctx)
	if err != nil {
		return nil, err
	}
	if c.OnToken != nil {
		c.OnToken(m.AccessToken)
	}
	now := c.now()
	life := min(max(m.ExpiresIn, time.Second), MaxTokenLife)
	t := &cachedToken{AccessToken: m.AccessToken, ExpiresAt: now.Add(life), MintedAt: now, BaseURL: c.Origin, ClientID: c.ClientID}
	b, _ := json.Marshal(t)
	if err := safefile.WriteAtomic(path, b); err != nil {
		return nil, fmt.Errorf("writing the token cache: %w", err)
	}
	return c.use(t), nil
}

// read returns the cached token, or nil when the file is missing, damaged, not this user's, open
// to others, or for another origin or client: such a file is never trusted.
func (c *ClientCredentials) read(path string) *cachedToken {
	f, err := safefile.OpenPrivate(path, os.O_RDONLY)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCacheFile))
	if err != nil {
		return nil
	}
	var t cachedToken
	if json.Unmarshal(b, &t) != nil || t.BaseURL != c.Origin || t.ClientID != c.ClientID || t.AccessToken == "" {
		return nil
	}
	return &t
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
