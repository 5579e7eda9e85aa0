// Package request describes what to send: the request spec (method, URL, headers, body), its
// validation, origins, the parsing of command-line arguments and of batch lines, and the
// Brellium endpoint table that says which calls are safe to repeat. It never prints, reads flags
// or environment variables, or exits.
package request

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// MaxQueryBytes is the longest query string the API accepts; a longer one is answered with a
// bare 403 block, so it is refused before sending.
const MaxQueryBytes = 2048

// MaxRequestLine is the longest request line (method, path and query, protocol) brellium sends:
// servers refuse longer ones (the API with a bare 414).
const MaxRequestLine = 8 << 10

// UsageError is bad input from the user: nothing was sent. It maps to exit code 2.
type UsageError struct {
	Msg string
	// NotArgs says that the fault is not in the arguments (a port already in use), so the
	// pointer to --help would not help.
	NotArgs bool
}

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a *UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// Spec is one call to make, replayable any number of times: the body is kept as bytes (or read
// from File) and a fresh reader is built for each attempt. The zero value is not usable; build
// one with New or NewUpload.
type Spec struct {
	Method string
	URL    *url.URL
	Header http.Header
	// Body is nil for a call without a body.
	Body []byte
	// File, when set instead of Body, is read anew from disk for each attempt.
	File *File
	// Upload says that the call is a PUT to a pre-signed upload URL on a storage host: no
	// credentials go with it, and the API's budget and rules do not apply to it.
	Upload bool
	// Idempotent is the user's word that the call is safe to repeat (--idempotent).
	Idempotent bool
	// IdempotencyKey, when set, is sent as Idempotency-Key on every attempt.
	IdempotencyKey string

	class *Class
}

// Class returns what the endpoint table and the flags say of the call; New decides it once, a
// spec built by hand on first use.
func (s *Spec) Class() Class {
	if s.class == nil {
		c := Classify(s)
		s.class = &c
	}
	return *s.class
}

// Path returns the path and query of the call, as shown in logs; an upload shows its origin
// too, and no signature.
func (s *Spec) Path() string {
	if s.Upload {
		return RedactQuery(s.URL.Scheme + "://" + s.URL.Host + s.URL.RequestURI())
	}
	return s.URL.RequestURI()
}

// NewBody returns a fresh reader over the body, or nil when there is none.
func (s *Spec) NewBody() io.Reader {
	if s.Body == nil {
		return nil
	}
	return bytes.NewReader(s.Body)
}

// Options are the parts of a call as the user gave them.
type Options struct {
	Method         string
	Target         string // a path, a path relative to the base URL, or an absolute URL
	Headers        []string
	Body           []byte
	Idempotent     bool
	IdempotencyKey string
}

// New validates the options against the base URL and returns the spec to send. Every error is
// a *UsageError.
func New(base *url.URL, o Options) (*Spec, error) {
	method := strings.ToUpper(strings.TrimSpace(o.Method))
	if method == "" {
		method = http.MethodGet
	}
	if !validToken(method) {
		return nil, Usagef("invalid HTTP method %q", o.Method)
	}
	u, err := Resolve(base, o.Target)
	if err != nil {
		return nil, err
	}
	u.RawQuery = EncodeQuery(u.RawQuery)
	if n := len(u.RawQuery); n > MaxQueryBytes {
		return nil, Usagef("query string is %d bytes, over the API's limit of %d: the API would block it with a bare 403; send fewer parameters", n, MaxQueryBytes)
	}
	if n := len(method) + len(u.RequestURI()) + len("  HTTP/1.1"); n > MaxRequestLine {
		return nil, Usagef("the request line would be %d bytes, over %d: servers refuse it (the API with a bare 414); shorten the path or query", n, MaxRequestLine)
	}
	h := http.Header{}
	for _, raw := range o.Headers {
		name, value, err := ParseHeader(raw)
		if err != nil {
			return nil, err
		}
		h.Add(name, value)
	}
	if o.Body != nil && JSONContentType(h.Get("Content-Type")) {
		if err := ValidateJSON(o.Body); err != nil {
			return nil, err
		}
	}
	s := &Spec{
		Method:         method,
		URL:            u,
		Header:         h,
		Body:           o.Body,
		Idempotent:     o.Idempotent || o.IdempotencyKey != "",
		IdempotencyKey: o.IdempotencyKey,
	}
	if s.IdempotencyKey != "" {
		s.Header.Set("Idempotency-Key", s.IdempotencyKey)
	}
	s.Class()
	return s, nil
}

// ParseBaseURL parses and checks an API origin such as https://api.brellium.com.
func ParseBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, Usagef("invalid base URL %q: want http(s)://HOST[:PORT][/PREFIX]", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, Usagef("invalid base URL %q: no query, fragment or user info allowed", raw)
	}
	return u, nil
}

// Resolve turns the user's target into an absolute URL on the base URL's origin. A target is an
// absolute path (query included), a path relative to the base URL, or an absolute URL with the
// base URL's origin; any other origin is refused so the token never leaves it.
func Resolve(base *url.URL, target string) (*url.URL, error) {
	if strings.TrimSpace(target) == "" {
		return nil, Usagef("missing PATH: give an API path such as /v2/audits/ID")
	}
	ref, err := url.Parse(target)
	if err != nil {
		return nil, Usagef("invalid PATH %q: %v", target, err)
	}
	if ref.IsAbs() || ref.Host != "" {
		if ref.Scheme == "" {
			ref.Scheme = base.Scheme
		}
		if !SameOrigin(ref, base) {
			return nil, Usagef("refusing %s: its origin is not the base URL's (%s); the token is only sent to %s (set --base-url to change it)", target, Origin(base), Origin(base))
		}
		ref.Fragment = ""
		return ref, nil
	}
	joined := strings.TrimSuffix(base.EscapedPath(), "/") + "/" + strings.TrimPrefix(ref.EscapedPath(), "/")
	if ref.RawQuery != "" || ref.ForceQuery {
		joined += "?" + ref.RawQuery
	}
	u, err := url.Parse(base.Scheme + "://" + base.Host + joined)
	if err != nil {
		return nil, Usagef("invalid PATH %q: %v", target, err)
	}
	return u, nil
}

// Origin returns scheme://host:port with the default port made explicit.
func Origin(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(hostPort(u))
}

// SameOrigin reports whether a and b share scheme, host and port.
func SameOrigin(a, b *url.URL) bool { return Origin(a) == Origin(b) }

func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// IsLoopback reports whether the URL's host is a loopback address or localhost.
func IsLoopback(u *url.URL) bool {
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckCredentialsTransport refuses to send credentials over plain http to a host that is
// not a loopback address.
func CheckCredentialsTransport(base *url.URL) error {
	if strings.EqualFold(base.Scheme, "http") && !IsLoopback(base) {
		return Usagef("refusing to send credentials over plain http to %s: use https, or a loopback address for a local server", base.Host)
	}
	return nil
}

// ParseHeader splits a 'Name: value' header argument.
func ParseHeader(raw string) (name, value string, err error) {
	name, value, ok := strings.Cut(raw, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return "", "", Usagef("invalid header %q: want 'Name: value'", raw)
	}
	if !validToken(name) {
		return "", "", Usagef("invalid header name %q: letters, digits and !#$%%&'*+-.^_`|~ only", name)
	}
	value = strings.TrimSpace(value)
	if !ValidHeaderValue(value) {
		return "", "", Usagef("invalid header %q: its value holds a line break or another control character", name)
	}
	return http.CanonicalHeaderKey(name), value, nil
}

func validToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || r <= 0x20 || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", r) {
			return false
		}
	}
	return true
}

// ValidateJSON checks that a body is one valid JSON value.
func ValidateJSON(b []byte) error {
	if json.Valid(b) {
		return nil
	}
	var v any
	err := json.Unmarshal(b, &v)
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return Usagef("invalid JSON body at byte %d: %v (bodies are always sent as application/json)", syn.Offset, syn)
	}
	if err == nil {
		err = errors.New("not a single JSON value")
	}
	return Usagef("invalid JSON body: %v (bodies are always sent as application/json)", err)
}

// LoadData reads a -d argument: a literal JSON text, @FILE, or @- for standard input.
func LoadData(arg string, stdin io.Reader) ([]byte, error) {
	if !strings.HasPrefix(arg, "@") {
		return []byte(arg), nil
	}
	name := arg[1:]
	if name == "-" {
		if stdin == nil {
			return nil, Usagef("-d @-: no standard input")
		}
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, Usagef("-d @-: reading standard input: %v", err)
		}
		return b, nil
	}
	if name == "" {
		return nil, Usagef("-d @: missing file name (use @FILE or @- for standard input)")
	}
	b, err := os.ReadFile(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, Usagef("-d @%s: no such file", name)
		}
		return nil, Usagef("-d @%s: %v", name, err)
	}
	return b, nil
}

// ParseDuration reads a time flag: a bare number is seconds ("60", "1.5"); otherwise Go's
// duration syntax ("1m30s", "500ms"). Negative values are refused.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty duration")
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) || f > math.MaxInt64/float64(time.Second) {
			return 0, fmt.Errorf("invalid duration %q: want a non-negative number of seconds or a duration like 1m30s", s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("invalid duration %q: want a number of seconds (60) or a duration like 1m30s or 500ms", s)
	}
	return d, nil
}

// ParseSize reads a size flag: bytes ("1048576"), or a number with a unit: KB, MB, GB (powers
// of 1000) or K, KiB, M, MiB, G, GiB (powers of 1024), case aside.
func ParseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	num := strings.TrimRight(t, "abcdefghijklmnopqrstuvwxyz ")
	unit := strings.TrimSpace(t[len(num):])
	mult, ok := map[string]float64{"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "kb": 1e3, "m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
		"g": 1 << 30, "gib": 1 << 30, "gb": 1e9}[unit]
	f, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || f < 0 || math.IsNaN(f) || f*mult > 1<<50 {
		return 0, fmt.Errorf("invalid size %q: want bytes, or a number with KiB, MiB or GiB (e.g. 8MiB)", s)
	}
	return int64(f * mult), nil
}

// URLPassword returns the password in a URL such as redis://:PASSWORD@host:6379/0, or "".
func URLPassword(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.User == nil {
		return ""
	}
	p, _ := u.User.Password()
	return p
}

// RedactURL shows a URL with its password as ***; text that is not a URL is shown as it is.
func RedactURL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.User == nil {
		return raw
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "***")
		return strings.Replace(u.String(), "%2A%2A%2A", "***", 1)
	}
	return u.String()
}

// EncodeQuery percent-encodes what a query string may not hold as it is (spaces, quotes, bytes
// outside ASCII, a % that starts no escape), and keeps the rest, escapes included.
func EncodeQuery(q string) string {
	const hex = "0123456789ABCDEF"
	ok := func(c byte) bool {
		return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("-._~!$&'()*+,;=:@/?", c) >= 0
	}
	isHex := func(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
	escape := func(i int) bool { return q[i] == '%' && i+2 < len(q) && isHex(q[i+1]) && isHex(q[i+2]) }
	clean := true
	for i := 0; i < len(q) && clean; i++ {
		clean = ok(q[i]) || escape(i)
	}
	if clean {
		return q
	}
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		if c := q[i]; ok(c) || escape(i) {
			b.WriteByte(c)
		} else {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// ValidHeaderValue reports whether v may be sent as a header value: no control character but
// tab (so no line break, NUL or DEL).
func ValidHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// JSONContentType reports whether a body with this Content-Type is JSON: no Content-Type (then
// brellium sends application/json), application/json, or a +json type.
func JSONContentType(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	return mt == "" || mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}
