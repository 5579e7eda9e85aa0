package emulator

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// These tests drive the emulator with plain net/http, never with brellium's engine, so that the
// two cannot share a mistake. They check the emulator against the API's documentation.

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	t     *testing.T
	srv   *httptest.Server
	em    *Server
	clock *clock
}

func start(t *testing.T, cfg Config) *fixture {
	t.Helper()
	c := &clock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	cfg.Now = c.Now
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	em := New(cfg)
	srv := httptest.NewServer(em)
	t.Cleanup(srv.Close)
	return &fixture{t: t, srv: srv, em: em, clock: c}
}

// do sends one request; headers alternate name and value. A body gets a JSON content type
// unless headers set another.
func (f *fixture) do(method, path, body string, headers ...string) (*http.Response, string) {
	f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer sandbox")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (f *fixture) want(resp *http.Response, status int, body string) {
	f.t.Helper()
	if resp.StatusCode != status {
		f.t.Fatalf("%s %s: status %d, want %d: %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, status, body)
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

type errorBody struct {
	Error struct {
		Type, Code, Message string
		RequestID           string `json:"request_id"`
	}
}

func parseEnvelope(t *testing.T, resp *http.Response, body string) errorBody {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Code == "" {
		t.Fatalf("not an error errorBody: %s", body)
	}
	if e.Error.RequestID != resp.Header.Get("X-Request-Id") || !uuidRE.MatchString(e.Error.RequestID) {
		t.Fatalf("request_id %q differs from x-request-id %q", e.Error.RequestID, resp.Header.Get("X-Request-Id"))
	}
	return e
}

func rl(resp *http.Response) string {
	return resp.Header.Get("RateLimit-Limit") + "/" + resp.Header.Get("RateLimit-Remaining") + "/" + resp.Header.Get("RateLimit-Reset")
}

func TestSampleAuditWithRateLimitHeaders(t *testing.T) {
	f := start(t, Config{})
	resp, body := f.do("GET", "/v2/audits/"+SampleAuditID, "")
	f.want(resp, 200, body)
	if got := rl(resp); got != "100/99/0" {
		t.Errorf("ratelimit limit/remaining/reset = %s, want 100/99/0", got)
	}
	if !uuidRE.MatchString(resp.Header.Get("X-Request-Id")) || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers = %v", resp.Header)
	}
	var a struct {
		AuditID string   `json:"audit_id"`
		Object  string   `json:"object"`
		Flags   []string `json:"flags"`
	}
	_ = json.Unmarshal([]byte(body), &a)
	if a.AuditID != SampleAuditID || a.Object != "audit" || strings.Join(a.Flags, ",") != "Failed,Missing Signature" {
		t.Errorf("sample audit = %s", body)
	}
}

func TestBucketArithmeticAnd429(t *testing.T) {
	f := start(t, Config{Burst: 3, Rate: 0.25})
	for i, want := range []string{"3/2/0", "3/1/0", "3/0/0"} {
		resp, body := f.do("GET", "/v2/audits/"+SampleAuditID, "")
		f.want(resp, 200, body)
		if rl(resp) != want {
			t.Fatalf("request %d: ratelimit %s, want %s", i+1, rl(resp), want)
		}
	}
	resp, body := f.do("GET", "/v2/audits/"+SampleAuditID, "")
	f.want(resp, 429, body)
	e := parseEnvelope(t, resp, body)
	if e.Error.Code != "RATE_LIMITED" || e.Error.Type != "rate_limit_error" {
		t.Errorf("429 errorBody = %+v", e)
	}
	// One token every 4 s: Retry-After is whole seconds, equal to RateLimit-Reset.
	if resp.Header.Get("Retry-After") != "4" || rl(resp) != "3/0/4" {
		t.Errorf("429 Retry-After %q ratelimit %s, want 4 and 3/0/4", resp.Header.Get("Retry-After"), rl(resp))
	}
	// A 429 spends nothing: 2.5 s later the wait is 1.5 s, rounded up to 2.
	f.clock.Advance(2500 * time.Millisecond)
	resp, body = f.do("GET", "/v2/audits/"+SampleAuditID, "")
	f.want(resp, 429, body)
	if resp.Header.Get("Retry-After") != "2" {
		t.Errorf("Retry-After after 2.5 s = %q, want 2", resp.Header.Get("Retry-After"))
	}
	f.clock.Advance(1500 * time.Millisecond)
	resp, body = f.do("GET", "/v2/audits/"+SampleAuditID, "")
	f.want(resp, 200, body)
	if rl(resp) != "3/0/0" {
		t.Errorf("after the refill: %s", rl(resp))
	}
	if s := f.em.Stats(); s.RateLimited != 2 || s.Responses["429"] != 2 || s.Requests != 6 {
		t.Errorf("stats = %+v", s)
	}
}

func TestUnauthorizedSpendsNothingAndHasNoRateLimitHeaders(t *testing.T) {
	f := start(t, Config{Burst: 1, Rate: 0.001})
	resp, body := f.do("GET", "/v2/audits/"+SampleAuditID, "", "Authorization", "")
	f.want(resp, 401, body)
	parseEnvelope(t, resp, body)
	if resp.Header.Get("RateLimit-Limit") != "" || resp.Header.Get("RateLimit-Remaining") != "" {
		t.Errorf("401 carries ratelimit headers: %v", resp.Header)
	}
	resp, body = f.do("GET", "/v2/audits/"+SampleAuditID, "")
	f.want(resp, 200, body)
}

func TestNotFoundAndBadRequestSpendATokenAndWrongContentTypeChangesNothing(t *testing.T) {
	f := start(t, Config{Burst: 3, Rate: 0.001})
	resp, body := f.do("GET", "/v2/audits/missing", "")
	f.want(resp, 404, body)
	if rl(resp) != "3/2/0" {
		t.Errorf("404 ratelimit %s, want 3/2/0", rl(resp))
	}
	resp, body = f.do("PATCH", "/v2/audits/"+SampleAuditID, `{"flags":[]}`, "Content-Type", "text/plain")
	f.want(resp, 400, body)
	if e := parseEnvelope(t, resp, body); e.Error.Code != "INVALID_CONTENT_TYPE" || rl(resp) != "3/1/0" {
		t.Errorf("wrong content type: %+v ratelimit %s", e, rl(resp))
	}
	resp, body = f.do("GET", "/v2/audits/"+SampleAuditID, "")
	if !strings.Contains(body, "Missing Signature") {
		t.Errorf("a refused PATCH changed the audit: %s", body)
	}
	if f.em.Stats().Writes[epPatchAudit] != 0 {
		t.Error("a refused PATCH counted as a write")
	}
}

func TestBareRefusals(t *testing.T) {
	f := start(t, Config{})
	cases := []struct {
		name   string
		path   string
		header string
		body   string
		status int
	}{
		{"query over 2048 bytes", "/v2/audits?q=" + strings.Repeat("a", 2048), "", "", 403},
		{"URL over 8 KiB", "/v2/audits/" + strings.Repeat("a", 9000), "", "", 414},
		{"headers over 16 KiB", "/v2/audits", strings.Repeat("h", 17000), "", 431},
		{"body over 10 MiB", "/v2/documents", "", `{"d":"` + strings.Repeat("x", MaxBodyBytes) + `"}`, 413},
	}
	for _, c := range cases {
		method := "GET"
		if c.body != "" {
			method = "POST"
		}
		var headers []string
		if c.header != "" {
			headers = []string{"X-Big", c.header}
		}
		resp, body := f.do(method, c.path, c.body, headers...)
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d", c.name, resp.StatusCode, c.status)
		}
		if resp.Header.Get("X-Request-Id") != "" || resp.Header.Get("Retry-After") != "" || resp.Header.Get("RateLimit-Limit") != "" ||
			strings.HasPrefix(body, "{") {
			t.Errorf("%s: not bare: %v %q", c.name, resp.Header, body)
		}
	}
}

func TestIPFloodIsBlockedWithABare403(t *testing.T) {
	f := start(t, Config{IPLimit: 2})
	for i := 0; i < 2; i++ {
		resp, body := f.do("GET", "/v2/audits/"+SampleAuditID, "")
		f.want(resp, 200, body)
	}
	resp, body := f.do("GET", "/v2/audits/"+SampleAuditID, "")
	if resp.StatusCode != 403 || strings.HasPrefix(body, "{") {
		t.Fatalf("third request in one second: %d %q, want a bare 403", resp.StatusCode, body)
	}
	f.clock.Advance(time.Second)
	resp, body = f.do("GET", "/v2/audits/"+SampleAuditID, "")
	f.want(resp, 200, body)
}

func TestUsersRepeatSemantics(t *testing.T) {
	f := start(t, Config{})
	resp, body := f.do("POST", "/v2/users", `{"email":"new@example.com"}`)
	f.want(resp, 201, body)
	resp, body = f.do("POST", "/v2/users", `{"email":"new@example.com"}`)
	f.want(resp, 409, body)
	if e := parseEnvelope(t, resp, body); e.Error.Code != "INVITATION_PENDING" {
		t.Errorf("repeat: %+v", e)
	}
	resp, body = f.do("POST", "/v2/users", `{"email":"ada@example.com"}`)
	if e := parseEnvelope(t, resp, body); resp.StatusCode != 409 || e.Error.Code != "USER_EXISTS" {
		t.Errorf("signed-in user: %d %+v", resp.StatusCode, e)
	}
	// INVITE_FAILED keeps the user; the repeat sends the invitation; a third call is a 409.
	f.em.Script(Fault{Method: "POST", Path: "/v2/users", Status: 502, Code: "INVITE_FAILED"})
	resp, body = f.do("POST", "/v2/users", `{"email":"kept@example.com"}`)
	f.want(resp, 502, body)
	resp, body = f.do("POST", "/v2/users", `{"email":"kept@example.com"}`)
	f.want(resp, 201, body)
	resp, body = f.do("POST", "/v2/users", `{"email":"kept@example.com"}`)
	f.want(resp, 409, body)
	if s := f.em.Stats(); s.Created["users"] != 2 {
		t.Errorf("users created = %d, want 2", s.Created["users"])
	}

	var u struct {
		UserID string `json:"user_id"`
	}
	_, body = f.do("POST", "/v2/users", `{"email":"gone@example.com"}`)
	_ = json.Unmarshal([]byte(body), &u)
	f.em.Script(Fault{Method: "DELETE", Status: 502, Code: "REVOKE_FAILED"})
	resp, body = f.do("DELETE", "/v2/users/"+u.UserID, "")
	f.want(resp, 502, body)
	resp, body = f.do("DELETE", "/v2/users/"+u.UserID, "")
	f.want(resp, 204, body)
	resp, body = f.do("DELETE", "/v2/users/"+u.UserID, "")
	f.want(resp, 404, body)
	if s := f.em.Stats(); s.Writes[epDeleteUser] != 1 {
		t.Errorf("deletes executed = %d, want 1", s.Writes[epDeleteUser])
	}
}

func TestDocumentsAreDeduplicatedByExternalID(t *testing.T) {
	f := start(t, Config{})
	withIDs := `{"documents":[{"external_id":"e1","file_name":"a.pdf"},{"external_id":"e2","file_name":"b.pdf"}]}`
	resp, first := f.do("POST", "/v2/documents", withIDs)
	f.want(resp, 201, first)
	resp, second := f.do("POST", "/v2/documents", withIDs)
	f.want(resp, 201, second)
	ids := regexp.MustCompile(`"document_id":"([^"]+)"`)
	if a, b := ids.FindAllString(first, -1), ids.FindAllString(second, -1); strings.Join(a, ",") != strings.Join(b, ",") {
		t.Errorf("a repeat created new documents: %v then %v", a, b)
	}
	if first == second || !strings.Contains(second, "&n=2&") {
		t.Errorf("a repeat should give new upload URLs: %s", second)
	}
	_, _ = f.do("POST", "/v2/documents", `{"documents":[{"file_name":"c.pdf"}]}`)
	_, _ = f.do("POST", "/v2/documents", `{"documents":[{"file_name":"c.pdf"}]}`)
	if s := f.em.Stats(); s.Created["documents"] != 4 {
		t.Errorf("documents created = %d, want 2 deduplicated + 2 without external_id", s.Created["documents"])
	}
}

func TestEmailRecipientsAndTheLaggingList(t *testing.T) {
	f := start(t, Config{ListLag: 3 * time.Second})
	resp, body := f.do("POST", "/v2/email_recipients", `{"email":"r@example.com"}`)
	f.want(resp, 201, body)
	resp, body = f.do("POST", "/v2/email_recipients", `{"email":"r@example.com"}`)
	if e := parseEnvelope(t, resp, body); resp.StatusCode != 409 || e.Error.Code != "EMAIL_RECIPIENT_EXISTS" {
		t.Errorf("repeat: %d %+v", resp.StatusCode, e)
	}
	_, body = f.do("GET", "/v2/email_recipients?email=r@example.com", "")
	if strings.Contains(body, "r@example.com") {
		t.Errorf("the list did not lag: %s", body)
	}
	f.clock.Advance(3 * time.Second)
	_, body = f.do("GET", "/v2/email_recipients?email=r%40example.com", "")
	if !strings.Contains(body, `"email":"r@example.com"`) {
		t.Errorf("the list never showed the recipient: %s", body)
	}
}

func TestTokenEndpoint(t *testing.T) {
	f := start(t, Config{TokenBurst: 2, TokenInterval: 10 * time.Second, TokenTTL: time.Minute, ClientSecret: "s3cret"})
	mint := func(id, secret string) (*http.Response, string) {
		return f.do("POST", "/v2/oauth/token", `{"grant_type":"client_credentials","client_id":"`+id+`","client_secret":"`+secret+`"}`, "Authorization", "")
	}
	resp, body := mint("c1", "s3cret")
	f.want(resp, 200, body)
	var tok struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int    `json:"expires_in"`
	}
	_ = json.Unmarshal([]byte(body), &tok)
	if tok.AccessToken == "" || tok.TokenType != "Bearer" || tok.ExpiresIn != 60 {
		t.Fatalf("token answer = %s", body)
	}
	resp, body = mint("c1", "wrong")
	if e := parseEnvelope(t, resp, body); resp.StatusCode != 403 || e.Error.Code != "access_denied" {
		t.Errorf("wrong secret: %d %s", resp.StatusCode, body)
	}
	resp, body = mint("c1", "s3cret")
	f.want(resp, 429, body)
	if e := parseEnvelope(t, resp, body); e.Error.Code != "RATE_LIMITED" || resp.Header.Get("Retry-After") != "10" {
		t.Errorf("21st-in-a-burst analogue: %s %v", body, resp.Header)
	}
	resp, body = mint("c2", "s3cret")
	f.want(resp, 200, body)

	resp, body = f.do("GET", "/v2/audits/"+SampleAuditID, "", "Authorization", "Bearer "+tok.AccessToken)
	f.want(resp, 200, body)
	f.clock.Advance(time.Minute)
	resp, body = f.do("GET", "/v2/audits/"+SampleAuditID, "", "Authorization", "Bearer "+tok.AccessToken)
	f.want(resp, 401, body)
	if s := f.em.Stats(); s.Mints != 2 {
		t.Errorf("mints = %d, want 2", s.Mints)
	}
}

func TestScriptedFaults(t *testing.T) {
	f := start(t, Config{})
	path := "/v2/audits/" + SampleAuditID
	f.em.Script(Fault{Method: "GET", Path: path, Status: 503, Times: 2, Headers: map[string]string{"Retry-After": "1"}})
	for i := 0; i < 2; i++ {
		resp, body := f.do("GET", path, "")
		f.want(resp, 503, body)
		parseEnvelope(t, resp, body)
		if resp.Header.Get("Retry-After") != "1" || resp.Header.Get("RateLimit-Limit") == "" {
			t.Errorf("scripted 503 headers: %v", resp.Header)
		}
	}
	resp, body := f.do("GET", path, "")
	f.want(resp, 200, body)

	// Executed, then the connection is dropped: the work is done, the answer lost.
	f.em.Script(Fault{Method: "PATCH", Drop: true, Execute: true})
	req, _ := http.NewRequest("PATCH", f.srv.URL+path, strings.NewReader(`{"flags":["Dropped"]}`))
	req.Header.Set("Authorization", "Bearer x")
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a dropped connection answered %d", resp.StatusCode)
	}
	_, body = f.do("GET", path, "")
	if !strings.Contains(body, `"Dropped"`) {
		t.Errorf("the dropped PATCH was not executed: %s", body)
	}
	// Over HTTP, as a test in another language would script it.
	hr, err := http.Post(f.srv.URL+"/_emulator/faults", "application/json", strings.NewReader(`[{"path":"/v2/audits","status":403,"bare":true}]`))
	if err != nil || hr.StatusCode != 204 {
		t.Fatalf("POST /_emulator/faults: %v %v", hr, err)
	}
	hr.Body.Close()
	resp, body = f.do("GET", "/v2/audits", "")
	if resp.StatusCode != 403 || strings.HasPrefix(body, "{") || resp.Header.Get("RateLimit-Limit") != "" {
		t.Errorf("scripted bare 403: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	if s := f.em.Stats(); s.Dropped != 1 || s.Writes[epPatchAudit] != 1 || s.Faults != 4 {
		t.Errorf("stats = %+v", s)
	}
}

func TestRandomFaultsRunTheWriteFirst(t *testing.T) {
	f := start(t, Config{FailRate: 1})
	resp, body := f.do("POST", "/v2/email_recipients", `{"email":"x@example.com"}`)
	if resp.StatusCode < 500 || resp.StatusCode > 504 || resp.StatusCode == 501 {
		t.Fatalf("fail-rate 1 answered %d", resp.StatusCode)
	}
	parseEnvelope(t, resp, body)
	if s := f.em.Stats(); s.Created["email_recipients"] != 1 {
		t.Errorf("the failed write did not run first: %+v", s)
	}
	d := start(t, Config{DropRate: 1})
	req, _ := http.NewRequest("GET", d.srv.URL+"/v2/audits/"+SampleAuditID, nil)
	req.Header.Set("Authorization", "Bearer x")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("drop-rate 1 answered")
	}
}

func TestStatsEndpoint(t *testing.T) {
	f := start(t, Config{})
	_, _ = f.do("GET", "/v2/audits/"+SampleAuditID, "")
	_, _ = f.do("PATCH", "/v2/audits/"+SampleAuditID, `{"flags":["A"]}`)
	hr, err := http.Get(f.srv.URL + "/_emulator/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer hr.Body.Close()
	var s Stats
	if err := json.NewDecoder(hr.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	if s.Requests != 2 || s.Responses["200"] != 2 || s.Writes["PATCH /v2/audits/{id}"] != 1 {
		t.Errorf("stats = %+v", s)
	}
}

func TestSeedMakesRequestIDsReproducible(t *testing.T) {
	a, b := New(Config{Seed: 42}), New(Config{Seed: 42})
	if x, y := a.requestID(), b.requestID(); x != y || !uuidRE.MatchString(x) {
		t.Errorf("seeded ids %s %s", x, y)
	}
}

func TestFormatUUID(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		a, b := rnd.Uint64(), rnd.Uint64()
		want := fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", a>>32, (a>>16)&0xffff, a&0xffff, b>>48, b&0xffffffffffff)
		if got := formatUUID(a, b); got != want {
			t.Fatalf("formatUUID(%x, %x) = %s, want %s", a, b, got, want)
		}
	}
}
