package request

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// File is a body read from disk for each attempt, so that a file of any size goes out without
// being held in memory. It stays the file it was when the call started: an attempt that finds
// it changed fails with a *UsageError rather than send other bytes.
type File struct {
	Path string
	Size int64
	mod  time.Time
	// Watch, when set, wraps the reader of each attempt: a progress bar counts the bytes sent.
	Watch func(io.Reader) io.Reader
}

// OpenFile checks that path is a regular file that can be read and records its size. Every
// error is a *UsageError.
func OpenFile(path string) (*File, error) {
	if path == "" {
		return nil, Usagef("missing FILE: give the file to upload")
	}
	fh, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, Usagef("%s: no such file", path)
		}
		return nil, Usagef("%s: %v", path, unwrapPath(err))
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return nil, Usagef("%s: %v", path, unwrapPath(err))
	}
	if !info.Mode().IsRegular() {
		return nil, Usagef("%s is not a regular file: upload a file", path)
	}
	return &File{Path: path, Size: info.Size(), mod: info.ModTime()}, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Open returns a reader over the whole file for one attempt. It fails when the file is gone or
// changed (size or modification time) since OpenFile.
func (f *File) Open() (io.ReadCloser, error) {
	fh, err := os.Open(f.Path)
	if err != nil {
		return nil, Usagef("%s can no longer be read (%v): nothing more was sent", f.Path, unwrapPath(err))
	}
	info, err := fh.Stat()
	if err == nil && (info.Size() != f.Size || !info.ModTime().Equal(f.mod)) {
		err = fmt.Errorf("it was %d bytes and is now %d", f.Size, info.Size())
		if info.Size() == f.Size {
			err = errors.New("it was modified")
		}
		err = Usagef("%s changed while it was being uploaded (%v): nothing more was sent; upload it again once it is whole", f.Path, err)
	}
	if err != nil {
		_ = fh.Close()
		return nil, err
	}
	var r io.Reader = io.LimitReader(fh, f.Size)
	if f.Watch != nil {
		r = f.Watch(r)
	}
	return struct {
		io.Reader
		io.Closer
	}{r, fh}, nil
}

// OpenBody returns a fresh reader over the body of one attempt and its length: the bytes of Body,
// or File opened anew; nil and 0 for a call without a body.
func (s *Spec) OpenBody() (io.ReadCloser, int64, error) {
	switch {
	case s.File != nil && s.File.Size == 0:
		return http.NoBody, 0, nil
	case s.File != nil:
		rc, err := s.File.Open()
		return rc, s.File.Size, err
	case s.Body != nil:
		return io.NopCloser(s.NewBody()), int64(len(s.Body)), nil
	}
	return nil, 0, nil
}

// credentialHeaders are the headers an upload never carries: a pre-signed URL is its own
// credential, and the storage host is not the API.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "X-Api-Key", "Api-Key"}

// CredentialHeader reports whether a header (canonical name) carries a credential.
func CredentialHeader(name string) bool {
	for _, c := range credentialHeaders {
		if name == c {
			return true
		}
	}
	return false
}

// NewUpload returns the call that PUTs file to a pre-signed upload URL: any https origin, or
// http on a loopback address. It carries no credentials; its Content-Type is the user's -H, else
// the one of the file's extension, else application/octet-stream. Every error is a *UsageError.
func NewUpload(rawURL string, file *File, headers []string) (*Spec, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil || !u.IsAbs() || u.Host == "" {
		return nil, Usagef("invalid UPLOAD_URL %q: want the https://… upload_url that POST /v2/documents answered", RedactQuery(rawURL))
	}
	u.Scheme = strings.ToLower(u.Scheme)
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, Usagef("invalid UPLOAD_URL: scheme %q, want https", u.Scheme)
	case u.Scheme == "http" && !IsLoopback(u):
		return nil, Usagef("refusing to upload over plain http to %s: use the https upload URL (http is allowed only on a loopback address)", u.Host)
	case u.User != nil:
		return nil, Usagef("invalid UPLOAD_URL: no user info allowed")
	}
	u.Fragment = ""
	u.RawQuery = EncodeQuery(u.RawQuery)
	if n := len(http.MethodPut) + len(u.RequestURI()) + len("  HTTP/1.1"); n > MaxRequestLine {
		return nil, Usagef("the request line would be %d bytes, over %d: servers refuse it", n, MaxRequestLine)
	}
	h := http.Header{}
	for _, raw := range headers {
		name, value, err := ParseHeader(raw)
		if err != nil {
			return nil, err
		}
		if CredentialHeader(name) {
			return nil, Usagef("-H %s: an upload carries no credentials (the upload URL is signed; the storage host is not the API)", name)
		}
		h.Add(name, value)
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", ContentTypeOf(file.Path))
	}
	s := &Spec{Method: http.MethodPut, URL: u, Header: h, File: file, Upload: true}
	s.Class()
	return s, nil
}

// ContentTypeOf is the media type of a file from its extension, application/octet-stream when
// the extension says nothing.
func ContentTypeOf(path string) string {
	if t := mime.TypeByExtension(strings.ToLower(filepath.Ext(path))); t != "" {
		return t
	}
	return "application/octet-stream"
}

// signatureParams are query parameters that make a pre-signed URL a credential: they are not
// shown in logs.
var signatureParams = []string{"sig", "signature", "credential", "token", "key", "policy"}

// RedactQuery shows a URL or query with the values of its signature parameters (sig,
// X-Amz-Signature, X-Goog-Credential, …) as ***.
func RedactQuery(raw string) string {
	head, query, has := strings.Cut(raw, "?")
	if !has {
		return raw
	}
	parts := strings.Split(query, "&")
	for i, p := range parts {
		k, _, eq := strings.Cut(p, "=")
		if eq && isSignatureParam(k) {
			parts[i] = k + "=***"
		}
	}
	return head + "?" + strings.Join(parts, "&")
}

func isSignatureParam(k string) bool {
	if u, err := url.QueryUnescape(k); err == nil {
		k = u
	}
	k = strings.ToLower(k)
	for _, s := range signatureParams {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// SignatureValues returns the values of the signature parameters of a URL, to scrub from output.
func SignatureValues(u *url.URL) []string {
	var out []string
	for k, vs := range u.Query() {
		if isSignatureParam(k) {
			for _, v := range vs {
				if len(v) >= 8 {
					out = append(out, v)
				}
			}
		}
	}
	return out
}
