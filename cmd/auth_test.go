package cmd

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brellium/brellium/auth"
	"github.com/brellium/brellium/emulator"
	"github.com/brellium/brellium/request"
)

func newAuthHarness(t *testing.T, cfg emulator.Config) *harness {
	t.Helper()
	cfg.ClientSecret = "s3cret"
	h := newHarness(t, cfg)
	delete(h.env, "BRELLIUM_ACCESS_TOKEN")
	h.env["BRELLIUM_CLIENT_ID"] = "client-1"
	h.env["BRELLIUM_CLIENT_SECRET"] = "s3cret"
	h.env["BRELLIUM_CACHE_DIR"] = t.TempDir()
	return h
}

func (h *harness) tokenPath() string {
	cc := &auth.ClientCredentials{Origin: request.Origin(mustURL(h.t, h.srv.URL)), ClientID: h.env["BRELLIUM_CLIENT_ID"], CacheDir: h.env["BRELLIUM_CACHE_DIR"]}
	return cc.CachePath()
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := request.ParseBaseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestSequentialCallsMintOnce(t *testing.T) {
	h := newAuthHarness(t, emulator.Config{})
	for i := 0; i < 3; i++ {
		if r := h.run("get", "/v2/audits/"+emulator.SampleAuditID); r.code != 0 {
			t.Fatalf("call %d: exit %d\n%s", i+1, r.code, r.errOut)
		}
	}
	if m := h.em.Stats().Mints; m != 1 {
		t.Fatalf("mints = %d, want 1", m)
	}
	path := h.tokenPath()
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode: %v %v", fi, err)
	}
	if di, _ := os.Stat(filepath.Dir(path)); di.Mode().Perm() != 0o700 {
		t.Fatalf("token folder mode %v, want 0700", di.Mode().Perm())
	}
}

func TestExpiredCachedTokenIsReminted(t *testing.T) {
	h := newAuthHarness(t, emulator.Config{TokenTTL: time.Hour})
	_ = h.run("get", "/v2/audits/"+emulator.SampleAuditID)
	h.clock.mu.Lock()
	h.clock.now = h.clock.now.Add(time.Hour - 30*time.Second) // within the 60 s margin
	h.clock.mu.Unlock()
	if r := h.run("get", "/v2/audits/"+emulator.SampleAuditID); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.errOut)
	}
	if m := h.em.Stats().Mints; m != 2 {
		t.Fatalf("mints = %d, want 2", m)
	}
}

func TestA401RemintsOnceAndRepeatsOnce(t *testing.T) {
	h := newAuthHarness(t, emulator.Config{})
	sample := "/v2/audits/" + emulator.SampleAuditID
	h.em.Script(emulator.Fault{Path: sample, Status: 401, Code: "TOKEN_EXPIRED"})
	r := h.run("get", sample)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.errOut)
	}
	if s := h.em.Stats(); s.Mints != 2 || s.Responses["401"] != 1 || s.Responses["200"] != 3 {
		t.Fatalf("stats %+v: want 2 mints, one 401, then the repeat", s)
	}
	h.em.Script(emulator.Fault{Path: sample, Status: 401, Code: "TOKEN_EXPIRED", Times: 5})
	r = h.run("get", sample)
	if r.code != 7 || !strings.Contains(r.errOut, "after one re-mint") {
		t.Fatalf("401 twice: exit %d\n%s", r.code, r.errOut)
	}
	if s := h.em.Stats(); s.Mints != 3 || s.Responses["401"] != 3 {
		t.Fatalf("stats %+v: want exactly one more re-mint and one repeat", s)
	}
}

func TestWrongSecretIsAnAuthError(t *testing.T) {
	h := newAuthHarness(t, emulator.Config{})
	h.env["BRELLIUM_CLIENT_SECRET"] = "wrong"
	r := h.run("get", "/v2/audits/"+emulator.SampleAuditID)
	if r.code != 7 || !strings.Contains(r.errOut, "access_denied: The client credentials were refused") {
		t.Fatalf("exit %d\n%s", r.code, r.errOut)
	}
	if strings.Contains(r.errOut, "wrong") {
		t.Fatal("the secret was printed")
	}
}

func TestUntrustworthyCacheFilesAreReplaced(t *testing.T) {
	// Each plant takes the subtest's own t, so that a skip skips the subtest alone.
	cases := map[string]func(t *testing.T, path string){
		"corrupt": func(_ *testing.T, p string) { _ = os.WriteFile(p, []byte("{not json"), 0o600) },
		"open to others": func(_ *testing.T, p string) {
			_ = os.WriteFile(p, []byte(`{"access_token":"planted","expires_at":"2099-01-01T00:00:00Z"}`), 0o644)
		},
		"foreign-owned": func(t *testing.T, p string) {
			_ = os.WriteFile(p, []byte(`{"access_token":"planted","expires_at":"2099-01-01T00:00:00Z"}`), 0o600)
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Skipf("cannot chown as this user: %v", err)
			}
		},
		"another origin": func(_ *testing.T, p string) {
			_ = os.WriteFile(p, []byte(`{"access_token":"planted","expires_at":"2099-01-01T00:00:00Z","base_url":"https://elsewhere","client_id":"client-1"}`), 0o600)
		},
	}
	for name, plant := range cases {
		t.Run(name, func(t *testing.T) {
			h := newAuthHarness(t, emulator.Config{})
			path := h.tokenPath()
			_ = os.MkdirAll(filepath.Dir(path), 0o700)
			plant(t, path)
			r := h.run("get", "/v2/audits/"+emulator.SampleAuditID, "-v")
			if r.code != 0 || h.em.Stats().Mints != 1 {
				t.Fatalf("exit %d mints %d\n%s", r.code, h.em.Stats().Mints, r.errOut)
			}
			b, _ := os.ReadFile(path)
			var tok struct {
				AccessToken string `json:"access_token"`
			}
			fi, _ := os.Stat(path)
			if json.Unmarshal(b, &tok) != nil || tok.AccessToken == "planted" || fi.Mode().Perm() != 0o600 {
				t.Fatalf("the cache was not replaced: %s %v", b, fi.Mode())
			}
			if strings.Contains(r.errOut+r.out, tok.AccessToken) {
				t.Fatal("the minted token was printed")
			}
		})
	}
}

func TestAuthCommands(t *testing.T) {
	h := newAuthHarness(t, emulator.Config{})
	r := h.run("auth", "status")
	if r.code != 0 || !strings.Contains(r.out, "none cached") {
		t.Fatalf("status before: %d %s %s", r.code, r.out, r.errOut)
	}
	r = h.run("auth", "token")
	token := strings.TrimSpace(r.out)
	if r.code != 0 || !strings.HasPrefix(token, "emu_") {
		t.Fatalf("token: %d %q %s", r.code, r.out, r.errOut)
	}
	r = h.run("auth", "status")
	if r.code != 0 || !strings.Contains(r.out, "token: cached, expires") || strings.Contains(r.out+r.errOut, token) {
		t.Fatalf("status after: %d %s", r.code, r.out)
	}
	if r = h.run("auth", "logout"); r.code != 0 || !strings.Contains(r.out, "removed") {
		t.Fatalf("logout: %d %s", r.code, r.out)
	}
	if _, err := os.Stat(h.tokenPath()); !os.IsNotExist(err) {
		t.Fatalf("the token file is still there: %v", err)
	}
	delete(h.env, "BRELLIUM_CLIENT_ID")
	if r = h.run("auth", "token"); r.code != 7 {
		t.Fatalf("no credentials: exit %d", r.code)
	}
}

// TestConcurrentProcessesMintOnce starts ten real processes with one cache folder at once.
func TestConcurrentProcessesMintOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	em := startEmulator(t, emulator.Config{ClientSecret: "s3cret", Latency: 20 * time.Millisecond})
	dir := t.TempDir()
	var wg sync.WaitGroup
	codes := make([]int, 10)
	outs := make([]string, 10)
	for i := range codes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := exec.Command(bin, "get", "/v2/audits/"+emulator.SampleAuditID, "-s", "--limiter", "off")
			c.Env = append(os.Environ(), "BRELLIUM_BASE_URL="+em.URL, "BRELLIUM_CLIENT_ID=c", "BRELLIUM_CLIENT_SECRET=s3cret",
				"BRELLIUM_CACHE_DIR="+dir, "BRELLIUM_ACCESS_TOKEN=")
			out, err := c.CombinedOutput()
			outs[i] = string(out)
			if ee, ok := err.(*exec.ExitError); ok {
				codes[i] = ee.ExitCode()
			}
		}(i)
	}
	wg.Wait()
	for i, c := range codes {
		if c != 0 {
			t.Fatalf("process %d: exit %d\n%s", i, c, outs[i])
		}
	}
	if m := em.Stats().Mints; m != 1 {
		t.Fatalf("ten concurrent processes minted %d times, want 1", m)
	}
}

// TestSecretsNeverPrinted sweeps the output paths (success, API errors, auth errors, retries,
// -v, -i, JSON log, batch, explain, auth status) for the static token, the client secret and
// the minted token.
func TestSecretsNeverPrinted(t *testing.T) {
	sample := "/v2/audits/" + emulator.SampleAuditID
	runs := [][]string{
		{"get", sample, "-v", "-i"},
		{"get", sample, "-v", "--log-format", "json"},
		{"get", "/v2/audits/missing", "-v"},
		{"post", "/v2/users", "-d", `{"email":"x@example.com"}`, "-v"},
		{"delete", "/v2/users/nope", "-v", "--log-format", "json"},
		{"batch", "-", "-v"},
		{"explain", "GET", sample},
		{"auth", "status"},
		{"version"},
	}
	for _, creds := range []string{"static", "client"} {
		var h *harness
		if creds == "static" {
			h = newHarness(t, emulator.Config{})
			h.env["BRELLIUM_ACCESS_TOKEN"] = "tok-SECRET-static"
		} else {
			h = newAuthHarness(t, emulator.Config{})
			h.env["BRELLIUM_CLIENT_SECRET"] = "s3cret"
		}
		h.em.Script(emulator.Fault{Path: "/v2/users", Status: 503, Execute: true},
			emulator.Fault{Path: sample, Status: 401, Code: "TOKEN_EXPIRED"})
		// The batch reads lines that go through every path above: an answer, an API error, a
		// refused write, and a 401.
		h.stdin = strings.Join([]string{"GET " + sample, "GET /v2/audits/missing", `POST /v2/users {"email":"y@example.com"}`, "GET " + sample}, "\n")
		var outputs []string
		for _, args := range runs {
			before := h.em.Stats().Requests
			r := h.run(args...)
			if args[0] == "batch" && h.em.Stats().Requests-before < 4 {
				t.Fatalf("%s: the batch sent %d requests, want its 4 lines at least:\n%s%s", creds, h.em.Stats().Requests-before, r.out, r.errOut)
			}
			outputs = append(outputs, fmt.Sprintf("%v:\n%s%s", args, r.out, r.errOut))
		}
		secrets := []string{"tok-SECRET-static", `"s3cret"`, "secret=s3cret"}
		if b, err := os.ReadFile(h.tokenPath()); err == nil {
			var tok struct {
				AccessToken string `json:"access_token"`
			}
			_ = json.Unmarshal(b, &tok)
			secrets = append(secrets, tok.AccessToken)
		}
		for _, out := range outputs {
			for _, secret := range secrets {
				if strings.Contains(out, secret) {
					t.Fatalf("%s: a secret %q was printed by %s", creds, secret, out)
				}
			}
		}
	}
}
