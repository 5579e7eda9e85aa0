package cmd

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/brellium/brellium/emulator"
)

// The front door's flags parse as gh api and curl users type them, and bad combinations are
// usage errors before anything is set up.
func TestFrontDoorFlags(t *testing.T) {
	o, _, err := parse(t, nil, getCmd, "get", "/v2/audits", "-f", "limit=10", "-F", "archived=false", "--url-query", "q=a b",
		"-q", ".data[].audit_id", "--paginate", "--slurp", "--max-pages", "3", "-w", "%{http_code}\\n", "--dry-run")
	if err != nil || len(o.RawFields) != 1 || len(o.Fields) != 1 || len(o.URLQuery) != 1 || o.query == nil || !o.Paginate ||
		!o.Slurp || o.MaxPages != 3 || o.WriteOut != "%{http_code}\\n" || !o.DryRun {
		t.Fatalf("%+v %v", o, err)
	}
	bad := [][]string{
		{"post", "/v2/users", "-d", "{}", "-f", "a=b"},
		{"get", "/v2/x", "-d", "{}"},
		{"head", "/v2/x", "-d", "{}"},
		{"post", "/v2/x", "--paginate"},
		{"get", "/v2/x", "--slurp"},
		{"get", "/v2/x", "--max-pages", "2"},
		{"get", "/v2/x", "--paginate", "--max-pages", "-1"},
		{"get", "/v2/x", "-q", ".data["},
		{"get", "/v2/x", "-w", "%{nope}"},
		{"get", "/v2/x", "-w", "%{http_code"},
		{"get", "/v2/x", "--dry-run", "--curl"},
		{"get", "/v2/x", "--url-query", "novalue"},
		{"get", "/v2/x", "-f", "=v"},
		{"get", "/v2/x", "-F", "a[=v"},
	}
	h := newHarness(t, emulator.Config{})
	for _, args := range bad {
		r := h.run(args...)
		if r.code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, r.code, r.errOut)
		}
	}
	if h.em.Stats().Requests != 0 {
		t.Fatalf("%d requests were sent", h.em.Stats().Requests)
	}
	// request GET … -d means it.
	if r := h.run("request", "GET", "/v2/audits/"+emulator.SampleAuditID, "-d", "{}"); r.code != 0 {
		t.Errorf("request GET -d: exit %d\n%s", r.code, r.errOut)
	}
}

// Fields become the query of a GET and the JSON body of a write, typed as gh api types them.
func TestFieldsBuildTheQueryOrTheBody(t *testing.T) {
	var mu sync.Mutex
	var seen []*http.Request
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 4096)
		n, _ := r.Body.Read(b)
		mu.Lock()
		seen, bodies = append(seen, r), append(bodies, string(b[:n]))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	h := newHarness(t, emulator.Config{})
	h.env["BRELLIUM_BASE_URL"] = srv.URL
	file := filepath.Join(t.TempDir(), "note.txt")
	_ = os.WriteFile(file, []byte("from a file"), 0o600)
	if r := h.run("get", "/v2/audits?x=1", "-f", "limit=10", "-F", "n=5", "-f", "tags[]=a b", "--url-query", "q=a&b"); r.code != 0 {
		t.Fatalf("get: exit %d\n%s", r.code, r.errOut)
	}
	h.stdin = "from stdin"
	if r := h.run("post", "/v1/things", "-f", "name=x", "-F", "n=5", "-F", "ok=true", "-F", "none=null", "-f", "raw=true",
		"-F", "tags[]=a", "-F", "tags[]=2", "-F", "meta[owner]=me", "-F", "note=@"+file, "-F", "in=@-", "--url-query", "dry=1"); r.code != 0 {
		t.Fatalf("post: exit %d\n%s", r.code, r.errOut)
	}
	// -f fields, then -F fields (as gh api takes them), then --url-query.
	if got := seen[0].URL.RawQuery; got != "x=1&limit=10&tags%5B%5D=a+b&n=5&q=a%26b" {
		t.Errorf("GET query %q", got)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(bodies[1]), &body); err != nil {
		t.Fatalf("POST body %q: %v", bodies[1], err)
	}
	want := `{"in":"from stdin","meta":{"owner":"me"},"n":5,"name":"x","none":null,"note":"from a file","ok":true,"raw":"true","tags":["a",2]}`
	if got, _ := json.Marshal(body); string(got) != want || seen[1].URL.RawQuery != "dry=1" || seen[1].Header.Get("Content-Type") != "application/json" {
		t.Errorf("POST body %s query %q", got, seen[1].URL.RawQuery)
	}
	// The 2,048-byte rule applies to the query as sent: 400 é are 2,400 bytes encoded.
	if r := h.run("get", "/v2/x", "-f", "q="+strings.Repeat("é", 400)); r.code != 2 || !strings.Contains(r.errOut, "2048") {
		t.Errorf("a long encoded query: exit %d\n%s", r.code, r.errOut)
	}
	// A user's Content-Type is sent as given, with a body that need not be JSON.
	if r := h.run("post", "/v1/text", "-H", "Content-Type: text/plain", "-d", "plain text"); r.code != 0 {
		t.Fatalf("text/plain: exit %d\n%s", r.code, r.errOut)
	}
	if ct := seen[2].Header.Get("Content-Type"); ct != "text/plain" || bodies[2] != "plain text" {
		t.Errorf("sent %q with %q", bodies[2], ct)
	}
}

// --paginate reads every page of a list of more than 100 audits through the engine, prints the
// items one a line (--jq on each, --slurp as one array), and --max-pages stops early.
func TestPaginateOverAListOfAudits(t *testing.T) {
	h := newHarness(t, emulator.Config{Audits: 249})
	r := h.run("get", "/v2/audits", "-f", "limit=100", "--paginate")
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if r.code != 0 || len(lines) != 250 || h.em.Stats().Requests != 3 {
		t.Fatalf("exit %d, %d items after %d requests\n%s", r.code, len(lines), h.em.Stats().Requests, r.errOut)
	}
	seen := map[string]bool{}
	for _, l := range lines {
		var a struct {
			AuditID string `json:"audit_id"`
		}
		if json.Unmarshal([]byte(l), &a) != nil || a.AuditID == "" || seen[a.AuditID] {
			t.Fatalf("not one audit a line, once each: %q", l)
		}
		seen[a.AuditID] = true
	}
	r = h.run("get", "/v2/audits", "-f", "limit=100", "--paginate", "-q", ".audit_id")
	if ids := strings.Split(strings.TrimSpace(r.out), "\n"); r.code != 0 || len(ids) != 250 || strings.Contains(ids[0], `"`) {
		t.Fatalf("--jq on each item: exit %d, %d lines, first %q", r.code, len(ids), ids[0])
	}
	r = h.run("get", "/v2/audits", "-f", "limit=100", "--paginate", "--slurp", "-q", "length")
	if r.code != 0 || strings.TrimSpace(r.out) != "250" {
		t.Fatalf("--slurp --jq length: exit %d %q", r.code, r.out)
	}
	r = h.run("get", "/v2/audits", "-f", "limit=100", "--paginate", "--max-pages", "2")
	if n := strings.Count(r.out, "\n"); r.code != 0 || n != 200 || !strings.Contains(r.errOut, "stopped after 2 pages") || !strings.Contains(r.errOut, "starting_after=") {
		t.Fatalf("--max-pages 2: exit %d, %d items\n%s", r.code, n, r.errOut)
	}
}

// A page that fails ends the command with its exit code after the items already printed, and
// says how to go on from there.
func TestPaginateStopsAtAFailingPage(t *testing.T) {
	h := newHarness(t, emulator.Config{Audits: 249})
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		if calls == 2 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"code":"GONE","message":"page gone","request_id":"r-2"}}`))
			return
		}
		h.em.ServeHTTP(w, r)
	}))
	defer srv.Close()
	h.env["BRELLIUM_BASE_URL"] = srv.URL
	r := h.run("get", "/v2/audits", "-f", "limit=100", "--paginate")
	if r.code != 3 || strings.Count(r.out, "\n") != 100 || !strings.Contains(r.errOut, "to go on from this page: brellium get '/v2/audits?limit=100&starting_after=") {
		t.Fatalf("exit %d, %d items\n%s", r.code, strings.Count(r.out, "\n"), r.errOut)
	}
	// With -o FILE, FILE is replaced only by every page: a failing page leaves it as it was, and
	// the hint says the items read were not written.
	path := filepath.Join(t.TempDir(), "audits.jsonl")
	_ = os.WriteFile(path, []byte("earlier\n"), 0o600)
	calls = 0
	r = h.run("get", "/v2/audits", "-f", "limit=100", "--paginate", "-o", path)
	if b, _ := os.ReadFile(path); r.code != 3 || r.out != "" || string(b) != "earlier\n" || !strings.Contains(r.errOut, "1 page read and not written: -o "+path) {
		t.Fatalf("-o, a failing page: exit %d, file %q\n%s", r.code, b, r.errOut)
	}
	calls = 2 // the failing answer is behind
	r = h.run("get", "/v2/audits", "-f", "limit=100", "--paginate", "-o", path)
	if b, _ := os.ReadFile(path); r.code != 0 || r.out != "" || strings.Count(string(b), "\n") != 250 {
		t.Fatalf("-o, every page: exit %d, %d lines\n%s", r.code, strings.Count(string(b), "\n"), r.errOut)
	}
	if r := h.run("get", "/v2/audits", "--paginate", "-i"); r.code != 2 {
		t.Fatalf("-i --paginate: exit %d", r.code)
	}
}

// Link: rel="next" pages another API's list; a next page on another origin is not followed.
func TestPaginateFollowsLinkHeaders(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Query().Get("page") {
		case "":
			w.Header().Set("Link", `<`+srv.URL+`/items?page=2>; rel="next", <`+srv.URL+`/items?page=3>; rel="last"`)
			_, _ = w.Write([]byte(`[1,2]`))
		case "2":
			w.Header().Set("Link", `</items?page=3>; rel="next"`)
			_, _ = w.Write([]byte(`["three"]`))
		case "3":
			w.Header().Set("Link", `<https://elsewhere.example/items?page=4>; rel="next"`)
			_, _ = w.Write([]byte(`[{"four":4}]`))
		}
	}))
	defer srv.Close()
	h := newHarness(t, emulator.Config{})
	h.env["BRELLIUM_BASE_URL"] = srv.URL
	r := h.run("get", "/items", "--paginate")
	if r.out != "1\n2\n\"three\"\n{\"four\":4}\n" || r.code != 3 || !strings.Contains(r.errOut, "on another origin") {
		t.Fatalf("exit %d %q\n%s", r.code, r.out, r.errOut)
	}
}

// --jq on one call: strings raw, other values as JSON, one a line; an error body prints as it
// is.
func TestJQOnACall(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	r := h.run("get", "/v2/audits/"+emulator.SampleAuditID, "-q", ".audit_id, .flags, (.people | length)")
	if r.code != 0 || r.out != emulator.SampleAuditID+"\n[\"Failed\",\"Missing Signature\"]\n1\n" {
		t.Fatalf("exit %d %q", r.code, r.out)
	}
	r = h.run("get", "/v2/audits?limit=3", "--jq", ".data[].status")
	if r.code != 0 || strings.Count(r.out, "\n") != 3 {
		t.Fatalf("--jq on a list: exit %d %q", r.code, r.out)
	}
	r = h.run("get", "/v2/audits/missing", "-q", ".audit_id")
	if r.code != 3 || !strings.Contains(r.out, `"AUDIT_NOT_FOUND"`) {
		t.Fatalf("an error body: exit %d %q", r.code, r.out)
	}
	// An empty 2xx (a 204) has nothing to filter: nothing printed, exit 0, as gh api does.
	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	defer empty.Close()
	h.env["BRELLIUM_BASE_URL"] = empty.URL
	if r := h.run("delete", "/v2/things/1", "--jq", "."); r.code != 0 || r.out != "" {
		t.Fatalf("a 204 with --jq: exit %d %q\n%s", r.code, r.out, r.errOut)
	}
}

// -w writes curl's and brellium's variables after the body, even when the call fails, and a
// set -e script can read a request id from it.
func TestWriteOut(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	r := h.run("get", "/v2/audits/"+emulator.SampleAuditID, "-o", os.DevNull, "-w",
		`%{http_code} %{exitcode} %{outcome} %{attempts} %{request_id} %header{content-type} %{ratelimit_limit}/%{ratelimit_remaining} 100%%\n`)
	fields := strings.Fields(r.out)
	if r.code != 0 || len(fields) != 8 || fields[0] != "200" || fields[1] != "0" || fields[2] != "ok" || fields[3] != "1" ||
		len(fields[4]) != 36 || fields[5] != "application/json" || !strings.HasPrefix(fields[6], "100/") || fields[7] != "100%" {
		t.Fatalf("exit %d %q", r.code, r.out)
	}
	// No answer: 000, as curl writes it.
	h.env["BRELLIUM_BASE_URL"] = refusedServer(t)
	if r := h.run("get", "/x", "-s", "--retry", "0", "-w", "%{http_code} %{exitcode}"); r.code != 4 || r.out != "000 4" {
		t.Fatalf("no answer: exit %d %q", r.code, r.out)
	}
	h.env["BRELLIUM_BASE_URL"] = h.srv.URL
	r = h.run("get", "/v2/audits/missing", "-s", "-o", os.DevNull, "-w", "%{json}")
	if st, err := os.Stat(os.DevNull); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("-o %s replaced the device: %v %v", os.DevNull, st.Mode(), err)
	}
	var j map[string]any
	if err := json.Unmarshal([]byte(r.out), &j); err != nil || r.code != 3 || j["http_code"] != 404.0 || j["exitcode"] != 3.0 || j["outcome"] != "api_error" {
		t.Fatalf("%%{json}: exit %d %q", r.code, r.out)
	}
	if testing.Short() {
		return
	}
	bin := buildBinary(t)
	em := startEmulator(t, emulator.Config{})
	script := `set -e
id=$("$BIN" get /v2/audits/a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d -s -o /dev/null -w '%{request_id}')
echo "got $id"
"$BIN" get /v2/audits/missing -s -o /dev/null -w '%{http_code}' || echo " exit $?"
`
	c := exec.Command("sh", "-c", script)
	c.Env = append(os.Environ(), "BIN="+bin, "BRELLIUM_BASE_URL="+em.URL, "BRELLIUM_ACCESS_TOKEN=t", "BRELLIUM_LIMITER=off")
	out, err := c.Output()
	if err != nil || !strings.HasPrefix(string(out), "got ") || len(strings.Fields(string(out))[1]) != 36 || !strings.Contains(string(out), "404 exit 3") {
		t.Fatalf("%v\n%s", err, out)
	}
	// The JSON log's done event carries the status and the request id.
	r = h.run("get", "/v2/audits/"+emulator.SampleAuditID, "--log-format", "json")
	lines := strings.Split(strings.TrimSpace(r.errOut), "\n")
	var done map[string]any
	_ = json.Unmarshal([]byte(lines[len(lines)-1]), &done)
	if done["event"] != "done" || done["status"] != 200.0 || done["request_id"] == nil {
		t.Fatalf("done event %v", done)
	}
}

// --dry-run and --curl show the call, credentials hidden, and send nothing.
func TestDryRunAndCurlSendNothing(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	r := h.run("post", "/v2/users", "-d", `{"email":"a@example.com"}`, "--dry-run")
	if r.code != 0 || !strings.Contains(r.out, "POST "+h.srv.URL+"/v2/users\n") || !strings.Contains(r.out, "Authorization: Bearer ***") ||
		!strings.Contains(r.out, `{"email":"a@example.com"}`) || !strings.Contains(r.out, "safe to repeat: no") || strings.Contains(r.out, "tok-secret") {
		t.Fatalf("--dry-run: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	r = h.run("get", "/v2/audits", "-f", "limit=5", "--curl", "-H", "X-A: it's")
	want := `curl -sS '` + h.srv.URL + `/v2/audits?limit=5' -H 'Accept: application/json' -H "Authorization: Bearer $BRELLIUM_ACCESS_TOKEN" -H 'User-Agent: brellium/dev' -H 'X-A: it'\''s'`
	if r.code != 0 || strings.TrimSpace(r.out) != want {
		t.Fatalf("--curl: exit %d\n got %s\nwant %s", r.code, r.out, want)
	}
	if h.em.Stats().Requests != 0 {
		t.Fatalf("%d requests were sent", h.em.Stats().Requests)
	}
	// The curl line works.
	if _, err := exec.LookPath("curl"); err == nil {
		c := exec.Command("sh", "-c", strings.TrimSpace(r.out))
		c.Env = append(os.Environ(), "BRELLIUM_ACCESS_TOKEN=t")
		if out, err := c.Output(); err != nil || !strings.Contains(string(out), `"object":"list"`) {
			t.Fatalf("the curl line: %v %s", err, out)
		}
	}
}

// What a new user tripped on.
func TestFrontDoorPapercuts(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	sample := "/v2/audits/" + emulator.SampleAuditID
	// head prints the status line and headers, as curl -I does.
	if r := h.run("head", sample); r.code != 0 || !strings.HasPrefix(r.out, "HTTP/1.1 200 OK\r\n") {
		t.Errorf("head: exit %d %q", r.code, r.out)
	}
	// -s silences attempt lines only: -v's dump stays.
	if r := h.run("get", sample, "-v", "-s"); r.code != 0 || !strings.Contains(r.errOut, "> GET "+sample) || strings.Contains(r.errOut, "done in") {
		t.Errorf("-v -s:\n%s", r.errOut)
	}
	// --color always into a pipe indents and colours the body.
	if r := h.run("get", sample, "--color", "always"); !strings.Contains(r.out, "\x1b[") || !strings.Contains(r.out, "\n  ") {
		t.Errorf("--color always: %q", r.out[:80])
	}
	// Half the client credentials says which half is missing.
	delete(h.env, "BRELLIUM_ACCESS_TOKEN")
	h.env["BRELLIUM_CLIENT_ID"] = "c"
	if r := h.run("get", sample); r.code != 7 || !strings.Contains(r.errOut, "BRELLIUM_CLIENT_SECRET is not") {
		t.Errorf("id only: exit %d\n%s", r.code, r.errOut)
	}
	h.env["BRELLIUM_ACCESS_TOKEN"] = "t"
	// Errors name the variable or the flag, and the range.
	for env, want := range map[string]string{
		"BRELLIUM_RATE=abc":   `BRELLIUM_RATE="abc": want requests per second, a number above 0 and at most 1000000`,
		"BRELLIUM_RATE=1e8":   "invalid BRELLIUM_RATE 1e+08: want requests per second, above 0 and at most 1000000",
		"BRELLIUM_LIMITER=no": `invalid BRELLIUM_LIMITER "no"`,
		"BRELLIUM_BURST=0":    "invalid BRELLIUM_BURST 0: want a burst of at least 1",
		"BRELLIUM_BURST=lots": `BRELLIUM_BURST="lots": want a whole number, at least 1`,
	} {
		k, v, _ := strings.Cut(env, "=")
		h.env[k] = v
		r := h.runArgs([]string{"get", sample})
		delete(h.env, k)
		if r.code != 2 || !strings.Contains(r.errOut, want) || strings.Contains(r.errOut, "strconv") {
			t.Errorf("%s: exit %d\n%s", env, r.code, r.errOut)
		}
	}
	if r := h.runArgs([]string{"get", sample, "--rate", "1e8"}); !strings.Contains(r.errOut, "invalid --rate 1e+08: want requests per second, above 0 and at most 1000000") {
		t.Errorf("--rate 1e8:\n%s", r.errOut)
	}
	// One error style; the usage hint for usage errors only.
	r := h.run("frobnicate")
	if !strings.HasPrefix(r.errOut, "error: ") || !strings.Contains(r.errOut, "Run 'brellium --help' for usage.") {
		t.Errorf("unknown command:\n%s", r.errOut)
	}
	if r := h.run("get", "/v2/audits/missing"); strings.Contains(r.errOut, "--help") || !strings.HasPrefix(r.errOut, "GET ") {
		t.Errorf("an API error has no usage hint:\n%s", r.errOut)
	}
	// Global flags show where they act.
	for cmd, absent := range map[string][]string{"emulator": {"--limiter", "--base-url", "--color"}, "version": {"--rate", "--limiter"},
		"completion": {"--burst"}, "explain": {"--limiter", "--rate"}, "auth": {"--limiter"}} {
		out := h.run(cmd, "--help").out
		for _, f := range absent {
			if strings.Contains(out, f) {
				t.Errorf("brellium %s --help shows %s", cmd, f)
			}
		}
	}
	// The root help ends with the exit codes.
	if out := h.run("--help").out; !strings.Contains(out, "Exit codes:") || !strings.Contains(out, "unknown_outcome") {
		t.Errorf("--help:\n%s", out)
	}
	// "batch: 1 line", not "1 lines".
	if r := h.run("batch", writeInput(t, "GET "+sample)); !strings.Contains(r.errOut, "batch: 1 line:") || !strings.Contains(r.errOut, "1 request,") {
		t.Errorf("batch summary:\n%s", r.errOut)
	}
	// explain's table fits 80 columns, and agrees with the engine on x-should-retry.
	out := h.run("explain", "POST", "/v2/users").out
	for _, l := range strings.Split(out, "\n") {
		if len([]rune(l)) > 80 {
			t.Errorf("explain line of %d columns: %q", len([]rune(l)), l)
		}
	}
	if !strings.Contains(out, "429 with x-should-retry: false\n    → stop: exit 3 api_error") {
		t.Errorf("explain on a 429 with x-should-retry: false:\n%s", out)
	}
	h.em.Script(emulator.Fault{Status: 429, Code: "RATE_LIMITED", Headers: map[string]string{"X-Should-Retry": "false"}})
	if r := h.run("post", "/v2/users", "-d", `{"email":"z@example.com"}`); r.code != 3 {
		t.Errorf("the engine on a 429 with x-should-retry: false: exit %d\n%s", r.code, r.errOut)
	}
}

// explain completes methods, then paths.
func TestExplainCompletesMethodsThenPaths(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	r := h.run("__complete", "explain", "")
	if !strings.Contains(r.out, "GET\n") || !strings.Contains(r.out, ":4") {
		t.Errorf("explain <TAB>: %q", r.out)
	}
	r = h.run("__complete", "explain", "DELETE", "")
	if !strings.Contains(r.out, "/v2/users/") {
		t.Errorf("explain DELETE <TAB>: %q", r.out)
	}
	_ = fmt.Sprint()
}
