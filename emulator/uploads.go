package emulator

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The uploads origin: what the emulator invents beyond the API reference so that the documents
// flow can run end to end. POST /v2/documents answers each document that has no file yet with an
// upload_url on a second loopback origin, {uploads}/upload/{document_id}?expires=UNIX&n=N&sig=HEX,
// signed and valid for UploadTTL. A PUT there with a valid, unexpired URL stores the file (its
// size and SHA-256) and the document goes from awaiting_upload to processing, then to processed
// ProcessDelay later; GET /v2/documents/{id} shows it. An expired or tampered URL gets a 403 with
// an XML body, as storage hosts answer. The uploads origin takes no credentials: it counts the
// requests that carried an Authorization header (Stats.UploadAuth). Scripted faults match its
// paths too (method PUT, path /upload/{id}).

// MaxUploadBytes is the largest file the uploads origin stores.
const MaxUploadBytes = 5 << 30

// uploadSecret signs upload URLs; any value works, as the emulator checks its own.
var uploadSecret = []byte("brellium-emulator-uploads")

// SetUploadsOrigin points upload URLs at origin (scheme://host:port) where Uploads is served.
// Start does it; a test that serves the handlers itself calls it before the first request.
func (s *Server) SetUploadsOrigin(origin string) { s.uploadsOrigin = strings.TrimRight(origin, "/") }

// uploadURL is a document's signed upload URL, valid until expires.
func (s *Server) uploadURL(id string, expires time.Time, n int) string {
	origin := s.uploadsOrigin
	if origin == "" {
		origin = "https://uploads.brellium.invalid"
	}
	e, k := strconv.FormatInt(expires.Unix(), 10), strconv.Itoa(n)
	return origin + "/upload/" + id + "?expires=" + e + "&n=" + k + "&sig=" + sign(id, e, k)
}

// sign is the signature of the n-th upload URL of document id: each URL differs.
func sign(id, expires, n string) string {
	m := hmac.New(sha256.New, uploadSecret)
	_, _ = io.WriteString(m, id+"|"+expires+"|"+n)
	return hex.EncodeToString(m.Sum(nil))[:32]
}

// storageError is a storage host's refusal: XML, not the API's envelope.
func storageError(status int, code, message string) *reply {
	body := fmt.Sprintf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s</Message></Error>\n", code, message)
	return &reply{status: status, header: http.Header{"Content-Type": {"application/xml"}}, body: []byte(body), bare: true}
}

// Uploads is the handler of the uploads origin.
func (s *Server) Uploads() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.stats.UploadRequests++
		if r.Header.Get("Authorization") != "" {
			s.stats.UploadAuth++
		}
		s.mu.Unlock()
		s.write(w, s.upload(r))
	})
}

func (s *Server) upload(r *http.Request) *reply {
	id, ok := strings.CutPrefix(r.URL.Path, "/upload/")
	if !ok || r.Method != http.MethodPut {
		return storageError(http.StatusMethodNotAllowed, "MethodNotAllowed", "PUT /upload/{document_id} only")
	}
	f := s.takeFault(r.Method, r.URL.Path)
	switch {
	case f != nil && f.CutAfter > 0:
		_, _ = io.CopyN(io.Discard, r.Body, f.CutAfter)
		return dropConn()
	case f != nil && !f.Execute:
		_, _ = io.Copy(io.Discard, r.Body)
		return faultReply(f)
	}
	q := r.URL.Query()
	exp, err := strconv.ParseInt(q.Get("expires"), 10, 64)
	var refused *reply
	switch {
	case err != nil || !hmac.Equal([]byte(q.Get("sig")), []byte(sign(id, q.Get("expires"), q.Get("n")))):
		refused = storageError(http.StatusForbidden, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided")
	case s.now().Unix() > exp:
		refused = storageError(http.StatusForbidden, "AccessDenied", "Request has expired")
	}
	if refused != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, MaxUploadBytes))
		return refused
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(r.Body, MaxUploadBytes+1))
	switch {
	case err != nil:
		return dropConn() // the body was cut: nothing stored
	case n > MaxUploadBytes:
		return storageError(http.StatusRequestEntityTooLarge, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed size")
	case r.ContentLength >= 0 && n != r.ContentLength:
		return storageError(http.StatusBadRequest, "IncompleteBody", "You did not provide the number of bytes specified by the Content-Length HTTP header")
	}
	st := s.data
	st.mu.Lock()
	doc := st.docsByID[id]
	if doc != nil {
		doc.size, doc.sha256, doc.uploadedAt = n, hex.EncodeToString(h.Sum(nil)), s.now()
		doc.stored++
	}
	st.mu.Unlock()
	if doc == nil {
		return storageError(http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
	}
	s.mu.Lock()
	s.stats.Uploads++
	s.mu.Unlock()
	if f != nil { // a fault that runs the upload first: the file is stored, the answer lost
		return faultReply(f)
	}
	return &reply{status: http.StatusOK, header: http.Header{"Etag": {`"` + hex.EncodeToString(h.Sum(nil))[:32] + `"`}}, bare: true}
}

// Upload is what the uploads origin holds of a document's file.
type Upload struct {
	Size   int64
	SHA256 string
	// Stored counts the PUTs that stored it (a repeat stores the same bytes again).
	Stored int
}

// UploadOf returns what the uploads origin received for a document.
func (s *Server) UploadOf(documentID string) Upload {
	st := s.data
	st.mu.Lock()
	defer st.mu.Unlock()
	d, ok := st.docsByID[documentID]
	if !ok {
		return Upload{}
	}
	return Upload{Size: d.size, SHA256: d.sha256, Stored: d.stored}
}
