package request

import (
	"errors"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNewUpload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "visit.PDF")
	if err := os.WriteFile(path, []byte("%PDF-1.7"), 0o600); err != nil {
		t.Fatal(err)
	}
	file, err := OpenFile(path)
	if err != nil || file.Size != 8 {
		t.Fatalf("%+v %v", file, err)
	}
	spec, err := NewUpload("HTTPS://uploads.example.com/b/k?X-Amz-Signature=abcdef0123456789&X-Amz-Expires=900#frag", file, []string{"X-Amz-Meta-A: 1"})
	if err != nil {
		t.Fatal(err)
	}
	c := spec.Class()
	if spec.Method != "PUT" || !spec.Upload || !c.Safe || !c.Upload || c.Rule != nil || spec.URL.Fragment != "" {
		t.Errorf("spec %+v class %+v", spec, c)
	}
	if ct := spec.Header.Get("Content-Type"); ct != "application/pdf" || spec.Header.Get("X-Amz-Meta-A") != "1" {
		t.Errorf("header %v", spec.Header)
	}
	if p := spec.Path(); p != "https://uploads.example.com/b/k?X-Amz-Signature=***&X-Amz-Expires=900" {
		t.Errorf("Path() = %q: the log shows the host and no signature", p)
	}
	if s := SignatureValues(spec.URL); len(s) != 1 || s[0] != "abcdef0123456789" {
		t.Errorf("SignatureValues = %v", s)
	}
	for _, h := range []string{"Content-Type: image/png", "content-type: image/png"} {
		if s, err := NewUpload("https://u.example.com/k", file, []string{h}); err != nil || s.Header.Get("Content-Type") != "image/png" {
			t.Errorf("-H %s: %v %v", h, s.Header, err)
		}
	}
	for raw, want := range map[string]string{
		"http://uploads.example.com/k":   "plain http",
		"ftp://127.0.0.1/k":              "scheme",
		"/k":                             "invalid UPLOAD_URL",
		"https://user:pw@u.example.com/": "user info",
		"https://u.example.com/" + strings.Repeat("a", MaxRequestLine): "request line",
	} {
		if _, err := NewUpload(raw, file, nil); !isUsage(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%.60s: %v, want a usage error with %q", raw, err, want)
		}
	}
	for _, h := range []string{"Authorization: Bearer x", "Cookie: a=b", "X-Api-Key: k", "Proxy-Authorization: x", "bad header"} {
		if _, err := NewUpload("https://u.example.com/k", file, []string{h}); !isUsage(err) {
			t.Errorf("-H %s: %v, want a usage error", h, err)
		}
	}
	if _, err := NewUpload("http://127.0.0.1:9/k", file, nil); err != nil {
		t.Errorf("loopback http: %v", err)
	}
	if _, err := NewUpload("http://localhost:9/k", file, nil); err != nil {
		t.Errorf("localhost http: %v", err)
	}
}

func isUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

func TestFileIsReadWholeEachTimeAndRefusedOnceChanged(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.bin")
	if err := os.WriteFile(path, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	file, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	watched := 0
	file.Watch = func(r io.Reader) io.Reader { watched++; return r }
	spec := &Spec{Method: "PUT", URL: &url.URL{Scheme: "https", Host: "u"}, File: file}
	for i := 0; i < 2; i++ {
		rc, n, err := spec.OpenBody()
		if err != nil || n != 10 {
			t.Fatalf("open %d: %d %v", i, n, err)
		}
		b, _ := io.ReadAll(rc)
		_ = rc.Close()
		if string(b) != "0123456789" {
			t.Fatalf("read %q", b)
		}
	}
	if watched != 2 {
		t.Errorf("Watch ran %d times, want once an attempt", watched)
	}
	if err := os.WriteFile(path, []byte("01234567890"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := spec.OpenBody(); !isUsage(err) || !strings.Contains(err.Error(), "was 10 bytes and is now 11") {
		t.Errorf("grown file: %v", err)
	}
	if err := os.WriteFile(path, []byte("abcdefghij"), 0o600); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	_ = os.Chtimes(path, later, later)
	if _, _, err := spec.OpenBody(); !isUsage(err) || !strings.Contains(err.Error(), "modified") {
		t.Errorf("rewritten file: %v", err)
	}
	_ = os.Remove(path)
	if _, _, err := spec.OpenBody(); !isUsage(err) || !strings.Contains(err.Error(), "can no longer be read") {
		t.Errorf("removed file: %v", err)
	}
	empty := filepath.Join(dir, "empty")
	_ = os.WriteFile(empty, nil, 0o600)
	ef, _ := OpenFile(empty)
	if rc, n, err := (&Spec{File: ef}).OpenBody(); err != nil || n != 0 || rc == nil {
		t.Errorf("empty file: %v %d %v", rc, n, err)
	}
	if _, err := OpenFile(dir); !isUsage(err) || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("folder: %v", err)
	}
	if _, err := OpenFile(filepath.Join(dir, "nope")); !isUsage(err) || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing: %v", err)
	}
	if _, err := OpenFile(""); !isUsage(err) {
		t.Errorf("empty name: %v", err)
	}
}

func TestRedactQueryAndContentType(t *testing.T) {
	for in, want := range map[string]string{
		"https://h/k":                         "https://h/k",
		"https://h/k?a=1&sig=xyz&Signature=s": "https://h/k?a=1&sig=***&Signature=***",
		"https://h/k?X-Goog-Credential=c&x":   "https://h/k?X-Goog-Credential=***&x",
		"/k?X-Amz-Security-Token=t&expires=5": "/k?X-Amz-Security-Token=***&expires=5",
		"/k?%73ig=abc":                        "/k?%73ig=***",
	} {
		if got := RedactQuery(in); got != want {
			t.Errorf("RedactQuery(%q) = %q, want %q", in, got, want)
		}
	}
	for path, want := range map[string]string{"a.pdf": "application/pdf", "b.JSON": "application/json", "c": "application/octet-stream", "d.zzz9": "application/octet-stream"} {
		if got := ContentTypeOf(path); got != want {
			t.Errorf("ContentTypeOf(%s) = %s, want %s", path, got, want)
		}
	}
}
