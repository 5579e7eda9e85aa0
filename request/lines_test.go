package request

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseLine(t *testing.T) {
	cases := []struct {
		text string
		skip bool
		want Line // N, Hash and Err are not compared
		err  string
	}{
		{text: "", skip: true},
		{text: "   \t", skip: true},
		{text: "# GET /x", skip: true},
		{text: "  # indented comment", skip: true},
		{text: "GET /v2/audits/a", want: Line{Method: "GET", Path: "/v2/audits/a"}},
		{text: "get   /v2/x", want: Line{Method: "GET", Path: "/v2/x"}},
		{text: `POST /v2/users {"email":"a@b.c"}`, want: Line{Method: "POST", Path: "/v2/users", Body: []byte(`{"email":"a@b.c"}`)}},
		{text: "DELETE /v2/users/u1   ", want: Line{Method: "DELETE", Path: "/v2/users/u1"}},
		{text: "GET", err: "want METHOD PATH [JSON-BODY] or a JSON object"},
		{text: `{"path":"/v2/x"}`, want: Line{Method: "GET", Path: "/v2/x"}},
		{text: `{"path":" /v2/x ","method":" patch ","id":"a","body":{"f":1},"headers":{"X-A":"b"},"idempotent":true}`,
			want: Line{ID: "a", Method: "PATCH", Path: "/v2/x", Body: []byte(`{"f":1}`), Headers: []string{"X-A: b"}, Idempotent: true}},
		{text: `{"path":"/x","id":7}`, want: Line{ID: "7", Method: "GET", Path: "/x"}},
		{text: `{"path":"/x","id":2.5e3}`, want: Line{ID: "2.5e3", Method: "GET", Path: "/x"}},
		{text: `{"path":"/x","id":null,"body":null}`, want: Line{Method: "GET", Path: "/x"}},
		{text: `{"path":"/x","id":""}`, want: Line{Method: "GET", Path: "/x"}},
		{text: `{"path":"/x","id":{}}`, err: `"id" must be a string or a number`},
		{text: `{"path":"/x","id":true}`, err: `"id" must be a string or a number`},
		{text: `{"method":"GET"}`, err: `"path" is required`},
		{text: `{"path":"  "}`, err: `"path" is required`},
		{text: `{"path":"/x","extra":1}`, err: "unknown field"},
		{text: `{"path":"/x"} {"path":"/y"}`, err: "more than one JSON value"},
		{text: `{"upload_url":"https://u.example.com/k?sig=abcdef&e=1","file":"a b.pdf","id":"x"}`,
			want: Line{ID: "x", Method: "PUT", Path: "https://u.example.com/k?sig=***&e=1", UploadURL: "https://u.example.com/k?sig=abcdef&e=1", File: "a b.pdf"}},
		{text: `{"upload_url":"https://u/k","file":"a.pdf","method":"put","headers":{"Content-Type":"application/pdf"}}`,
			want: Line{Method: "PUT", Path: "https://u/k", UploadURL: "https://u/k", File: "a.pdf", Headers: []string{"Content-Type: application/pdf"}}},
		{text: `{"upload_url":"https://u/k"}`, err: `"upload_url" needs "file"`},
		{text: `{"file":"a.pdf"}`, err: `"file" goes with "upload_url"`},
		{text: `{"upload_url":" ","file":"a.pdf"}`, err: `"file" goes with "upload_url"`},
		{text: `{"upload_url":"https://u/k","file":"a.pdf","path":"/v2/x"}`, err: `do not go together`},
		{text: `{"upload_url":"https://u/k","file":"a.pdf","body":{}}`, err: `takes no "body"`},
		{text: `{"upload_url":"https://u/k","file":"a.pdf","method":"POST"}`, err: `an upload is a PUT, not POST`},
		{text: `{"path":`, err: "invalid JSON line"},
	}
	for _, c := range cases {
		l, skip := ParseLine(3, c.text)
		if skip != c.skip {
			t.Errorf("%q: skip %v, want %v", c.text, skip, c.skip)
			continue
		}
		if skip {
			continue
		}
		if l.N != 3 || l.Hash != LineHash(c.text) {
			t.Errorf("%q: line %d hash %x", c.text, l.N, l.Hash)
		}
		if c.err != "" {
			if l.Err == nil || !strings.Contains(l.Err.Error(), c.err) || !strings.HasPrefix(l.Err.Error(), "line 3: ") {
				t.Errorf("%q: err %v, want line 3: …%s", c.text, l.Err, c.err)
			}
			continue
		}
		got := l
		got.N, got.Hash, got.Err = 0, 0, nil
		if l.Err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q:\n got %+v (%v)\nwant %+v", c.text, got, l.Err, c.want)
		}
	}
}

func TestLineHashIgnoresTrailingSpace(t *testing.T) {
	if LineHash("GET /x") != LineHash("GET /x \r\n") || LineHash("GET /x") == LineHash("GET /y") || LineHash(" GET /x") == LineHash("GET /x") {
		t.Fatal("LineHash must ignore trailing space only")
	}
}

func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", MaxLineBytes+10)
	in := "\uFEFFa\n\nb\r\n" + long + "\n\uFEFFlast" // a byte-order mark first is dropped, elsewhere kept
	lr := NewLineReader(strings.NewReader(in))
	type got struct {
		n       int
		text    string
		tooLong bool
	}
	var lines []got
	for {
		n, text, tooLong, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(text) > 20 {
			text = fmt.Sprintf("%d bytes", len(text))
		}
		lines = append(lines, got{n, text, tooLong})
	}
	want := []got{{1, "a", false}, {2, "", false}, {3, "b", false}, {4, fmt.Sprintf("%d bytes", MaxLineBytes), true}, {5, "\uFEFFlast", false}}
	if !reflect.DeepEqual(lines, want) {
		t.Fatalf("lines:\n got %v\nwant %v", lines, want)
	}
}

func TestParseDuration(t *testing.T) {
	cases := map[string]time.Duration{
		"60": time.Minute, " 1.5 ": 1500 * time.Millisecond, "0": 0, "1m30s": 90 * time.Second, "500ms": 500 * time.Millisecond,
		"9223372036": 9223372036 * time.Second,
	}
	for in, want := range cases {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "  ", "-1", "-1s", "abc", "NaN", "Inf", "1e400", "9223372037", "1h-5m"} {
		if d, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", bad, d)
		}
	}
}

func TestTruncate(t *testing.T) {
	if truncate("abc", 3) != "abc" || truncate("abcd", 3) != "abc…" {
		t.Fatal("truncate")
	}
}

func TestParseSize(t *testing.T) {
	cases := map[string]int64{"0": 0, "1048576": 1 << 20, "8MiB": 8 << 20, "8 mib": 8 << 20, "8M": 8 << 20, "8MB": 8e6,
		"1.5GiB": 3 << 29, "64k": 64 << 10, "64KB": 64000, "1g": 1 << 30, "10b": 10}
	for in, want := range cases {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "8XB", "MiB", "1e300", "NaN", "8 MiB MiB"} {
		if got, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", bad, got)
		}
	}
}

func TestRedactURL(t *testing.T) {
	cases := map[string]string{
		"redis://:s3cret@127.0.0.1:6379/0": "redis://:***@127.0.0.1:6379/0",
		"redis://user:s3cret@host:1/2":     "redis://user:***@host:1/2",
		"redis://127.0.0.1:6379/0":         "redis://127.0.0.1:6379/0",
		"local":                            "local",
		"redis://:p%40ss@h/0":              "redis://:***@h/0",
	}
	for in, want := range cases {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
	if got := URLPassword("redis://:p%40ss@h/0"); got != "p@ss" {
		t.Errorf("URLPassword = %q", got)
	}
}

func TestFields(t *testing.T) {
	parse := func(raw string, typed bool) Field {
		t.Helper()
		f, err := ParseField(raw, typed, strings.NewReader("stdin text"))
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		return f
	}
	fields := []Field{parse("a=1", false), parse("b=1", true), parse("c=true", true), parse("d=null", true),
		parse("e=1.5", true), parse("list[]=x", false), parse("list[]=2", true), parse("o[k]=v", false), parse("o[n][]=1", true), parse("s=@-", true)}
	body, err := FieldsBody(fields)
	if err != nil || string(body) != `{"a":"1","b":1,"c":true,"d":null,"e":"1.5","list":["x",2],"o":{"k":"v","n":[1]},"s":"stdin text"}` {
		t.Fatalf("FieldsBody = %s %v", body, err)
	}
	for _, bad := range [][]Field{{parse("a=1", false), parse("a=2", false)}, {parse("a=1", false), parse("a[]=2", false)}, {parse("a=1", false), parse("a[b]=2", false)}} {
		if _, err := FieldsBody(bad); err == nil {
			t.Errorf("%v was accepted", bad)
		}
	}
	for _, bad := range []string{"novalue", "=v", "a[=1", "a[][b]=1", "[x]=1"} {
		if _, err := ParseField(bad, false, nil); err == nil {
			t.Errorf("ParseField(%q) was accepted", bad)
		}
	}
	if _, err := ParseField("f=@/no/such/file", true, nil); err == nil {
		t.Error("a missing @FILE was accepted")
	}
	if got := AppendQuery("/x", QueryPairs([]Field{parse("a=b c", false), parse("n=null", true), parse("t=true", true)})); got != "/x?a=b+c&n=&t=true" {
		t.Errorf("AppendQuery = %q", got)
	}
	for target, want := range map[string]string{"/x?": "/x?k=v", "/x?a=1": "/x?a=1&k=v", "/x?a=1&": "/x?a=1&k=v"} {
		if got := AppendQuery(target, [][2]string{{"k", "v"}}); got != want {
			t.Errorf("AppendQuery(%q) = %q, want %q", target, got, want)
		}
	}
}
