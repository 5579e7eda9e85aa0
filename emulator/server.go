// Package emulator is a local double of the Brellium API that keeps its documented behaviour:
// one token bucket for the organization, the ratelimit headers, 429s with Retry-After, bare
// 403/413/414/431 refusals, the endpoints whose repeats matter, the token endpoint with its own
// limit, and injected faults (random or scripted) for testing retries.
package emulator

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limits of the API's edge: what is larger is refused with a bare status before processing.
const (
	MaxQueryBytes  = 2048
	MaxURLBytes    = 8192
	MaxHeaderBytes = 16 << 10
	MaxBodyBytes   = 10 << 20
)

// SampleAuditID is the audit every emulator holds, the one the documentation uses.
const SampleAuditID = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"

// Config shapes an emulator. DefaultConfig gives the API's documented limits.
type Config struct {
	// Burst and Rate are the organization's token bucket: Burst requests, then Rate a second.
	Burst int
	Rate  float64
	// TokenBurst and TokenInterval are the token endpoint's limit per client_id.
	TokenBurst    int
	TokenInterval time.Duration
	// TokenTTL is the expires_in of minted tokens.
	TokenTTL time.Duration
	// ClientSecret, when set, is the only client secret the token endpoint accepts.
	ClientSecret string
	// FailRate answers that share of requests with a 500/502/503/504 after executing them.
	FailRate float64
	// DropRate closes that share of connections without an answer after executing them.
	DropRate float64
	// Latency delays every answer.
	Latency time.Duration
	// Seed makes request ids and random faults reproducible; 0 picks one at random.
	Seed uint64
	// IPLimit answers a bare 403 to an address that sends more requests than this in one
	// second; 0 is no limit.
	IPLimit int
	// ListLag is how long a new email recipient takes to appear in the list.
	ListLag time.Duration
	// Audits is how many audits to hold besides the sample one.
	Audits int
	// ProcessDelay is how long a document stays processing after its file arrives.
	ProcessDelay time.Duration
	// UploadTTL is how long an upload URL stays valid.
	UploadTTL time.Duration
	// Neighbour is another integration of the organization that draws from its bucket in the
	// background (Start runs it); a zero Rate is none.
	Neighbour Neighbour
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// DefaultConfig is the API's documented behaviour.
func DefaultConfig() Config {
	return Config{Burst: 100, Rate: 5, TokenBurst: 20, TokenInterval: 10 * time.Second,
		TokenTTL: time.Hour, ListLag: 2 * time.Second, Audits: 100,
		ProcessDelay: 2 * time.Second, UploadTTL: 15 * time.Minute}
}

// Fault is a scripted answer: the next Times requests that match Method and Path get it
// instead of the normal one.
type Fault struct {
	// Method and Path select requests (Path without the query); empty matches any.
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`
	// Times is how many requests get the fault; 0 means 1.
	Times int `json:"times,omitempty"`
	// Status, Code and Message make the answer; a Code makes a JSON error envelope.
	Status  int               `json:"status,omitempty"`
	Code    string            `json:"code,omitempty"`
	Message string            `json:"message,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Bare sends the status with no JSON body, no x-request-id and no ratelimit headers.
	Bare bool `json:"bare,omitempty"`
	// Drop closes the connection without an answer.
	Drop bool `json:"drop,omitempty"`
	// CutAfter, on the uploads origin, reads that many bytes of the body, then closes the
	// connection: an upload cut in the middle, of which nothing is stored.
	CutAfter int64 `json:"cut_after,omitempty"`
	// Execute runs the request first, so the work is done and only the answer is lost.
	// INVITE_FAILED and REVOKE_FAILED always run as the API does: user kept, invitation not sent.
	Execute bool `json:"execute,omitempty"`
}

// Stats counts what the emulator saw. Tests use Writes to prove that no unsafe write ran twice.
type Stats struct {
	Requests    int            `json:"requests"`
	Responses   map[string]int `json:"responses"`
	RateLimited int            `json:"rate_limited"`
	Writes      map[string]int `json:"writes"`
	Created     map[string]int `json:"created"`
	Mints       int            `json:"mints"`
	Dropped     int            `json:"dropped"`
	Faults      int            `json:"faults"`
	// Uploads counts the files the uploads origin stored; UploadRequests every request it got;
	// UploadAuth the requests that carried an Authorization header (it should stay 0).
	Uploads        int `json:"uploads"`
	UploadRequests int `json:"upload_requests"`
	UploadAuth     int `json:"upload_authorization"`
	// NeighbourRequests and NeighbourRateLimited count the neighbour's draws and its refusals;
	// they are not in Requests or RateLimited, which count brellium's.
	NeighbourRequests    int `json:"neighbour_requests"`
	NeighbourRateLimited int `json:"neighbour_rate_limited"`
}

// Server is the emulator: an http.Handler.
type Server struct {
	cfg Config
	now func() time.Time

	mu          sync.Mutex
	org         *rate.Limiter
	tokenLimits map[string]*rate.Limiter
	minted      map[string]time.Time
	rnd         *rand.Rand
	faults      []*Fault
	ipWindow    map[string]ipCount
	stats       Stats
	data        *store
	// uploadsOrigin is where upload URLs point (Start sets it; SetUploadsOrigin for others).
	uploadsOrigin string
}

type ipCount struct {
	second int64
	n      int
}

// New returns an emulator with cfg; zero limits take DefaultConfig's.
func New(cfg Config) *Server {
	d := DefaultConfig()
	if cfg.Burst <= 0 {
		cfg.Burst = d.Burst
	}
	if cfg.Rate <= 0 {
		cfg.Rate = d.Rate
	}
	if cfg.TokenBurst <= 0 {
		cfg.TokenBurst = d.TokenBurst
	}
	if cfg.TokenInterval <= 0 {
		cfg.TokenInterval = d.TokenInterval
	}
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = d.TokenTTL
	}
	if cfg.ProcessDelay < 0 {
		cfg.ProcessDelay = 0
	}
	if cfg.UploadTTL <= 0 {
		cfg.UploadTTL = d.UploadTTL
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	s := &Server{
		cfg: cfg, now: now,
		org:         rate.NewLimiter(rate.Limit(cfg.Rate), cfg.Burst),
		tokenLimits: map[string]*rate.Limiter{},
		minted:      map[string]time.Time{},
		rnd:         rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		ipWindow:    map[string]ipCount{},
		stats:       Stats{Responses: map[string]int{}, Writes: map[string]int{}, Created: map[string]int{}},
	}
	s.data = newStore(cfg.Audits, now)
	return s
}

// Script queues faults; they are used in order, each for its Times matching requests.
func (s *Server) Script(faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range faults {
		f := faults[i]
		if f.Times <= 0 {
			f.Times = 1
		}
		f.Method = strings.ToUpper(f.Method)
		s.faults = append(s.faults, &f)
	}
}

// Stats returns a copy of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.stats
	c.Responses, c.Writes, c.Created = clone(c.Responses), clone(c.Writes), clone(c.Created)
	return c
}

func clone(m map[string]int) map[string]int {
	c := make(map[string]int, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// takeFault returns the first scripted fault that matches, using up one of its times.
func (s *Server) takeFault(method, path string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if (f.Method == "" || f.Method == method) && (f.Path == "" || f.Path == path) {
			f.Times--
			if f.Times <= 0 {
				s.faults = append(s.faults[:i], s.faults[i+1:]...)
			}
			s.stats.Faults++
			c := *f
			return &c
		}
	}
	return nil
}

func (s *Server) float() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rnd.Float64()
}

// requestID returns a random UUID v4 from the emulator's seeded source.
func (s *Server) requestID() string {
	s.mu.Lock()
	a, b := s.rnd.Uint64(), s.rnd.Uint64()
	s.mu.Unlock()
	return formatUUID(a&^0xf000|0x4000, b&^(0xc<<60)|0x8<<60)
}

// formatUUID writes a and b as fmt's "%08x-%04x-%04x-%04x-%012x" of the five fields would, at a
// tenth of the cost: the emulator answers tens of thousands of requests a second in benchmarks.
func formatUUID(a, b uint64) string {
	var raw [16]byte
	binary.BigEndian.PutUint64(raw[:8], a)
	binary.BigEndian.PutUint64(raw[8:], b)
	var out [36]byte
	hex.Encode(out[0:8], raw[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], raw[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], raw[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], raw[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], raw[10:16])
	return string(out[:])
}

// envelope is the API's error object, in the documented field order.
type envelope struct {
	Type      string `json:"type"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"request_id"`
}

// reply is an answer being built: status, headers and body.
type reply struct {
	status int
	header http.Header
	body   []byte
	// bare answers carry no request id.
	bare bool
	// drop closes the connection instead of answering.
	drop bool
	// errType, code and message make the JSON error envelope, written with the request id.
	errType, code, message string
}

func newReply(status int, v any) *reply {
	r := &reply{status: status, header: http.Header{}}
	if v != nil {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // upload URLs keep their & as the API writes them
		_ = enc.Encode(v)
		r.body = b.Bytes()
		r.header.Set("Content-Type", "application/json")
	}
	return r
}

func bare(status int) *reply {
	return &reply{status: status, header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}},
		body: []byte(http.StatusText(status) + "\n"), bare: true}
}

var errorTypes = map[int]string{
	400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
	404: "not_found_error", 409: "conflict_error", 413: "invalid_request_error",
	422: "invalid_request_error", 429: "rate_limit_error",
}

func apiError(status int, code, message string) *reply {
	typ, ok := errorTypes[status]
	if !ok {
		typ = "api_error"
	}
	r := newReply(status, nil)
	r.header.Set("Content-Type", "application/json")
	r.errType, r.code, r.message = typ, code, message
	return r
}

// ServeHTTP answers one request as the API would.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Latency > 0 {
		t := time.NewTimer(s.cfg.Latency)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	if strings.HasPrefix(r.URL.Path, "/_emulator/") {
		s.control(w, r)
		return
	}
	s.mu.Lock()
	s.stats.Requests++
	s.mu.Unlock()
	rep := s.handle(r)
	s.write(w, rep)
}

func (s *Server) write(w http.ResponseWriter, rep *reply) {
	s.mu.Lock()
	if rep.drop {
		s.stats.Dropped++
	} else {
		s.stats.Responses[strconv.Itoa(rep.status)]++
		if rep.status == http.StatusTooManyRequests {
			s.stats.RateLimited++
		}
	}
	s.mu.Unlock()
	if rep.drop {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					_ = tc.SetLinger(0)
				}
				_ = conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	if !rep.bare {
		id := s.requestID()
		rep.header.Set("X-Request-Id", id)
		if rep.code != "" {
			b, _ := json.Marshal(struct {
				Error envelope `json:"error"`
			}{envelope{rep.errType, rep.code, rep.message, id}})
			rep.body = append(b, '\n')
		}
	}
	for k, v := range rep.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(rep.body)))
	w.WriteHeader(rep.status)
	_, _ = w.Write(rep.body)
}

// handle runs the API's checks in the API's order: the edge, the token endpoint, the access
// token, the organization's bucket, the content type, then the endpoint and the faults.
func (s *Server) handle(r *http.Request) *reply {
	if rep := s.edge(r); rep != nil {
		return rep
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		return bare(http.StatusBadRequest)
	}
	if len(body) > MaxBodyBytes {
		return bare(http.StatusRequestEntityTooLarge)
	}
	if r.Method == http.MethodPost && r.URL.Path == "/v2/oauth/token" {
		return s.mint(r, body)
	}
	if rep := s.authenticate(r); rep != nil {
		return rep
	}
	limit := s.spend()
	if limit.status == http.StatusTooManyRequests {
		return limit.reply
	}
	rep := s.route(r, body)
	if !rep.bare {
		for k, v := range limit.header {
			if _, set := rep.header[k]; !set {
				rep.header[k] = v
			}
		}
	}
	return rep
}

func (s *Server) edge(r *http.Request) *reply {
	if s.cfg.IPLimit > 0 {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		sec := s.now().Unix()
		s.mu.Lock()
		c := s.ipWindow[host]
		if c.second != sec {
			c = ipCount{second: sec}
		}
		c.n++
		s.ipWindow[host] = c
		s.mu.Unlock()
		if c.n > s.cfg.IPLimit {
			return bare(http.StatusForbidden)
		}
	}
	if len(r.RequestURI) > MaxURLBytes {
		return bare(http.StatusRequestURITooLong)
	}
	if len(r.URL.RawQuery) > MaxQueryBytes {
		return bare(http.StatusForbidden)
	}
	size := 0
	for k, vs := range r.Header {
		for _, v := range vs {
			size += len(k) + len(v) + 4
		}
	}
	if size > MaxHeaderBytes {
		return bare(http.StatusRequestHeaderFieldsTooLarge)
	}
	if r.ContentLength > MaxBodyBytes {
		return bare(http.StatusRequestEntityTooLarge)
	}
	return nil
}

func (s *Server) authenticate(r *http.Request) *reply {
	auth := r.Header.Get("Authorization")
	token, ok := strings.CutPrefix(auth, "Bearer ")
	token = strings.TrimSpace(token)
	if !ok || token == "" {
		return apiError(http.StatusUnauthorized, "UNAUTHORIZED", "Missing or malformed access token")
	}
	s.mu.Lock()
	exp, minted := s.minted[token]
	s.mu.Unlock()
	if minted && !s.now().Before(exp) {
		return apiError(http.StatusUnauthorized, "TOKEN_EXPIRED", "The access token has expired")
	}
	return nil
}

// limited is the bucket's answer: the ratelimit headers, and a 429 when the bucket is empty.
type limited struct {
	status int
	header http.Header
	reply  *reply
}

// spend takes one token from the organization's bucket.
func (s *Server) spend() limited {
	return s.take(s.org, float64(s.cfg.Burst), "Too many requests")
}

func (s *Server) take(lim *rate.Limiter, burst float64, message string) limited {
	now := s.now()
	s.mu.Lock()
	ok := lim.AllowN(now, 1)
	tokens := lim.TokensAt(now)
	perSecond := float64(lim.Limit())
	s.mu.Unlock()
	h := http.Header{}
	h.Set("RateLimit-Limit", strconv.Itoa(int(burst)))
	if ok {
		h.Set("RateLimit-Remaining", strconv.Itoa(int(math.Floor(max(tokens, 0)))))
		h.Set("RateLimit-Reset", "0")
		return limited{status: http.StatusOK, header: h}
	}
	reset := int(math.Ceil((1 - tokens) / perSecond))
	reset = max(reset, 1)
	h.Set("RateLimit-Remaining", "0")
	h.Set("RateLimit-Reset", strconv.Itoa(reset))
	h.Set("Retry-After", strconv.Itoa(reset))
	rep := apiError(http.StatusTooManyRequests, "RATE_LIMITED", message)
	for k, v := range h {
		rep.header[k] = v
	}
	return limited{status: http.StatusTooManyRequests, header: h, reply: rep}
}

// control serves the emulator's own endpoints: stats and scripted faults.
func (s *Server) control(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/_emulator/stats" && r.Method == http.MethodGet:
		_ = json.NewEncoder(w).Encode(s.Stats())
	case r.URL.Path == "/_emulator/faults" && r.Method == http.MethodPost:
		var faults []Fault
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err := json.Unmarshal(b, &faults); err != nil {
			var f Fault
			if err2 := json.Unmarshal(b, &f); err2 != nil {
				w.WriteHeader(http.StatusBadRequest)
				_ = json.NewEncoder(w).Encode(map[string]string{"error": "want a fault object or an array of them: " + err2.Error()})
				return
			}
			faults = []Fault{f}
		}
		s.Script(faults...)
		w.WriteHeader(http.StatusNoContent)
	case r.URL.Path == "/_emulator/blob" && r.Method == http.MethodGet:
		s.blob(w, r)
	case r.URL.Path == "/_emulator/faults" && r.Method == http.MethodDelete:
		s.mu.Lock()
		s.faults = nil
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "unknown emulator endpoint: GET /_emulator/stats, GET /_emulator/blob?bytes=N, POST or DELETE /_emulator/faults"})
	}
}

// Running is an emulator served on a listener, with its uploads origin on a second one.
type Running struct {
	*Server
	URL           string
	UploadsURL    string
	srv, up       *http.Server
	stopNeighbour context.CancelFunc
}

// Start serves an emulator on addr (e.g. 127.0.0.1:0) until Close, and its uploads origin on
// another port of the same host.
func Start(addr string, cfg Config) (*Running, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(ln.Addr().String())
	upLn, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("uploads origin: %w", err)
	}
	s := New(cfg)
	r := &Running{Server: s, URL: "http://" + ln.Addr().String(), UploadsURL: "http://" + upLn.Addr().String(),
		srv: &http.Server{Handler: s, MaxHeaderBytes: 4 * MaxHeaderBytes, ReadHeaderTimeout: 10 * time.Second},
		up:  &http.Server{Handler: s.Uploads(), MaxHeaderBytes: 4 * MaxHeaderBytes, ReadHeaderTimeout: 10 * time.Second}}
	s.SetUploadsOrigin(r.UploadsURL)
	go func() { _ = r.srv.Serve(ln) }()
	go func() { _ = r.up.Serve(upLn) }()
	if cfg.Neighbour.Rate > 0 {
		var nctx context.Context
		nctx, r.stopNeighbour = context.WithCancel(context.Background())
		go s.RunNeighbour(nctx)
	}
	return r, nil
}

// Close stops the neighbour and both servers gracefully, waiting at most for ctx.
func (r *Running) Close(ctx context.Context) error {
	if r.stopNeighbour != nil {
		r.stopNeighbour()
	}
	return errors.Join(shutdown(ctx, r.srv), shutdown(ctx, r.up))
}

func shutdown(ctx context.Context, srv *http.Server) error {
	err := srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return srv.Close()
	}
	return err
}

// dropConn closes the connection without an answer.
func dropConn() *reply { return &reply{drop: true, bare: true} }

// blob streams a JSON document of about ?bytes=N bytes, {"data":"aaaa…"}, for tests and
// benchmarks of large bodies. It needs no token and spends nothing.
func (s *Server) blob(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.ParseInt(r.URL.Query().Get("bytes"), 10, 64)
	if err != nil || n < 12 || n > 1<<40 {
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "want ?bytes=N, 12 ≤ N"})
		return
	}
	var out io.Writer = w
	if r.URL.Query().Get("gzip") == "1" {
		// A hostile answer: gzip whatever the client asked for, N bytes once inflated.
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "application/json")
		zw, _ := gzip.NewWriterLevel(w, gzip.BestCompression)
		defer zw.Close()
		out = zw
	} else {
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	}
	w.WriteHeader(http.StatusOK)
	chunk := make([]byte, 64<<10)
	for i := range chunk {
		chunk[i] = 'a'
	}
	_, _ = io.WriteString(out, `{"data":"`)
	left := n - 11
	for left > 0 {
		k := min(left, int64(len(chunk)))
		if _, err := out.Write(chunk[:k]); err != nil {
			return
		}
		left -= k
	}
	_, _ = io.WriteString(out, `"}`)
}
