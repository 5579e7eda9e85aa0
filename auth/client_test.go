package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// mintCounter mints numbered tokens that live for ttl.
type mintCounter struct {
	mu    sync.Mutex
	n     int
	ttl   time.Duration
	err   error
	calls int
}

func (m *mintCounter) mint(context.Context) (Minted, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.err != nil {
		return Minted{}, m.err
	}
	m.n++
	return Minted{AccessToken: fmt.Sprintf("tok-%d", m.n), ExpiresIn: m.ttl}, nil
}

type fakeNow struct{ t time.Time }

func (f *fakeNow) now() time.Time { return f.t }

func newCreds(dir string, m *mintCounter, now *fakeNow) *ClientCredentials {
	return &ClientCredentials{Origin: "https://api.example:443", ClientID: "client-1", CacheDir: dir, Mint: m.mint, Now: now.now}
}

func TestClientCredentialsMintOnceAndShareTheCache(t *testing.T) {
	dir := t.TempDir()
	now := &fakeNow{time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	m := &mintCounter{ttl: time.Hour}
	a := newCreds(dir, m, now)
	got, err := a.Authorization(context.Background())
	if err != nil || got != "Bearer tok-1" {
		t.Fatalf("Authorization = %q %v", got, err)
	}
	// Another process with the same cache reads the token; a second call reuses it in memory.
	b := newCreds(dir, m, now)
	if tok, err := b.Token(context.Background()); err != nil || tok != "tok-1" {
		t.Fatalf("second instance: %q %v", tok, err)
	}
	if tok, _ := a.Token(context.Background()); tok != "tok-1" || m.calls != 1 {
		t.Fatalf("token %q after %d mints, want tok-1 after 1", tok, m.calls)
	}
	fi, err := os.Stat(a.CachePath())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cache file: %v %v", fi, err)
	}
	if di, _ := os.Stat(filepath.Dir(a.CachePath())); di.Mode().Perm() != 0o700 {
		t.Errorf("tokens folder mode %v", di.Mode().Perm())
	}
	// Another client id or origin has a cache of its own.
	c := newCreds(dir, m, now)
	c.ClientID = "client-2"
	if c.CachePath() == a.CachePath() {
		t.Fatal("two client ids share a cache file")
	}
	if tok, _ := c.Token(context.Background()); tok != "tok-2" {
		t.Fatalf("another client id got %q", tok)
	}
}

// A token is used until a minute before it expires, then minted anew.
func TestClientCredentialsMintBeforeExpiry(t *testing.T) {
	now := &fakeNow{time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	m := &mintCounter{ttl: 10 * time.Minute}
	c := newCreds(t.TempDir(), m, now)
	_, _ = c.Token(context.Background())
	now.t = now.t.Add(10*time.Minute - TokenMargin - time.Second)
	if tok, _ := c.Token(context.Background()); tok != "tok-1" {
		t.Fatalf("a token with more than the margin left was replaced: %q", tok)
	}
	now.t = now.t.Add(time.Second)
	if tok, _ := c.Token(context.Background()); tok != "tok-2" {
		t.Fatalf("a token within the margin of its expiry was kept: %q", tok)
	}
	if s := c.Status(); !s.Cached || !s.Valid || !s.ExpiresAt.Equal(now.t.Add(10*time.Minute)) {
		t.Errorf("status = %+v", s)
	}
	now.t = now.t.Add(time.Hour)
	if s := c.Status(); !s.Cached || s.Valid {
		t.Errorf("status of an expired token = %+v", s)
	}
}

// Renew replaces the refused token, unless another process already did: then its token is
// used without a second mint.
func TestClientCredentialsRenew(t *testing.T) {
	dir := t.TempDir()
	now := &fakeNow{time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	m := &mintCounter{ttl: time.Hour}
	a, b := newCreds(dir, m, now), newCreds(dir, m, now)
	_, _ = a.Token(context.Background())
	_, _ = b.Token(context.Background())
	if err := a.Renew(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tok, _ := a.Token(context.Background()); tok != "tok-2" {
		t.Fatalf("after Renew: %q", tok)
	}
	// b's token (tok-1) was refused too; a already replaced it in the cache.
	if err := b.Renew(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tok, _ := b.Token(context.Background()); tok != "tok-2" || m.calls != 2 {
		t.Fatalf("b after Renew: %q after %d mints, want tok-2 after 2", tok, m.calls)
	}
	if !a.Renewable() {
		t.Error("client credentials are renewable")
	}
}

func TestClientCredentialsMintFailure(t *testing.T) {
	m := &mintCounter{ttl: time.Hour, err: errors.New("denied")}
	c := newCreds(t.TempDir(), m, &fakeNow{time.Now()})
	if _, err := c.Authorization(context.Background()); err == nil || err.Error() != "denied" {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(c.CachePath()); !os.IsNotExist(err) {
		t.Error("a failed mint left a cache file")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m.err = nil
	if _, err := c.Token(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled context: %v", err)
	}
}

// Cache files that could have been planted or damaged are never trusted.
func TestClientCredentialsDistrustPlantedFiles(t *testing.T) {
	now := &fakeNow{time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	planted := func(origin, client string) []byte {
		b, _ := json.Marshal(map[string]any{"access_token": "planted", "expires_at": now.t.Add(time.Hour), "base_url": origin, "client_id": client})
		return b
	}
	cases := map[string]func(path string){
		"open to others": func(p string) { _ = os.WriteFile(p, planted("https://api.example:443", "client-1"), 0o644) },
		"another origin": func(p string) { _ = os.WriteFile(p, planted("https://elsewhere:443", "client-1"), 0o600) },
		"another client": func(p string) { _ = os.WriteFile(p, planted("https://api.example:443", "client-9"), 0o600) },
		"damaged":        func(p string) { _ = os.WriteFile(p, []byte("{"), 0o600) },
		"no token": func(p string) {
			_ = os.WriteFile(p, []byte(`{"base_url":"https://api.example:443","client_id":"client-1"}`), 0o600)
		},
		"a link": func(p string) {
			other := p + ".real"
			_ = os.WriteFile(other, planted("https://api.example:443", "client-1"), 0o600)
			_ = os.Symlink(other, p)
		},
		"a folder":        func(p string) { _ = os.Mkdir(p, 0o700) },
		"trusted control": func(p string) { _ = os.WriteFile(p, planted("https://api.example:443", "client-1"), 0o600) },
	}
	for name, plant := range cases {
		m := &mintCounter{ttl: time.Hour}
		c := newCreds(t.TempDir(), m, now)
		_ = os.MkdirAll(filepath.Dir(c.CachePath()), 0o700)
		plant(c.CachePath())
		tok, err := c.Token(context.Background())
		if name == "trusted control" {
			if tok != "planted" || m.calls != 0 {
				t.Errorf("%s: %q after %d mints", name, tok, m.calls)
			}
			continue
		}
		if name == "a folder" {
			if err == nil {
				t.Errorf("%s: a folder in the cache file's place was written over: %q", name, tok)
			}
			continue
		}
		if err != nil || tok != "tok-1" || m.calls != 1 {
			t.Errorf("%s: %q %v after %d mints; want a fresh mint", name, tok, err, m.calls)
		}
	}
}

func TestClientCredentialsLogout(t *testing.T) {
	m := &mintCounter{ttl: time.Hour}
	c := newCreds(t.TempDir(), m, &fakeNow{time.Now()})
	if removed, err := c.Logout(); removed || err != nil {
		t.Fatalf("logout with nothing cached: %v %v", removed, err)
	}
	if s := c.Status(); s.Cached {
		t.Fatalf("status with nothing cached: %+v", s)
	}
	_, _ = c.Token(context.Background())
	if removed, err := c.Logout(); !removed || err != nil {
		t.Fatalf("logout: %v %v", removed, err)
	}
	if _, err := os.Stat(c.CachePath()); !os.IsNotExist(err) {
		t.Fatal("the cache file is still there")
	}
}

// A loose tokens folder is tightened to 0700; a cache folder that does not exist is made.
func TestClientCredentialsTightenTheTokensFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	c := newCreds(dir, &mintCounter{ttl: time.Hour}, &fakeNow{time.Now()})
	_ = os.MkdirAll(filepath.Join(dir, "tokens"), 0o755)
	_ = os.Chmod(filepath.Join(dir, "tokens"), 0o755)
	if _, err := c.Token(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "tokens")); fi.Mode().Perm() != 0o700 {
		t.Fatalf("tokens folder mode %v, want 0700", fi.Mode().Perm())
	}
}
