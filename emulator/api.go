package emulator

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// The endpoints, as the write counters name them.
const (
	epPatchAudit   = "PATCH /v2/audits/{id}"
	epBatchUpdate  = "POST /v2/audits/batch_update"
	epDocuments    = "POST /v2/documents"
	epCreateUser   = "POST /v2/users"
	epDeleteUser   = "DELETE /v2/users/{id}"
	epRecipients   = "POST /v2/email_recipients"
	faultInvite    = "INVITE_FAILED"
	faultRevoke    = "REVOKE_FAILED"
	signedInSample = "ada@example.com"
)

type audit struct {
	AuditID     string              `json:"audit_id"`
	Object      string              `json:"object"`
	Status      string              `json:"status"`
	Flags       []string            `json:"flags"`
	DisplayInfo []map[string]string `json:"display_info"`
	People      []map[string]string `json:"people"`
	Responses   []map[string]string `json:"responses"`
	// encoded caches the JSON answer until the audit changes.
	encoded []byte
}

// reply answers with the audit, encoding it only after a change.
func (a *audit) reply() *reply {
	if a.encoded == nil {
		b, _ := json.Marshal(a)
		a.encoded = append(b, '\n')
	}
	return &reply{status: http.StatusOK, header: http.Header{"Content-Type": {"application/json"}}, body: a.encoded}
}

type user struct {
	UserID   string `json:"user_id"`
	Object   string `json:"object"`
	Email    string `json:"email"`
	Status   string `json:"status"` // "created" (invitation not sent), "invited", "active"
	invited  bool
	signedIn bool
}

type recipient struct {
	ID      string `json:"email_recipient_id"`
	Object  string `json:"object"`
	Email   string `json:"email"`
	created time.Time
}

type document struct {
	ID         string `json:"document_id"`
	Object     string `json:"object"`
	ExternalID string `json:"external_id,omitempty"`
	FileName   string `json:"file_name"`
	Status     string `json:"status"`
	UploadURL  string `json:"upload_url,omitempty"`
	FileSize   *int64 `json:"file_size,omitempty"`
	// What the uploads origin stored: the file's size and SHA-256, when, and how many PUTs.
	size       int64
	sha256     string
	uploadedAt time.Time
	stored     int
	issued     int // upload URLs handed out
}

// view is the document as the API shows it at now: its status follows the upload.
func (s *Server) view(d *document, now time.Time) document {
	c := *d
	c.UploadURL = ""
	switch {
	case d.stored == 0:
		c.Status = "awaiting_upload"
		d.issued++
		c.UploadURL = s.uploadURL(d.ID, now.Add(s.cfg.UploadTTL), d.issued)
	case now.Before(d.uploadedAt.Add(s.cfg.ProcessDelay)):
		c.Status = "processing"
	default:
		c.Status = "processed"
	}
	if d.stored > 0 {
		size := d.size
		c.FileSize = &size
	}
	return c
}

// store is the emulator's data.
type store struct {
	mu         sync.Mutex
	now        func() time.Time
	audits     map[string]*audit
	auditIDs   []string
	users      map[string]*user
	byEmail    map[string]*user
	recipients map[string]*recipient
	docs       map[string]*document // by external_id
	docsByID   map[string]*document
	byFileName map[string]int
	seq        int
}

func newStore(n int, now func() time.Time) *store {
	st := &store{now: now, audits: map[string]*audit{}, users: map[string]*user{}, byEmail: map[string]*user{},
		recipients: map[string]*recipient{}, docs: map[string]*document{}, docsByID: map[string]*document{}, byFileName: map[string]int{}}
	st.addAudit(SampleAuditID, []string{"Failed", "Missing Signature"})
	for i := 1; i <= n; i++ {
		st.addAudit(AuditID(i), []string{})
	}
	ada := &user{UserID: "usr_ada", Object: "user", Email: signedInSample, Status: "active", invited: true, signedIn: true}
	st.users[ada.UserID], st.byEmail[ada.Email] = ada, ada
	return st
}

// AuditID is the id of the emulator's i-th generated audit (1-based).
func AuditID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }

func (st *store) addAudit(id string, flags []string) {
	st.audits[id] = &audit{
		AuditID: id, Object: "audit", Status: "complete", Flags: flags,
		DisplayInfo: []map[string]string{{"label": "Patient", "value": "Sample Patient"}, {"label": "Date of service", "value": "2026-01-15"}},
		People:      []map[string]string{{"role": "provider", "name": "Sample Provider"}},
		Responses:   []map[string]string{{"question": "Is the note signed?", "answer": "No"}},
	}
	st.auditIDs = append(st.auditIDs, id)
}

func (st *store) nextID(prefix string) string {
	st.seq++
	return fmt.Sprintf("%s_%06d", prefix, st.seq)
}

func (s *Server) wrote(endpoint string) {
	s.mu.Lock()
	s.stats.Writes[endpoint]++
	s.mu.Unlock()
}

func (s *Server) created(kind string) {
	s.mu.Lock()
	s.stats.Created[kind]++
	s.mu.Unlock()
}

// route applies the content-type rule and the faults around the endpoint.
func (s *Server) route(r *http.Request, body []byte) *reply {
	f := s.takeFault(r.Method, r.URL.Path)
	special := f != nil && (f.Code == faultInvite || f.Code == faultRevoke)
	if f != nil && !f.Execute && !special {
		return faultReply(f)
	}
	var rep *reply
	if len(body) > 0 || r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch {
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
			rep = apiError(http.StatusBadRequest, "INVALID_CONTENT_TYPE", "Send Content-Type: application/json with every request body")
		}
	}
	if rep == nil {
		rep = s.dispatch(r, body, f)
	}
	if f != nil && !special {
		return faultReply(f)
	}
	if s.cfg.DropRate > 0 && s.float() < s.cfg.DropRate {
		return dropConn()
	}
	if s.cfg.FailRate > 0 && s.float() < s.cfg.FailRate {
		statuses := []int{500, 502, 503, 504}
		st := statuses[int(s.float()*4)%4]
		return apiError(st, strings.ToUpper(strings.ReplaceAll(http.StatusText(st), " ", "_")), "Injected failure (--fail-rate)")
	}
	return rep
}

func faultReply(f *Fault) *reply {
	if f.Drop {
		return dropConn()
	}
	status := f.Status
	if status == 0 {
		status = http.StatusServiceUnavailable
	}
	var rep *reply
	switch {
	case f.Bare:
		rep = bare(status)
	case f.Code != "":
		msg := f.Message
		if msg == "" {
			msg = "Injected fault"
		}
		rep = apiError(status, f.Code, msg)
	default:
		rep = apiError(status, strings.ToUpper(strings.ReplaceAll(http.StatusText(status), " ", "_")), "Injected fault")
	}
	for k, v := range f.Headers {
		rep.header.Set(k, v)
	}
	if status == http.StatusTooManyRequests {
		// A refusal says the bucket is empty, and when it refills.
		rep.header.Set("RateLimit-Remaining", "0")
		if ra := rep.header.Get("Retry-After"); ra != "" {
			rep.header.Set("RateLimit-Reset", ra)
		}
	}
	return rep
}

func segments(path string) []string { return strings.Split(strings.Trim(path, "/"), "/") }

// dispatch runs the endpoint. f is a scripted fault the endpoint handles itself, or nil.
func (s *Server) dispatch(r *http.Request, body []byte, f *Fault) *reply {
	seg := segments(r.URL.Path)
	if len(seg) < 2 || seg[0] != "v2" {
		return apiError(http.StatusNotFound, "NOT_FOUND", "No such endpoint: "+r.Method+" "+r.URL.Path)
	}
	switch {
	case seg[1] == "audits" && len(seg) == 2 && r.Method == http.MethodGet:
		return s.listAudits(r)
	case seg[1] == "audits" && len(seg) == 3 && seg[2] == "batch_update" && r.Method == http.MethodPost:
		return s.batchUpdate(body)
	case seg[1] == "audits" && len(seg) == 3 && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		return s.getAudit(seg[2])
	case seg[1] == "audits" && len(seg) == 3 && r.Method == http.MethodPatch:
		return s.patchAudit(seg[2], body)
	case seg[1] == "documents" && len(seg) == 2 && r.Method == http.MethodPost:
		return s.createDocuments(body)
	case seg[1] == "documents" && len(seg) == 3 && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		return s.getDocument(seg[2])
	case seg[1] == "users" && len(seg) == 2 && r.Method == http.MethodPost:
		return s.createUser(body, f)
	case seg[1] == "users" && len(seg) == 3 && r.Method == http.MethodDelete:
		return s.deleteUser(seg[2], f)
	case seg[1] == "email_recipients" && len(seg) == 2 && r.Method == http.MethodPost:
		return s.createRecipient(body)
	case seg[1] == "email_recipients" && len(seg) == 2 && r.Method == http.MethodGet:
		return s.listRecipients(r)
	}
	return apiError(http.StatusNotFound, "NOT_FOUND", "No such endpoint: "+r.Method+" "+r.URL.Path)
}

func decode(body []byte, v any) *reply {
	if err := json.Unmarshal(body, v); err != nil {
		return apiError(http.StatusBadRequest, "INVALID_JSON", "The request body is not valid JSON: "+err.Error())
	}
	return nil
}

func (s *Server) getAudit(id string) *reply {
	st := s.data
	st.mu.Lock()
	defer st.mu.Unlock()
	a, ok := st.audits[id]
	if !ok {
		return apiError(http.StatusNotFound, "AUDIT_NOT_FOUND", "No audit with id "+id)
	}
	return a.reply()
}

func (s *Server) listAudits(r *http.Request) *reply {
	limit := 10
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return apiError(http.StatusBadRequest, "INVALID_PARAMETER", "limit must be a whole number from 1 to 100")
		}
		limit = n
	}
	after := r.URL.Query().Get("starting_after")
	st := s.data
	st.mu.Lock()
	defer st.mu.Unlock()
	start := 0
	if after != "" {
		start = len(st.auditIDs)
		for i, id := range st.auditIDs {
			if id == after {
				start = i + 1
				break
			}
		}
	}
	end := min(start+limit, len(st.auditIDs))
	data := make([]*audit, 0, end-start)
	for _, id := range st.auditIDs[start:end] {
		data = append(data, st.audits[id])
	}
	return newReply(http.StatusOK, map[string]any{"object": "list", "data": data, "has_more": end < len(st.auditIDs)})
}

func validFlags(flags []string) *reply {
	if flags == nil {
		return apiError(http.StatusBadRequest, "INVALID_PARAMETER", "flags is required: an array of strings")
	}
	return nil
}

func (s *Server) patchAudit(id string, body []byte) *reply {
	var in struct {
		Flags []string `json:"flags"`
	}
	if rep := decode(body, &in); rep != nil {
		return rep
	}
	if rep := validFlags(in.Flags); rep != nil {
		return rep
	}
	st := s.data
	st.mu.Lock()
	defer st.mu.Unlock()
	a, ok := st.audits[id]
	if !ok {
		return apiError(http.StatusNotFound, "AUDIT_NOT_FOUND", "No audit with id "+id)
	}
	a.Flags, a.encoded = in.Flags, nil
	s.wrote(epPatchAudit)
	return a.reply()
}

func (s *Server) batchUpdate(body []byte) *reply {
	var in struct {
		Audits []struct {
			AuditID string   `json:"audit_id"`
			Flags   []string `json:"flags"`
		} `json:"audits"`
	}
	if rep := decode(body, &in); rep != nil {
		return rep
	}
	if len(in.Audits) == 0 || len(in.Audits) > 100 {
		return apiError(http.StatusBadRequest, "INVALID_PARAMETER", "audits must hold 1 to 100 updates")
	}
	st := s.data
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, u := range in.Audits {
		if _, ok := st.audits[u.AuditID]; !ok {
			return apiError(http.StatusNotFound, "AUDIT_NOT_FOUND", "No audit with id "+u.AuditID)
		}
		if rep := validFlags(u.Flags); rep != nil {
			return rep
		}
	}
	out := make([]*audit, 0, len(in.Audits))
	for _, u := range in.Audits {
		a := st.audits[u.AuditID]
		a.Flags, a.encoded = u.Flags, nil
		out = append(out, a)
	}
	s.wrote(epBatchUpdate)
	return newReply(http.StatusOK, map[string]any{"object": "list", "data": out})
}

func (s *Server) createDocuments(body []byte) *reply {
	var in struct {
		Documents []struct {
			ExternalID string `json:"external_id"`
			FileName   string `json:"file_name"`
		} `json:"documents"`
	}
	if rep := decode(body, &in); rep != nil {
		return rep
	}
	if len(in.Documents) == 0 {
		return apiError(http.StatusBadRequest, "INVALID_PARAMETER", "documents must hold at least one document")
	}
	st := s.data
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]document, 0, len(in.Documents))
	now := s.now()
	for _, d := range in.Documents {
		if d.ExternalID != "" {
			if doc, ok := st.docs[d.ExternalID]; ok {
				// A repeat creates nothing: the same document, a new URL if its file has not arrived.
				out = append(out, s.view(doc, now))
				continue
			}
		}
		doc := &document{ID: st.nextID("doc"), Object: "document", ExternalID: d.ExternalID, FileName: d.FileName}
		if d.ExternalID != "" {
			st.docs[d.ExternalID] = doc
		}
		st.docsByID[doc.ID] = doc
		s.created("documents")
		st.byFileName[d.FileName]++
		out = append(out, s.view(doc, now))
	}
	s.wrote(epDocuments)
	return newReply(http.StatusCreated, map[string]any{"object": "list", "data": out})
}

func (s *Server) getDocument(id string) *reply {
	st := s.data
	st.mu.Lock()
	defer st.mu.Unlock()
	doc, ok := st.docsByID[id]
	if !ok {
		return apiError(http.StatusNotFound, "NOT_FOUND", "No document with id "+id)
	}
	v := *doc
	if doc.stored == 0 { // a new URL comes from repeating POST /v2/documents
		v.Status = "awaiting_upload"
	} else {
		v = s.view(doc, s.now())
	}
	return newReply(http.StatusOK, v)
}

// decodeEmail reads the body {"email": …} of the user and recipient endpoints.
func decodeEmail(body []byte) (string, *reply) {
	var in struct {
		Email string `json:"email"`
	}
	if rep := decode(body, &in); rep != nil {
		return "", rep
	}
	email := strings.ToLower(strings.TrimSpace(in.Email))
	if !strings.Contains(email, "@") {
		return "", apiError(http.StatusBadRequest, "INVALID_PARAMETER", "email must be an email address")
	}
	return email, nil
}

func (s *Server) createUser(body []byte, f *Fault) *reply {
	email, rep := decodeEmail(body)
	if rep != nil {
		return rep
	}
	st := s.data
	st.mu.Lock()
	defer st.mu.Unlock()
	u, exists := st.byEmail[email]
	switch {
	case exists && u.signedIn:
		return apiError(http.StatusConflict, "USER_EXISTS", "A user with this email exists")
	case exists && u.invited:
		return apiError(http.StatusConflict, "INVITATION_PENDING", "This user has a pending invitation")
	}
	if !exists {
		u = &user{UserID: st.nextID("usr"), Object: "user", Email: email, Status: "created"}
		st.users[u.UserID], st.byEmail[email] = u, u
		s.created("users")
	}
	s.wrote(epCreateUser)
	if f != nil && f.Code == faultInvite {
		return apiError(http.StatusBadGateway, faultInvite, "The user was created but the invitation could not be sent; call again to send it")
	}
	u.invited, u.Status = true, "invited"
	return newReply(http.StatusCreated, u)
}

func (s *Server) deleteUser(id string, f *Fault) *reply {
	st := s.data
	st.mu.Lock()
	defer st.mu.Unlock()
	u, ok := st.users[id]
	if !ok {
		return apiError(http.StatusNotFound, "USER_NOT_FOUND", "No user with id "+id)
	}
	if f != nil && f.Code == faultRevoke {
		return apiError(http.StatusBadGateway, faultRevoke, "Access could not be revoked; the user was kept; call again")
	}
	delete(st.users, id)
	delete(st.byEmail, u.Email)
	s.wrote(epDeleteUser)
	return &reply{status: http.StatusNoContent, header: http.Header{}}
}

func (s *Server) createRecipient(body []byte) *reply {
	email, rep := decodeEmail(body)
	if rep != nil {
		return rep
	}
	st := s.data
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, ok := st.recipients[email]; ok {
		return apiError(http.StatusConflict, "EMAIL_RECIPIENT_EXISTS", "An email recipient with this email exists")
	}
	rcp := &recipient{ID: st.nextID("er"), Object: "email_recipient", Email: email, created: st.now()}
	st.recipients[email] = rcp
	s.wrote(epRecipients)
	s.created("email_recipients")
	return newReply(http.StatusCreated, rcp)
}

// listRecipients lists recipients, filtered by ?email=; a new one shows after ListLag.
func (s *Server) listRecipients(r *http.Request) *reply {
	want := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("email")))
	st := s.data
	st.mu.Lock()
	defer st.mu.Unlock()
	now := st.now()
	data := []*recipient{}
	for email, rcp := range st.recipients {
		if (want == "" || email == want) && !now.Before(rcp.created.Add(s.cfg.ListLag)) {
			data = append(data, rcp)
		}
	}
	return newReply(http.StatusOK, map[string]any{"object": "list", "data": data})
}

// mint is POST /v2/oauth/token: client credentials, its own limit per client_id.
func (s *Server) mint(r *http.Request, body []byte) *reply {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return apiError(http.StatusBadRequest, "INVALID_CONTENT_TYPE", "Send Content-Type: application/json with every request body")
	}
	var in struct {
		GrantType    string `json:"grant_type"`
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if rep := decode(body, &in); rep != nil {
		return rep
	}
	if in.GrantType != "client_credentials" {
		return apiError(http.StatusBadRequest, "unsupported_grant_type", "grant_type must be client_credentials")
	}
	if in.ClientID == "" {
		return apiError(http.StatusBadRequest, "invalid_request", "client_id is required")
	}
	s.mu.Lock()
	lim, ok := s.tokenLimits[in.ClientID]
	if !ok {
		lim = rate.NewLimiter(rate.Every(s.cfg.TokenInterval), s.cfg.TokenBurst)
		s.tokenLimits[in.ClientID] = lim
	}
	s.mu.Unlock()
	limit := s.take(lim, float64(s.cfg.TokenBurst), "Too many token requests")
	if limit.status == http.StatusTooManyRequests {
		return limit.reply
	}
	if in.ClientSecret == "" || (s.cfg.ClientSecret != "" && in.ClientSecret != s.cfg.ClientSecret) {
		rep := apiError(http.StatusForbidden, "access_denied", "The client credentials were refused")
		for k, v := range limit.header {
			rep.header[k] = v
		}
		return rep
	}
	token := "emu_" + strings.ReplaceAll(s.requestID(), "-", "")
	ttl := s.cfg.TokenTTL
	s.mu.Lock()
	s.minted[token] = s.now().Add(ttl)
	s.stats.Mints++
	s.mu.Unlock()
	rep := newReply(http.StatusOK, map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": int(ttl.Seconds())})
	for k, v := range limit.header {
		rep.header[k] = v
	}
	return rep
}

// CountDocuments returns how many documents were created with a file name: tests use it to
// prove that a write ran once.
func (s *Server) CountDocuments(fileName string) int {
	st := s.data
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.byFileName[fileName]
}
