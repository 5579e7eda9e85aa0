package request

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func classOf(t *testing.T, method, target, body string, idem bool, key string) Class {
	t.Helper()
	b, _ := url.Parse("https://api.brellium.com")
	var raw []byte
	if body != "" {
		raw = []byte(body)
	}
	s, err := New(b, Options{Method: method, Target: target, Body: raw, Idempotent: idem, IdempotencyKey: key})
	if err != nil {
		t.Fatal(err)
	}
	return Classify(s)
}

// The endpoint table's edges: blank external ids, OPTIONS, and what a key or --idempotent does.
func TestClassifyEdges(t *testing.T) {
	cases := []struct {
		name, method, path, body string
		idem                     bool
		key                      string
		safe, keySent            bool
		why                      string
	}{
		{"whitespace external_id", "POST", "/v2/documents", `{"documents":[{"external_id":"a"},{"external_id":"  "}]}`, false, "", false, false, "POST /v2/documents: safe only when"},
		{"missing documents", "POST", "/v2/documents", `{}`, false, "", false, false, "POST /v2/documents"},
		{"not JSON documents", "POST", "/v2/documents", `[]`, false, "", false, false, "POST /v2/documents"},
		{"OPTIONS", "OPTIONS", "/v2/audits", "", false, "", true, false, "OPTIONS is safe to repeat"},
		{"HEAD", "HEAD", "/v2/audits", "", false, "", true, false, "HEAD is safe to repeat"},
		{"a key makes a write safe", "POST", "/v1/payments", `{}`, false, "k-1", true, true, "an Idempotency-Key is sent"},
		{"--idempotent", "PUT", "/v1/things/1", `{}`, true, "", true, false, "marked --idempotent"},
		{"unknown write", "PUT", "/v1/things/1", `{}`, false, "", false, false, "PUT is not safe to repeat"},
		{"known unsafe endpoint", "POST", "/v2/users", `{}`, false, "", false, false, "POST /v2/users: unsafe"},
		{"trailing slash", "PATCH", "/v2/audits/a/", `{}`, false, "", true, false, "PATCH /v2/audits/{id}"},
		{"empty id", "PATCH", "/v2/audits//", `{}`, false, "", false, false, "PATCH is not safe"},
		{"another method on a known path", "GET", "/v2/users", "", false, "", true, false, "GET is safe"},
	}
	for _, c := range cases {
		cl := classOf(t, c.method, c.path, c.body, c.idem, c.key)
		if cl.Safe != c.safe || cl.KeySent != c.keySent || !strings.Contains(cl.Why, c.why) {
			t.Errorf("%s: safe %v keySent %v why %q; want %v %v %q", c.name, cl.Safe, cl.KeySent, cl.Why, c.safe, c.keySent, c.why)
		}
	}
	// A user's own Idempotency-Key header counts as a key sent.
	b, _ := url.Parse("https://api.brellium.com")
	s, _ := New(b, Options{Method: "POST", Target: "/v1/p", Body: []byte(`{}`), Headers: []string{"Idempotency-Key: mine"}})
	if cl := Classify(s); !cl.KeySent || cl.Safe {
		t.Errorf("a user's Idempotency-Key header: %+v (it is sent, but only --idempotency-key marks the call safe)", cl)
	}
}

// Error codes match whatever their case.
func TestMatchIgnoresTheCodesCase(t *testing.T) {
	m := Match{Status: 409, Codes: []string{"INVITATION_PENDING", "USER_EXISTS"}}
	for code, want := range map[string]bool{"USER_EXISTS": true, "user_exists": true, "Invitation_Pending": true, "OTHER": false, "": false} {
		if got := m.Matches(409, code); got != want {
			t.Errorf("Matches(409, %q) = %v, want %v", code, got, want)
		}
	}
	if m.Matches(404, "USER_EXISTS") {
		t.Error("another status matched")
	}
	if !(Match{Status: 404}).Matches(404, "ANYTHING") {
		t.Error("a match without codes matches any code")
	}
}

func TestLookupNamesEachRule(t *testing.T) {
	for _, name := range []string{"PATCH /v2/audits/{id}", "POST /v2/audits/batch_update", "POST /v2/documents", "POST /v2/users",
		"DELETE /v2/users/{id}", "POST /v2/email_recipients", "POST /v2/oauth/token"} {
		method, path, _ := strings.Cut(name, " ")
		path = strings.ReplaceAll(path, "{id}", "x1")
		if r := Lookup(method, path); r == nil || r.Name != name {
			t.Errorf("Lookup(%s %s) = %v, want %s", method, path, r, name)
		}
	}
	if r := Lookup("POST", "/v2/audits/batch_update/x"); r != nil {
		t.Errorf("a longer path matched %s", r.Name)
	}
}

func TestEmailRecipientFetch(t *testing.T) {
	r := Lookup("POST", "/v2/email_recipients")
	body := []byte(`{"email":"Ann+1@example.com"}`)
	q, ok := r.Fetch.Query(body)
	if !ok || q != "/v2/email_recipients?email=Ann%2B1%40example.com" {
		t.Errorf("Query = %q %v", q, ok)
	}
	if _, ok := r.Fetch.Query([]byte(`{}`)); ok {
		t.Error("a body without an email gave a query")
	}
	list := []byte(`{"object":"list","data":[{"id":"er_0","email":"other@example.com"},{"id":"er_1","email":"ann+1@EXAMPLE.com"}]}`)
	item, ok := r.Fetch.Pick(list, body)
	if !ok || string(item) != `{"id":"er_1","email":"ann+1@EXAMPLE.com"}` {
		t.Errorf("Pick = %s %v", item, ok)
	}
	for _, l := range []string{`{"data":[]}`, `not json`, `{"data":[{"id":"er_0","email":"other@example.com"}]}`} {
		if _, ok := r.Fetch.Pick([]byte(l), body); ok {
			t.Errorf("Pick found the recipient in %s", l)
		}
	}
}

func TestPathTemplates(t *testing.T) {
	got := PathTemplates("DELETE")
	if !reflect.DeepEqual(got, []string{"/v2/users/"}) {
		t.Errorf("DELETE templates = %v", got)
	}
	get := PathTemplates("GET")
	if len(get) != 3 || get[0] != "/v2/audits?limit=" {
		t.Errorf("GET templates = %v", get)
	}
	all := PathTemplates("")
	seen := map[string]bool{}
	for _, p := range all {
		if seen[p] {
			t.Errorf("%s listed twice", p)
		}
		seen[p] = true
	}
	if !seen["/v2/audits/"] || !seen["/v2/oauth/token"] || !seen["/v2/users"] {
		t.Errorf("all templates = %v", all)
	}
}

func TestParseHeaderAndTokens(t *testing.T) {
	if n, v, err := ParseHeader(" x-trace-id :  a b  "); err != nil || n != "X-Trace-Id" || v != "a b" {
		t.Errorf("ParseHeader = %q %q %v", n, v, err)
	}
	for _, bad := range []string{"X-A: a\nb", "X A: b", "X\x7f: b", "X(a): b", ":b"} {
		if _, _, err := ParseHeader(bad); err == nil {
			t.Errorf("ParseHeader(%q) was accepted", bad)
		}
	}
	for tok, want := range map[string]bool{"GET": true, "X-A_b.c~!#$%&'*+^`|": true, "": false, "A B": false, "A\x20": false, "A\x21": true, "A\x7e": true, "A\x7f": false, "Ä": false, "A:": false} {
		if got := validToken(tok); got != want {
			t.Errorf("validToken(%q) = %v, want %v", tok, got, want)
		}
	}
}
