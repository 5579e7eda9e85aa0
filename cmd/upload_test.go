package cmd

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brellium/brellium/emulator"
)

// withUploads serves the harness emulator's uploads origin on a port of its own, as the
// emulator command does, so that "another origin, no credentials" is exercised for real.
func (h *harness) withUploads() {
	up := httptest.NewServer(h.em.Uploads())
	h.t.Cleanup(up.Close)
	h.em.SetUploadsOrigin(up.URL)
}

type createdDoc struct {
	ID        string `json:"document_id"`
	Status    string `json:"status"`
	UploadURL string `json:"upload_url"`
}

// createDocs creates documents with these external ids through brellium and returns them.
func (h *harness) createDocs(externalIDs ...string) []createdDoc {
	h.t.Helper()
	var docs []string
	for _, id := range externalIDs {
		docs = append(docs, fmt.Sprintf(`{"external_id":%q,"file_name":%q}`, id, id+".pdf"))
	}
	r := h.run("post", "/v2/documents", "-s", "-d", `{"documents":[`+strings.Join(docs, ",")+`]}`, "-q", ".data[]", "-o", "-")
	if r.code != 0 {
		h.t.Fatalf("POST /v2/documents: exit %d\n%s", r.code, r.errOut)
	}
	var out []createdDoc
	for _, line := range strings.Split(strings.TrimSpace(r.out), "\n") {
		var d createdDoc
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			h.t.Fatalf("%v: %s", err, line)
		}
		out = append(out, d)
	}
	return out
}

func randomFile(t *testing.T, dir, name string, size int) (string, string) {
	t.Helper()
	b := make([]byte, size)
	_, _ = rand.Read(b)
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return path, hex.EncodeToString(sum[:])
}

// The documents flow end to end: create, upload through drops and 503s on the uploads origin
// (the file arrives once, whole), wait until processed. No request to the uploads origin
// carries Authorization, though the environment holds a token and client credentials.
func TestDocumentsFlowEndToEnd(t *testing.T) {
	h := newHarness(t, emulator.Config{ProcessDelay: 12 * time.Second})
	h.withUploads()
	h.env["BRELLIUM_CLIENT_ID"], h.env["BRELLIUM_CLIENT_SECRET"] = "", ""
	docs := h.createDocs("visit-1", "visit-2")
	if len(docs) != 2 || docs[0].Status != "awaiting_upload" || docs[0].UploadURL == "" {
		t.Fatalf("created %+v", docs)
	}
	dir := t.TempDir()
	file, sum := randomFile(t, dir, "visit-1.pdf", 700_000)
	path := "/upload/" + docs[0].ID
	h.em.Script(
		emulator.Fault{Method: "PUT", Path: path, Status: 503, Bare: true, Times: 2},
		emulator.Fault{Method: "PUT", Path: path, Drop: true},
		emulator.Fault{Method: "PUT", Path: path, CutAfter: 300_000},
		emulator.Fault{Method: "PUT", Path: path, Status: 429, Headers: map[string]string{"Retry-After": "2"}, Bare: true},
	)
	r := h.run("upload", docs[0].UploadURL, file, "--retry", "6")
	if r.code != 0 {
		t.Fatalf("upload: exit %d\n%s", r.code, r.errOut)
	}
	if got := strings.Count(r.errOut, "PUT "); got != 6 {
		t.Errorf("%d attempt lines, want 6 (two 503s, a drop, a cut, a 429, the upload)\n%s", got, r.errOut)
	}
	if strings.Contains(r.errOut, "sig=") && !strings.Contains(r.errOut, "sig=***") {
		t.Errorf("the URL's signature is in the log:\n%s", r.errOut)
	}
	if u := h.em.UploadOf(docs[0].ID); u.Stored != 1 || u.Size != 700_000 || u.SHA256 != sum {
		t.Errorf("the uploads origin holds %+v, want the file once, whole (sha256 %s)", u, sum)
	}
	if s := h.em.Stats(); s.UploadAuth != 0 || s.UploadRequests != 6 || s.Uploads != 1 {
		t.Errorf("uploads origin stats %+v: want 6 requests, 1 upload, none with Authorization", s)
	}

	r = h.run("get", "/v2/documents/"+docs[0].ID, "--until", `.status == "processed"`, "--poll", "5s", "--max-time", "60")
	if r.code != 0 || !strings.Contains(r.out, `"processed"`) || !strings.Contains(r.out, `"file_size":700000`) {
		t.Fatalf("--until: exit %d\n%s\n%s", r.code, r.out, r.errOut)
	}
	// Processed 12 s after the upload: polls at 0, 5, 10 and 15 s of the emulator's clock.
	if polls := strings.Count(r.errOut, "polling again in 5s"); polls != 3 || !strings.Contains(r.errOut, "holds after 4 polls") {
		t.Errorf("want 3 polls that go on, then done after 4:\n%s", r.errOut)
	}
	// With -o the body that ends the wait goes to the file.
	out := filepath.Join(dir, "doc.json")
	if r := h.run("get", "/v2/documents/"+docs[0].ID, "--until", `.status == "processed"`, "-o", out); r.code != 0 || r.out != "" {
		t.Fatalf("--until -o: exit %d, stdout %q\n%s", r.code, r.out, r.errOut)
	}
	if b, err := os.ReadFile(out); err != nil || !strings.Contains(string(b), `"processed"`) {
		t.Errorf("-o file: %q %v", b, err)
	}
	// Once the file is there, a repeat of the POST answers the same document without a URL.
	if again := h.createDocs("visit-1"); again[0].ID != docs[0].ID || again[0].UploadURL != "" {
		t.Errorf("repeat after upload: %+v", again)
	}
}

// An expired upload URL is the storage host's refusal: exit 3 (not a block), and the way to a new
// URL is said.
func TestExpiredUploadURLExitsThreeWithTheWayToANewOne(t *testing.T) {
	h := newHarness(t, emulator.Config{UploadTTL: time.Minute})
	h.withUploads()
	docs := h.createDocs("visit-1")
	file, _ := randomFile(t, t.TempDir(), "visit-1.pdf", 1000)
	h.clock.Sleep(t.Context(), 2*time.Minute)
	for _, format := range []string{"text", "json"} {
		r := h.run("upload", docs[0].UploadURL, file, "--log-format", format)
		if r.code != 3 || !strings.Contains(r.errOut, "repeating POST /v2/documents with the same external_id") ||
			!strings.Contains(r.out, "Request has expired") {
			t.Errorf("%s: exit %d, want 3 and the way to a new URL\nstdout %s\nstderr %s", format, r.code, r.out, r.errOut)
		}
	}
	if s := h.em.Stats(); s.UploadRequests != 2 || s.Uploads != 0 || s.UploadAuth != 0 {
		t.Errorf("stats %+v: an expired URL is not repeated", s)
	}
	fresh := h.createDocs("visit-1")
	if r := h.run("upload", fresh[0].UploadURL, file); r.code != 0 || h.em.UploadOf(docs[0].ID).Stored != 1 {
		t.Errorf("with a fresh URL: exit %d\n%s", r.code, r.errOut)
	}
}

// What goes on the wire to an upload host: the file's bytes with their length, the Content-Type
// of -H or of the extension, and no credential from anywhere.
func TestUploadSendsTheFileAndNoCredentials(t *testing.T) {
	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r), append(bodies, b)
		mu.Unlock()
	}))
	defer srv.Close()
	h := newHarness(t, emulator.Config{})
	h.env["BRELLIUM_CLIENT_ID"], h.env["BRELLIUM_CLIENT_SECRET"] = "cid", "csecret"
	dir := t.TempDir()
	pdf, _ := randomFile(t, dir, "a.PDF", 300_000)
	blob, _ := randomFile(t, dir, "b.unknownext", 10)
	empty, _ := randomFile(t, dir, "c.json", 0)
	url := srv.URL + "/bucket/key?X-Amz-Signature=abcdef0123456789&X-Amz-Expires=900"
	for _, args := range [][]string{
		{"upload", url, pdf},
		{"upload", url, blob, "-H", "Content-Type: image/png", "-H", "X-Amz-Meta-Visit: 42"},
		{"upload", url, empty, "-v"},
	} {
		if r := h.run(args...); r.code != 0 || strings.Contains(r.errOut, "abcdef0123456789") {
			t.Fatalf("%v: exit %d\n%s", args, r.code, r.errOut)
		}
	}
	want := []struct {
		ct   string
		size int64
	}{{"application/pdf", 300_000}, {"image/png", 10}, {"application/json", 0}}
	for i, r := range got {
		if r.Method != "PUT" || r.Header.Get("Content-Type") != want[i].ct || r.ContentLength != want[i].size ||
			int64(len(bodies[i])) != want[i].size || len(r.TransferEncoding) > 0 {
			t.Errorf("upload %d: %s CT %q length %d (%d read) TE %v; want %+v", i, r.Method, r.Header.Get("Content-Type"),
				r.ContentLength, len(bodies[i]), r.TransferEncoding, want[i])
		}
		for _, k := range []string{"Authorization", "Cookie", "Idempotency-Key"} {
			if v := r.Header.Get(k); v != "" {
				t.Errorf("upload %d carried %s: %s", i, k, v)
			}
		}
	}
	if got[1].Header.Get("X-Amz-Meta-Visit") != "42" {
		t.Errorf("-H was not sent: %v", got[1].Header)
	}
	if len(got) != 3 {
		t.Fatalf("%d requests, want 3", len(got))
	}
	for _, args := range [][]string{
		{"upload", url, pdf, "-H", "Authorization: Bearer x"},
		{"upload", url, pdf, "-H", "cookie: a=b"},
		{"upload", "http://192.0.2.1/x", pdf},
		{"upload", "ftp://127.0.0.1/x", pdf},
		{"upload", "/relative/path", pdf},
		{"upload", url, filepath.Join(dir, "missing.pdf")},
		{"upload", url, dir},
		{"upload", url},
	} {
		if r := h.run(args...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, r.code, r.errOut)
		}
	}
	if len(got) != 3 {
		t.Errorf("a refused upload sent %d requests", len(got)-3)
	}
}

// --until ends with exit 4 when --max-time comes first, says so, and prints the last body; a bad
// expression is exit 2 before anything is sent.
func TestUntilEndsWhenMaxTimeComesFirst(t *testing.T) {
	h := newHarness(t, emulator.Config{ProcessDelay: time.Hour})
	h.withUploads()
	docs := h.createDocs("visit-1")
	file, _ := randomFile(t, t.TempDir(), "visit-1.pdf", 10)
	if r := h.run("upload", docs[0].UploadURL, file); r.code != 0 {
		t.Fatalf("upload: exit %d\n%s", r.code, r.errOut)
	}
	before := h.em.Stats().Requests
	r := h.run("get", "/v2/documents/"+docs[0].ID, "--until", `.status == "processed"`, "--poll", "4", "--max-time", "10")
	if r.code != 4 || !strings.Contains(r.out, `"processing"`) || !strings.Contains(r.errOut, "--max-time") {
		t.Fatalf("exit %d, want 4 with the last body\nstdout %s\nstderr %s", r.code, r.out, r.errOut)
	}
	if n := h.em.Stats().Requests - before; n != 3 {
		t.Errorf("%d polls, want 3 (at 0, 4 and 8 s of a 10 s --max-time)\n%s", n, r.errOut)
	}
	r = h.run("get", "/v2/documents/"+docs[0].ID, "--until", `.status == "processed"`, "--poll", "4", "--max-time", "10", "--log-format", "json")
	if r.code != 4 || !strings.Contains(r.errOut, `"decision":"poll"`) || !strings.Contains(r.errOut, `"outcome":"exhausted"`) {
		t.Errorf("json: exit %d\n%s", r.code, r.errOut)
	}
	before = h.em.Stats().Requests
	for _, args := range [][]string{
		{"get", "/v2/documents/x", "--until", ".status =="},
		{"get", "/v2/documents/x", "--until", ".a", "--poll", "0"},
		{"get", "/v2/documents/x", "--poll", "5"},
		{"get", "/v2/documents/x", "--until", ".a", "--paginate"},
		{"post", "/v2/documents", "--until", ".a"},
		{"get", "/v2/documents/x", "--until", ".a", "-o", filepath.Join(t.TempDir(), "missing", "out.json")},
	} {
		if r := h.run(args...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, r.code, r.errOut)
		}
	}
	if n := h.em.Stats().Requests - before; n != 0 {
		t.Errorf("bad --until flags sent %d requests", n)
	}
	// An error answer while polling ends as that error does.
	if r := h.run("get", "/v2/documents/doc_nope", "--until", ".a"); r.code != 3 {
		t.Errorf("404 while polling: exit %d, want 3\n%s", r.code, r.errOut)
	}
}

// Batch lines upload too: files relative to the batch file's folder, the same result lines and
// journal; a rerun uploads nothing again.
func TestBatchUploadLines(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	h.withUploads()
	docs := h.createDocs("a", "b")
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "files"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, sumA := randomFile(t, filepath.Join(dir, "files"), "a.pdf", 5000)
	_, sumB := randomFile(t, filepath.Join(dir, "files"), "b.pdf", 7000)
	in := filepath.Join(dir, "uploads.jsonl")
	lines := fmt.Sprintf("{\"upload_url\":%q,\"file\":\"files/a.pdf\"}\n{\"upload_url\":%q,\"file\":\"files/b.pdf\",\"id\":\"b\"}\n"+
		"{\"upload_url\":%q,\"file\":\"files/missing.pdf\"}\n{\"upload_url\":%q}\n",
		docs[0].UploadURL, docs[1].UploadURL, docs[1].UploadURL, docs[1].UploadURL)
	if err := os.WriteFile(in, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	h.em.Script(emulator.Fault{Method: "PUT", Path: "/upload/" + docs[1].ID, Status: 503, Bare: true})
	journal := filepath.Join(dir, "run.journal")
	r := h.run("batch", in, "--journal", journal)
	if r.code != 2 || strings.Count(r.out, `"outcome":"ok"`) != 2 || strings.Count(r.out, `"outcome":"invalid"`) != 2 {
		t.Fatalf("batch: exit %d, want 2 (two invalid lines)\n%s\n%s", r.code, r.out, r.errOut)
	}
	if strings.Contains(r.out, "sig=") && !strings.Contains(r.out, "sig=***") {
		t.Errorf("a signature is in the results:\n%s", r.out)
	}
	if a, b := h.em.UploadOf(docs[0].ID), h.em.UploadOf(docs[1].ID); a.SHA256 != sumA || b.SHA256 != sumB || a.Stored != 1 || b.Stored != 1 {
		t.Errorf("stored %+v and %+v", a, b)
	}
	r = h.run("batch", in, "--journal", journal)
	if strings.Count(r.out, `"outcome":"skipped"`) != 2 || h.em.UploadOf(docs[0].ID).Stored != 1 {
		t.Errorf("rerun: %s", r.out)
	}
	if s := h.em.Stats(); s.UploadAuth != 0 {
		t.Errorf("%d uploads carried Authorization", s.UploadAuth)
	}
}
