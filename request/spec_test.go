package request

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func base(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := ParseBaseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestResolveKeepsTheTokenOnTheBaseOrigin(t *testing.T) {
	b := base(t, "https://api.brellium.com")
	cases := []struct {
		target, want string
		usage        bool
	}{
		{"/v2/audits/a?limit=1", "https://api.brellium.com/v2/audits/a?limit=1", false},
		{"v2/audits", "https://api.brellium.com/v2/audits", false},
		{"https://api.brellium.com/v2/x", "https://api.brellium.com/v2/x", false},
		{"https://API.brellium.com:443/v2/x", "https://API.brellium.com:443/v2/x", false},
		{"https://evil.example/v2/x", "", true},
		{"http://api.brellium.com/v2/x", "", true},
		{"https://api.brellium.com:8443/v2/x", "", true},
		{"//evil.example/v2/x", "", true},
		{"", "", true},
	}
	for _, c := range cases {
		u, err := Resolve(b, c.target)
		var ue *UsageError
		if c.usage {
			if !errors.As(err, &ue) {
				t.Errorf("Resolve(%q) = %v, %v; want a usage error", c.target, u, err)
			}
			continue
		}
		if err != nil || u.String() != c.want {
			t.Errorf("Resolve(%q) = %v, %v; want %s", c.target, u, err, c.want)
		}
	}
	prefixed := base(t, "http://127.0.0.1:8080/api/")
	if u, _ := Resolve(prefixed, "/v2/x?q=1"); u.String() != "http://127.0.0.1:8080/api/v2/x?q=1" {
		t.Errorf("prefixed base: %v", u)
	}
}

func TestNewRefusesBadInput(t *testing.T) {
	b := base(t, "https://api.brellium.com")
	long := "/v2/audits?q=" + strings.Repeat("a", MaxQueryBytes)
	cases := map[string]Options{
		"long query":    {Target: long},
		"bad json":      {Method: "POST", Target: "/v2/x", Body: []byte(`{"a":`)},
		"two values":    {Method: "POST", Target: "/v2/x", Body: []byte(`{} {}`)},
		"header colon":  {Target: "/v2/x", Headers: []string{"NoColon"}},
		"header name":   {Target: "/v2/x", Headers: []string{"Bad Name: x"}},
		"method":        {Method: "GE T", Target: "/v2/x"},
		"foreign":       {Target: "https://other.example/v2"},
		"missing path ": {Target: " "},
	}
	for name, o := range cases {
		_, err := New(b, o)
		var ue *UsageError
		if !errors.As(err, &ue) {
			t.Errorf("%s: err = %v, want a usage error", name, err)
		}
	}
	ok := "/v2/audits?q=" + strings.Repeat("a", MaxQueryBytes-2)
	if _, err := New(b, Options{Target: ok}); err != nil {
		t.Errorf("a query of exactly %d bytes was refused: %v", MaxQueryBytes, err)
	}
	s, err := New(b, Options{Method: "post", Target: "/v2/x", Body: []byte(`{}`), IdempotencyKey: "k", Headers: []string{"x-a: b c "}})
	if err != nil || s.Method != "POST" || !s.Idempotent || s.Header.Get("Idempotency-Key") != "k" || s.Header.Get("X-A") != "b c" {
		t.Errorf("New = %+v, %v", s, err)
	}
}

func TestCredentialsNeedTLSOffLoopback(t *testing.T) {
	for raw, refused := range map[string]bool{
		"http://api.brellium.com": true, "http://10.0.0.1:80": true, "https://api.brellium.com": false,
		"http://127.0.0.1:8080": false, "http://localhost:1": false, "http://[::1]:9": false,
	} {
		err := CheckCredentialsTransport(base(t, raw))
		if (err != nil) != refused {
			t.Errorf("%s: err = %v, refused want %v", raw, err, refused)
		}
	}
}

func TestLoadData(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "b.json")
	_ = os.WriteFile(p, []byte(`{"a":1}`), 0o600)
	if b, err := LoadData("@"+p, nil); err != nil || string(b) != `{"a":1}` {
		t.Errorf("@file: %q %v", b, err)
	}
	if b, err := LoadData("@-", strings.NewReader(`[1]`)); err != nil || string(b) != `[1]` {
		t.Errorf("@-: %q %v", b, err)
	}
	if _, err := LoadData("@"+filepath.Join(dir, "missing.json"), nil); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
}

func TestClassify(t *testing.T) {
	b := base(t, "https://api.brellium.com")
	cases := []struct {
		method, path, body string
		idem               bool
		safe               bool
		rule               string
	}{
		{"GET", "/v2/audits/a", "", false, true, ""},
		{"HEAD", "/anything", "", false, true, ""},
		{"PATCH", "/v2/audits/a", `{}`, false, true, "PATCH /v2/audits/{id}"},
		{"PATCH", "/v2/audits/a/b", `{}`, false, false, ""},
		{"POST", "/v2/audits/batch_update", `{}`, false, true, "POST /v2/audits/batch_update"},
		{"POST", "/v2/documents", `{"documents":[{"external_id":"x"}]}`, false, true, "POST /v2/documents"},
		{"POST", "/v2/documents", `{"documents":[{"external_id":""}]}`, false, false, "POST /v2/documents"},
		{"POST", "/v2/documents", `{"documents":[{"external_id":5}]}`, false, false, "POST /v2/documents"},
		{"POST", "/v2/documents", `{"documents":[{"external_id":"x"}]}`, false, true, "POST /v2/documents"},
		{"POST", "/v2/users", `{}`, false, false, "POST /v2/users"},
		{"POST", "/v2/users", `{}`, true, true, "POST /v2/users"},
		{"DELETE", "/v2/users/u1", "", false, true, "DELETE /v2/users/{id}"},
		{"DELETE", "/v2/audits/a", "", false, false, ""},
		{"POST", "/v2/email_recipients", `{}`, false, false, "POST /v2/email_recipients"},
		{"POST", "/v2/oauth/token", `{}`, false, true, "POST /v2/oauth/token"},
		{"PUT", "/v2/x", `{}`, false, false, ""},
	}
	for _, c := range cases {
		var body []byte
		if c.body != "" {
			body = []byte(c.body)
		}
		s, err := New(b, Options{Method: c.method, Target: c.path, Body: body, Idempotent: c.idem})
		if err != nil {
			t.Fatal(err)
		}
		cl := Classify(s)
		name := ""
		if cl.Rule != nil {
			name = cl.Rule.Name
		}
		if cl.Safe != c.safe || name != c.rule || cl.Why == "" {
			t.Errorf("%s %s %s: safe=%v rule=%q why=%q; want safe=%v rule=%q", c.method, c.path, c.body, cl.Safe, name, cl.Why, c.safe, c.rule)
		}
	}
}

func FuzzParseHeader(f *testing.F) {
	for _, s := range []string{"X-A: b", "NoColon", ": v", "A:", "A: b\r\nC: d", "Ä: x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		name, value, err := ParseHeader(raw)
		if err != nil {
			return
		}
		if name == "" || strings.ContainsAny(name+value, "\r\n\x00") || strings.Contains(name, ":") {
			t.Fatalf("ParseHeader(%q) accepted %q: %q", raw, name, value)
		}
	})
}

func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		"GET /v2/audits/a", `POST /v2/users {"email":"a@b.c"}`, `{"path":"/v2/x","method":"patch","body":{"a":1},"headers":{"X":"y"},"id":3}`,
		"", "# comment", "{", `{"path":1}`, `{"id":{},"path":"/x"}`, "GET", "  GET   /x   {}  ", `{"path":"/x"} {}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		l, skip := ParseLine(7, text)
		if skip {
			return
		}
		if l.N != 7 {
			t.Fatalf("line number %d", l.N)
		}
		if l.Err == nil && (l.Path == "" || l.Method == "") {
			t.Fatalf("ParseLine(%q) accepted a line with no path or method: %+v", text, l)
		}
		if l.Err != nil && !strings.HasPrefix(l.Err.Error(), "line 7: ") {
			t.Fatalf("error does not name the line: %v", l.Err)
		}
	})
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"60", "1m30s", "0", "1.5", "-1", "500ms", "", "abc", "1e400", "NaN", "Inf", "9223372036"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err == nil && d < 0 {
			t.Fatalf("ParseDuration(%q) = %v: negative", s, d)
		}
	})
}
