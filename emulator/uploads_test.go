package emulator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// uploadsFixture serves the API and its uploads origin on two ports, as Start does.
func uploadsFixture(t *testing.T, cfg Config) (*fixture, *httptest.Server) {
	t.Helper()
	f := start(t, cfg)
	up := httptest.NewServer(f.em.Uploads())
	t.Cleanup(up.Close)
	f.em.SetUploadsOrigin(up.URL)
	return f, up
}

type doc struct {
	ID        string `json:"document_id"`
	Status    string `json:"status"`
	UploadURL string `json:"upload_url"`
	FileSize  *int64 `json:"file_size"`
}

func createDoc(f *fixture, externalID string) doc {
	f.t.Helper()
	resp, body := f.do("POST", "/v2/documents", `{"documents":[{"external_id":"`+externalID+`","file_name":"a.pdf"}]}`)
	f.want(resp, 201, body)
	var out struct{ Data []doc }
	if err := json.Unmarshal([]byte(body), &out); err != nil || len(out.Data) != 1 {
		f.t.Fatalf("documents answer: %s", body)
	}
	return out.Data[0]
}

func getDoc(f *fixture, id string) doc {
	f.t.Helper()
	resp, body := f.do("GET", "/v2/documents/"+id, "")
	f.want(resp, 200, body)
	var d doc
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		f.t.Fatal(err)
	}
	return d
}

func put(t *testing.T, url, body string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("PUT", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestADocumentGoesFromAwaitingUploadToProcessed(t *testing.T) {
	f, up := uploadsFixture(t, Config{ProcessDelay: 3 * time.Second})
	d := createDoc(f, "e1")
	if d.Status != "awaiting_upload" || !strings.HasPrefix(d.UploadURL, up.URL+"/upload/"+d.ID+"?") {
		t.Fatalf("new document = %+v, want awaiting_upload with a URL on %s", d, up.URL)
	}
	if g := getDoc(f, d.ID); g.Status != "awaiting_upload" || g.UploadURL != "" {
		t.Errorf("GET before the upload = %+v, want awaiting_upload and no URL", g)
	}
	file := strings.Repeat("%PDF-1.7 brellium\n", 1000)
	resp, body := put(t, d.UploadURL, file, "Content-Type", "application/pdf")
	if resp.StatusCode != 200 || resp.Header.Get("X-Request-Id") != "" {
		t.Fatalf("PUT = %d %v %s, want a bare 200", resp.StatusCode, resp.Header, body)
	}
	sum := sha256.Sum256([]byte(file))
	if u := f.em.UploadOf(d.ID); u.Size != int64(len(file)) || u.SHA256 != hex.EncodeToString(sum[:]) || u.Stored != 1 {
		t.Errorf("stored %+v, want %d bytes once", u, len(file))
	}
	if g := getDoc(f, d.ID); g.Status != "processing" || g.FileSize == nil || *g.FileSize != int64(len(file)) {
		t.Errorf("GET right after the upload = %+v, want processing with file_size", g)
	}
	f.clock.Advance(3 * time.Second)
	if g := getDoc(f, d.ID); g.Status != "processed" {
		t.Errorf("GET after --process-delay = %+v, want processed", g)
	}
	if again := createDoc(f, "e1"); again.ID != d.ID || again.UploadURL != "" || again.Status != "processed" {
		t.Errorf("a repeat of the POST after the upload = %+v, want the same document and no URL", again)
	}
	if s := f.em.Stats(); s.Uploads != 1 || s.UploadRequests != 1 || s.UploadAuth != 0 {
		t.Errorf("stats = %+v", s)
	}
	resp, body = f.do("GET", "/v2/documents/doc_nope", "")
	f.want(resp, 404, body)
}

func TestUploadURLsExpireAndCannotBeForged(t *testing.T) {
	f, _ := uploadsFixture(t, Config{UploadTTL: time.Minute})
	d := createDoc(f, "e1")
	for name, url := range map[string]string{
		"tampered signature": d.UploadURL[:len(d.UploadURL)-1] + "0",
		"another document":   strings.Replace(d.UploadURL, d.ID, "doc_999999", 1),
		"later expiry":       strings.Replace(d.UploadURL, "expires=", "expires=9", 1),
	} {
		resp, body := put(t, url, "x")
		if resp.StatusCode != 403 || !strings.Contains(body, "<Code>SignatureDoesNotMatch</Code>") || resp.Header.Get("Content-Type") != "application/xml" {
			t.Errorf("%s: %d %s, want a 403 with an XML body", name, resp.StatusCode, body)
		}
	}
	f.clock.Advance(time.Minute + time.Second)
	resp, body := put(t, d.UploadURL, "x", "Authorization", "Bearer sandbox")
	if resp.StatusCode != 403 || !strings.Contains(body, "Request has expired") {
		t.Errorf("expired URL: %d %s", resp.StatusCode, body)
	}
	fresh := createDoc(f, "e1")
	if fresh.ID != d.ID || fresh.UploadURL == d.UploadURL {
		t.Fatalf("a repeat of the POST should give the same document a new URL: %+v", fresh)
	}
	if resp, body := put(t, fresh.UploadURL, "x"); resp.StatusCode != 200 {
		t.Errorf("fresh URL: %d %s", resp.StatusCode, body)
	}
	if s := f.em.Stats(); s.Uploads != 1 || s.UploadRequests != 5 || s.UploadAuth != 1 {
		t.Errorf("stats = %+v, want 1 upload of 5 requests, 1 with Authorization", s)
	}
}

func TestUploadsOriginFaultsAndShortBodies(t *testing.T) {
	f, _ := uploadsFixture(t, Config{})
	d := createDoc(f, "e1")
	path := "/upload/" + d.ID
	f.em.Script(Fault{Method: "PUT", Path: path, Status: 503, Bare: true}, Fault{Method: "PUT", Path: path, Status: 500, Execute: true, Bare: true})
	if resp, _ := put(t, d.UploadURL, "abc"); resp.StatusCode != 503 || f.em.UploadOf(d.ID).Stored != 0 {
		t.Errorf("first PUT: %d, stored %+v; want a 503 that stored nothing", resp.StatusCode, f.em.UploadOf(d.ID))
	}
	if resp, _ := put(t, d.UploadURL, "abc"); resp.StatusCode != 500 || f.em.UploadOf(d.ID).Stored != 1 {
		t.Errorf("second PUT: %d, stored %+v; want a 500 after storing", resp.StatusCode, f.em.UploadOf(d.ID))
	}
	resp, body := put(t, d.UploadURL, "abc", "Content-Type", "text/plain")
	if resp.StatusCode != 200 {
		t.Errorf("third PUT: %d %s", resp.StatusCode, body)
	}
	if resp, body := put(t, strings.Replace(d.UploadURL, "/upload/", "/elsewhere/", 1), "abc"); resp.StatusCode != 405 {
		t.Errorf("wrong path: %d %s", resp.StatusCode, body)
	}
}
