package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brellium/brellium/emulator"
	"github.com/brellium/brellium/internal/retrytest"
)

// A hostile server's control characters never reach the terminal raw: not in attempt lines,
// error lines or -v, while -i's head and the body on stdout stay byte for byte.
func TestServerTextIsInertOnTheTerminal(t *testing.T) {
	const esc = "\x1b]52;c;cHduZWQ=\x07\x1b[2J\r\nGET /v2/x 200 · done"
	env, _ := json.Marshal(map[string]any{"error": map[string]string{"code": "E" + esc, "message": strings.Repeat("m", 10000) + esc, "request_id": "r" + esc}})
	body := string(env)
	url := retrytest.Listen(t, func(c net.Conn) {
		for readRequest(c) {
			// (net/http itself refuses control characters in header lines.)
			fmt.Fprintf(c, "HTTP/1.1 404 Not\x1b[31mFound\u009b2J\r\nContent-Type: application/json\r\nX-Evil: \xc2\x9b31m\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		}
		c.Close()
	})
	h := newHarness(t, emulator.Config{})
	h.env["BRELLIUM_BASE_URL"] = url
	r := h.run("get", "/v2/x", "-v", "-i")
	if r.code != 3 {
		t.Fatalf("exit %d\n%q", r.code, r.errOut)
	}
	for _, c := range r.errOut {
		if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || (c >= 0x80 && c <= 0x9f) {
			t.Fatalf("stderr holds a raw control character %U:\n%q", c, r.errOut)
		}
	}
	for _, want := range []string{`\x1b]52;c;`, `\x1b[2J\x0d\x0aGET /v2/x 200`, "more bytes)"} {
		if !strings.Contains(r.errOut, want) {
			t.Errorf("stderr does not show %q escaped:\n%.2000q", want, r.errOut)
		}
	}
	if lines := strings.Count(r.errOut, "\n"); lines > 30 {
		t.Errorf("stderr has %d lines: a server's line breaks made lines of their own", lines)
	}
	if len(r.errOut) > 20000 {
		t.Errorf("stderr is %d bytes: a long message was not cut", len(r.errOut))
	}
	if !strings.Contains(r.out, "HTTP/1.1 404 Not\x1b[31mFound\u009b2J\r\n") || !strings.HasSuffix(r.out, body) {
		t.Errorf("-i and the body are not byte for byte:\n%q", r.out[:200])
	}
	// The JSON log escapes them as JSON does.
	r = h.run("get", "/v2/x", "--log-format", "json")
	for _, l := range strings.Split(strings.TrimSpace(r.errOut), "\n") {
		if !json.Valid([]byte(l)) || strings.ContainsAny(l, "\x1b\x07\r") {
			t.Errorf("a JSON log line is not inert: %q", l)
		}
	}
}

// A planted link in the limiter folder is never written through; the call is paced in-process,
// with one warning.
func TestLimiterStateIsNeverWrittenThroughALink(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	cache := t.TempDir()
	h.env["BRELLIUM_CACHE_DIR"] = cache
	sample := "/v2/audits/" + emulator.SampleAuditID
	if r := h.runArgs([]string{"get", sample, "--limiter", "local"}); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.errOut)
	}
	states, _ := filepath.Glob(filepath.Join(cache, "limiter", "*.state"))
	if len(states) != 1 {
		t.Fatalf("state files: %v", states)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	_ = os.WriteFile(victim, []byte("precious data that is longer than a state record, which is 64 bytes"), 0o600)
	_ = os.Remove(states[0])
	_ = os.Symlink(victim, states[0])
	r := h.runArgs([]string{"get", sample, "--limiter", "local"})
	if r.code != 0 || strings.Count(r.errOut, "warning:") != 1 || !strings.Contains(r.errOut, "pacing this process alone") {
		t.Fatalf("exit %d\n%s", r.code, r.errOut)
	}
	if b, _ := os.ReadFile(victim); !strings.HasPrefix(string(b), "precious") {
		t.Fatalf("the link's target was overwritten: %q", b)
	}
	// Another user's tokens folder in a shared cache does not lock the user out.
	_ = os.Remove(states[0])
	_ = os.Chmod(filepath.Join(cache, "limiter"), 0o777)
	if r := h.runArgs([]string{"get", sample, "--limiter", "local"}); r.code != 0 {
		t.Fatalf("a loose limiter folder: exit %d\n%s", r.code, r.errOut)
	}
	if fi, _ := os.Stat(filepath.Join(cache, "limiter")); fi.Mode().Perm() != 0o700 {
		t.Errorf("the user's own limiter folder was left %v", fi.Mode().Perm())
	}
}

// A token endpoint that echoes the request body (client_secret included) in its error puts the
// secret nowhere: not on stderr, text or JSON, not in batch result lines.
func TestClientSecretEchoedIsScrubbed(t *testing.T) {
	const secret = "s3cret-echoed-XYZ"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"code":"INVALID_REQUEST","message":"bad request body: %s","request_id":"r1"}}`, strings.ReplaceAll(string(b), `"`, `'`))
	}))
	defer srv.Close()
	h := newHarness(t, emulator.Config{})
	delete(h.env, "BRELLIUM_ACCESS_TOKEN")
	h.env["BRELLIUM_BASE_URL"] = srv.URL
	h.env["BRELLIUM_CLIENT_ID"] = "client-1"
	h.env["BRELLIUM_CLIENT_SECRET"] = secret
	h.env["BRELLIUM_CACHE_DIR"] = t.TempDir()
	out := filepath.Join(t.TempDir(), "results.jsonl")
	runs := []result{
		h.run("get", "/v2/x"),
		h.run("get", "/v2/x", "--log-format", "json", "-v"),
		h.run("batch", writeInput(t, "GET /v2/x", "GET /v2/y"), "-o", out),
		h.run("auth", "token"),
	}
	b, _ := os.ReadFile(out)
	runs = append(runs, result{out: string(b)})
	for i, r := range runs {
		if strings.Contains(r.out+r.errOut, secret) {
			t.Fatalf("run %d printed the client secret:\n%s%s", i, r.out, r.errOut)
		}
	}
	if !strings.Contains(runs[0].errOut, "bad request body") || !strings.Contains(runs[0].errOut, "***") {
		t.Fatalf("the error line lost more than the secret:\n%s", runs[0].errOut)
	}
}

// A Redis password is never printed, from the flag or the environment, in text or JSON.
func TestRedisPasswordIsNeverPrinted(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	url := "redis://:hunter2-redis@" + strings.TrimPrefix(refusedServer(t), "http://") + "/0"
	for _, run := range []result{
		h.runArgs([]string{"get", "/v2/x", "--limiter", url}),
		h.runArgs([]string{"get", "/v2/x", "--limiter", url, "--log-format", "json"}),
		h.runArgs([]string{"get", "/v2/x", "--limiter", strings.Replace(url, "redis://", "memcache://", 1)}),
	} {
		if run.code != 2 || strings.Contains(run.out+run.errOut, "hunter2") || !strings.Contains(run.errOut, "***") {
			t.Errorf("exit %d\n%s", run.code, run.errOut)
		}
	}
	h.env["BRELLIUM_LIMITER"] = url
	if r := h.runArgs([]string{"get", "/v2/x"}); r.code != 2 || strings.Contains(r.errOut, "hunter2") {
		t.Errorf("BRELLIUM_LIMITER: exit %d\n%s", r.code, r.errOut)
	}
}

// The token cache folder is never reached through a link (its target is not made 0700 and
// used), and a huge cache file is not read whole.
func TestTokenCacheRefusesLinksAndHugeFiles(t *testing.T) {
	h := newAuthHarness(t, emulator.Config{})
	cache := h.env["BRELLIUM_CACHE_DIR"]
	target := t.TempDir()
	_ = os.Chmod(target, 0o755)
	_ = os.Symlink(target, filepath.Join(cache, "tokens"))
	r := h.run("get", "/v2/audits/"+emulator.SampleAuditID)
	if r.code != 7 || !strings.Contains(r.errOut, "is a link") {
		t.Fatalf("exit %d\n%s", r.code, r.errOut)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o755 {
		t.Errorf("the link's target was made %v", fi.Mode().Perm())
	}
	if entries, _ := os.ReadDir(target); len(entries) != 0 {
		t.Errorf("files were written through the link: %v", entries)
	}
	_ = os.Remove(filepath.Join(cache, "tokens"))
	_ = os.Mkdir(filepath.Join(cache, "tokens"), 0o700)
	// A 20 MB "cache file" of the user's own: not trusted (it is not a token), not read whole.
	big := strings.Repeat(" ", 20<<20) + `{"access_token":"planted"}`
	_ = os.WriteFile(h.tokenPath(), []byte(big), 0o600)
	if r := h.run("get", "/v2/audits/"+emulator.SampleAuditID); r.code != 0 || h.em.Stats().Mints != 1 {
		t.Fatalf("exit %d after %d mints\n%s", r.code, h.em.Stats().Mints, r.errOut)
	}
}

// A token that lives a minute is used for its first half, not minted for every call; a mint
// that runs out of the call's time ends the call as an auth error, with the call's own cap.
func TestShortTokensAndSlowMints(t *testing.T) {
	var mints atomic.Int32
	var slow atomic.Bool
	h := newAuthHarness(t, emulator.Config{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/oauth/token" {
			mints.Add(1)
			if slow.Load() {
				time.Sleep(2 * time.Second)
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"access_token":"tok-%d","token_type":"Bearer","expires_in":30}`, mints.Load())
			return
		}
		h.em.ServeHTTP(w, r)
	}))
	defer srv.Close()
	h.env["BRELLIUM_BASE_URL"] = srv.URL
	sample := "/v2/audits/" + emulator.SampleAuditID
	for i := 0; i < 3; i++ {
		if r := h.run("get", sample); r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.errOut)
		}
	}
	if n := mints.Load(); n != 1 {
		t.Fatalf("a 30 s token was minted %d times for three calls", n)
	}
	h.clock.mu.Lock()
	h.clock.now = h.clock.now.Add(16 * time.Second)
	h.clock.mu.Unlock()
	h.run("get", sample)
	if n := mints.Load(); n != 2 {
		t.Fatalf("past half its life the token was not replaced: %d mints", n)
	}
	// A mint slower than the call's --max-time.
	_ = os.RemoveAll(filepath.Join(h.env["BRELLIUM_CACHE_DIR"], "tokens"))
	slow.Store(true)
	start := time.Now()
	r := h.run("get", sample, "--max-time", "0.3", "--retry", "0")
	if r.code != 7 || !strings.Contains(r.errOut, "left to the call it was made for ran out") || strings.Contains(r.errOut, "30s") ||
		strings.Contains(r.errOut, "1m0s") || time.Since(start) > 1500*time.Millisecond {
		t.Fatalf("exit %d after %v\n%s", r.code, time.Since(start), r.errOut)
	}
}

// Bad bytes are refused before anything is sent, naming the header and never a credential.
func TestBadBytesAreRefusedBeforeSending(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"get", "/v2/x", "-H", "X-A: a\x01b"}, nil, `invalid header "X-A"`},
		{[]string{"batch", "-", "--retry", "0"}, nil, ""},
		{[]string{"get", "/" + strings.Repeat("p", 10<<20)}, nil, "request line"},
		{[]string{"get", "/v2/x"}, map[string]string{"BRELLIUM_ACCESS_TOKEN": "tok-secret-123\r\nX-Injected: 1"}, "BRELLIUM_ACCESS_TOKEN holds a line break"},
	}
	for _, client := range []string{"fast", "net"} {
		h.env["BRELLIUM_BATCH_CLIENT"] = client
		h.stdin = `{"path":"/v2/x","headers":{"X-A":"a` + "\\u0001" + `b"}}`
		for _, c := range cases {
			for k, v := range c.env {
				h.env[k] = v
			}
			r := h.run(c.args...)
			for k := range c.env {
				h.env[k] = "tok-secret-123"
			}
			if c.args[0] == "batch" {
				got := parseResults(t, r.out)
				if r.code != 2 || got[1].Outcome != "invalid" || !strings.Contains(got[1].Error.Reason, `invalid header "X-A"`) {
					t.Errorf("%s batch: exit %d\n%s", client, r.code, r.out)
				}
				continue
			}
			if r.code != 2 || !strings.Contains(r.errOut, c.want) || strings.Contains(r.errOut, "tok-secret") {
				t.Errorf("%s %.40q: exit %d\n%.300s", client, c.args, r.code, r.errOut)
			}
		}
	}
	if n := h.em.Stats().Requests; n != 0 {
		t.Fatalf("%d requests were sent", n)
	}
}

// Spaces, quotes and raw UTF-8 in a path or query go out percent-encoded, on both clients.
func TestRawBytesArePercentEncoded(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	url := retrytest.Listen(t, func(c net.Conn) {
		buf := make([]byte, 4096)
		n, _ := c.Read(buf)
		mu.Lock()
		lines = append(lines, strings.SplitN(string(buf[:n]), "\r\n", 2)[0])
		mu.Unlock()
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
		c.Close()
	})
	h := newHarness(t, emulator.Config{})
	h.env["BRELLIUM_BASE_URL"] = url
	if r := h.run("get", `/a b?c d&q="x"&n=é`); r.code != 0 {
		t.Fatalf("get: exit %d\n%s", r.code, r.errOut)
	}
	if r := h.run("batch", writeInput(t, `{"path":"/a b?c d&q=\"x\"&n=é"}`)); r.code != 0 {
		t.Fatalf("batch: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	want := `GET /a%20b?c%20d&q=%22x%22&n=%C3%A9 HTTP/1.1`
	if len(lines) != 2 || lines[0] != want || lines[1] != want {
		t.Fatalf("request lines %q, want %q twice", lines, want)
	}
}

// -L leaves nothing of the call at another origin: no Referer, none of the user's headers, no
// body (a 307 with a body stops), and a 401 from there does not re-mint.
func TestRedirectsLeakNothingToAnotherOrigin(t *testing.T) {
	var mu sync.Mutex
	var seen []http.Header
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		if r.URL.Path == "/unauthorized" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	defer other.Close()
	var posts atomic.Int32
	h := newAuthHarness(t, emulator.Config{})
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v2/oauth/token":
			h.em.ServeHTTP(w, r)
		case "/post":
			posts.Add(1)
			http.Redirect(w, r, other.URL+"/landing", http.StatusTemporaryRedirect)
		case "/to401":
			http.Redirect(w, r, other.URL+"/unauthorized", http.StatusFound)
		default:
			http.Redirect(w, r, other.URL+"/landing?x=1", http.StatusFound)
		}
	}))
	defer origin.Close()
	h.env["BRELLIUM_BASE_URL"] = origin.URL
	if r := h.run("get", "/v2/secret?q=1", "-L", "-H", "X-Api-Key: k-123"); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.errOut)
	}
	if len(seen) != 1 || seen[0].Get("Referer") != "" || seen[0].Get("X-Api-Key") != "" || seen[0].Get("Authorization") != "" {
		t.Fatalf("the other origin got %v", seen)
	}
	r := h.run("post", "/post", "-L", "-d", `{"card":"4111"}`, "--idempotent")
	if r.code != 3 || !strings.Contains(r.errOut, "would send the request body to another origin") || len(seen) != 1 || posts.Load() != 1 {
		t.Fatalf("a 307 POST: exit %d, %d requests elsewhere\n%s", r.code, len(seen)-1, r.errOut)
	}
	mints := h.em.Stats().Mints
	if r := h.run("get", "/to401", "-L"); r.code != 7 || h.em.Stats().Mints != mints {
		t.Fatalf("a foreign 401: exit %d, %d mints after it\n%s", r.code, h.em.Stats().Mints-mints, r.errOut)
	}
}

// Without --max-time, a server-directed wait over an hour ends the call at once.
func TestHugeServerWaitWithoutMaxTime(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	h.em.Script(emulator.Fault{Status: 429, Code: "RATE_LIMITED", Headers: map[string]string{"Retry-After": "86400000"}})
	r := h.run("get", "/v2/audits/"+emulator.SampleAuditID, "--max-time", "0")
	if r.code != 4 || !strings.Contains(r.errOut, "exceeds the 1h0m0s brellium waits without --max-time") {
		t.Fatalf("exit %d\n%s", r.code, r.errOut)
	}
}

// Batch result files and journals hold API data: they are created 0600.
func TestBatchFilesArePrivate(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	dir := t.TempDir()
	out, journal := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "run.journal")
	if r := h.run("batch", writeInput(t, "GET /v2/audits/"+emulator.SampleAuditID), "-o", out, "--journal", journal); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.errOut)
	}
	for _, p := range []string{out, journal} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", p, fi.Mode(), err)
		}
	}
}
