package request

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Match names an error response by status and, optionally, by the envelope's error code.
type Match struct {
	Status int
	// Codes are the error codes that match; empty matches any code.
	Codes []string
}

// Matches reports whether status and code fall under m.
func (m Match) Matches(status int, code string) bool {
	if status != m.Status {
		return false
	}
	if len(m.Codes) == 0 {
		return true
	}
	for _, c := range m.Codes {
		if strings.EqualFold(c, code) {
			return true
		}
	}
	return false
}

// Repeat is an error response that an endpoint rule repeats even for an unsafe call.
type Repeat struct {
	Match
	// Ran says whether the call took effect in part (INVITE_FAILED keeps the user it created);
	// it lets a later "already done" answer count as done.
	Ran bool
}

// Fetch says how to show a resource that an "already done" answer refers to: a GET of a list
// that is searched for the element the call created. Lists can lag, so it is polled.
type Fetch struct {
	// Query returns the path and query of the list to read, from the call's body.
	Query func(body []byte) (string, bool)
	// Pick returns the element of the list answer that the call created.
	Pick func(list, body []byte) ([]byte, bool)
	// Within is how long to keep polling a list that does not show the element yet.
	Within time.Duration
}

// Rule is how one endpoint may be repeated. The zero Rule is an unsafe call with no
// convergence rules.
type Rule struct {
	// Name is the endpoint as documented, e.g. "POST /v2/users".
	Name string
	// Safe reports whether repeating the call with this body is harmless; nil means unsafe.
	Safe func(body []byte) bool
	// Why explains the rule in one sentence, for `brellium explain`.
	Why string
	// Repeats are error responses repeated even when the call is unsafe.
	Repeats []Repeat
	// DoneAfterRun are answers that mean "already done" when an earlier attempt of the same
	// call may have run it.
	DoneAfterRun []Match
	// Fetch, when set, is how to show the resource after a DoneAfterRun answer.
	Fetch *Fetch
	// MaxAttempts caps the attempts for this endpoint; 0 leaves the cap to the caller.
	MaxAttempts int

	method  string
	pattern []string
}

func always(_ []byte) bool { return true }

// endpoints is the Brellium endpoint table: which calls are safe to repeat, and which answers
// mean that a repeated call has already done its work. Add rows here; Lookup finds them.
var endpoints = compile([]*Rule{
	{
		Name: "PATCH /v2/audits/{id}", Safe: always,
		Why: "safe: flags are replaced, so a repeat leaves the same state",
	},
	{
		Name: "POST /v2/audits/batch_update", Safe: always,
		Why: "safe: flags are replaced, so a repeat leaves the same state",
	},
	{
		Name: "POST /v2/documents", Safe: documentsHaveExternalIDs,
		Why: "safe only when the body's documents array is non-empty and every document has a non-empty external_id (the API then deduplicates); otherwise a repeat creates a second batch",
	},
	{
		Name:         "POST /v2/users",
		Why:          "unsafe: a repeat after a success answers 409; a 502 INVITE_FAILED keeps the user and is repeated, and a 409 INVITATION_PENDING or USER_EXISTS on that repeat means done",
		Repeats:      []Repeat{{Match: Match{Status: http.StatusBadGateway, Codes: []string{"INVITE_FAILED"}}, Ran: true}},
		DoneAfterRun: []Match{{Status: http.StatusConflict, Codes: []string{"INVITATION_PENDING", "USER_EXISTS"}}},
	},
	{
		Name: "DELETE /v2/users/{id}", Safe: always,
		Why:          "safe: a 502 REVOKE_FAILED keeps the user and is repeated; a 404 after an attempt whose outcome was unknown means done",
		Repeats:      []Repeat{{Match: Match{Status: http.StatusBadGateway, Codes: []string{"REVOKE_FAILED"}}}},
		DoneAfterRun: []Match{{Status: http.StatusNotFound}},
	},
	{
		Name:         "POST /v2/email_recipients",
		Why:          "unsafe; with --idempotent, a 409 EMAIL_RECIPIENT_EXISTS after an attempt whose outcome was unknown means done, and the recipient is fetched with GET /v2/email_recipients?email=",
		DoneAfterRun: []Match{{Status: http.StatusConflict, Codes: []string{"EMAIL_RECIPIENT_EXISTS"}}},
		Fetch:        &Fetch{Query: emailRecipientQuery, Pick: pickEmailRecipient, Within: 5 * time.Second},
	},
	{
		Name: "POST /v2/oauth/token", Safe: always, MaxAttempts: 3,
		Why: "a mint changes no records: 5xx repeated with backoff, at most 3 attempts (each attempt counts against the token endpoint's own limit)",
	},
})

// compile splits each rule's name into the method and path segments that Lookup matches.
func compile(rules []*Rule) []*Rule {
	for _, r := range rules {
		method, pattern, _ := strings.Cut(r.Name, " ")
		r.method = method
		r.pattern = strings.Split(strings.Trim(pattern, "/"), "/")
	}
	return rules
}

// Lookup returns the endpoint rule for a method and URL path, or nil.
func Lookup(method, path string) *Rule {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for _, r := range endpoints {
		if r.method == method && matchSegments(r.pattern, segs) {
			return r
		}
	}
	return nil
}

func matchSegments(pattern, segs []string) bool {
	if len(pattern) != len(segs) {
		return false
	}
	for i, p := range pattern {
		if strings.HasPrefix(p, "{") {
			if segs[i] == "" {
				return false
			}
			continue
		}
		if p != segs[i] {
			return false
		}
	}
	return true
}

// Class is what the endpoint table and the user's flags say about one call.
type Class struct {
	// Rule is the endpoint rule that applies, or nil for a call the table does not name.
	Rule *Rule
	// Safe says that the call may be repeated after an outcome that may have run it.
	Safe bool
	// Why says which rule decided Safe.
	Why string
	// KeySent says that an Idempotency-Key goes with every attempt.
	KeySent bool
	// Upload says that the call is a PUT to a pre-signed upload URL (Spec.Upload).
	Upload bool
}

// Classify decides whether a call is safe to repeat. Spec.Class gives the same, decided once.
func Classify(s *Spec) Class {
	c := Class{Rule: Lookup(s.Method, s.URL.Path), KeySent: s.Header.Get("Idempotency-Key") != ""}
	if s.Upload {
		return Class{Safe: true, Upload: true, Why: "a PUT of the same bytes to an upload URL is safe to repeat"}
	}
	switch {
	case s.Method == http.MethodGet || s.Method == http.MethodHead || s.Method == http.MethodOptions:
		c.Safe, c.Why = true, s.Method+" is safe to repeat"
	case c.Rule != nil && c.Rule.Safe != nil && c.Rule.Safe(s.Body):
		c.Safe, c.Why = true, c.Rule.Name+": "+c.Rule.Why
	case s.IdempotencyKey != "":
		c.Safe, c.Why = true, "an Idempotency-Key is sent: marked safe to repeat"
	case s.Idempotent:
		c.Safe, c.Why = true, "marked --idempotent: safe to repeat"
	case c.Rule != nil:
		c.Why = c.Rule.Name + ": " + c.Rule.Why
	default:
		c.Why = s.Method + " is not safe to repeat (mark it --idempotent if a repeat is harmless)"
	}
	return c
}

func documentsHaveExternalIDs(body []byte) bool {
	var b struct {
		Documents []map[string]any `json:"documents"`
	}
	if json.Unmarshal(body, &b) != nil || len(b.Documents) == 0 {
		return false
	}
	for _, d := range b.Documents {
		id, ok := d["external_id"].(string)
		if !ok || strings.TrimSpace(id) == "" {
			return false
		}
	}
	return true
}

func recipientEmail(body []byte) string {
	var b struct {
		Email string `json:"email"`
	}
	_ = json.Unmarshal(body, &b)
	return b.Email
}

func emailRecipientQuery(body []byte) (string, bool) {
	email := recipientEmail(body)
	if email == "" {
		return "", false
	}
	return "/v2/email_recipients?email=" + url.QueryEscape(email), true
}

func pickEmailRecipient(list, body []byte) ([]byte, bool) {
	email := recipientEmail(body)
	var l struct {
		Data []json.RawMessage `json:"data"`
	}
	if json.Unmarshal(list, &l) != nil {
		return nil, false
	}
	for _, raw := range l.Data {
		var r struct {
			Email string `json:"email"`
		}
		if json.Unmarshal(raw, &r) == nil && strings.EqualFold(r.Email, email) {
			return raw, true
		}
	}
	return nil, false
}

// readPaths are the API's GET paths, for shell completion.
var readPaths = []string{"/v2/audits?limit=", "/v2/audits/", "/v2/email_recipients?email="}

// PathTemplates returns the known API paths for a method (all methods for ""), with each {id}
// cut off so that the user types it: "/v2/audits/", "/v2/users".
func PathTemplates(method string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if i := strings.Index(p, "{"); i >= 0 {
			p = p[:i]
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	if method == "" || method == http.MethodGet || method == http.MethodHead {
		for _, p := range readPaths {
			add(p)
		}
	}
	for _, r := range endpoints {
		if method == "" || r.method == method {
			add("/" + strings.Join(r.pattern, "/"))
		}
	}
	return out
}
