package batch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strconv"
)

// resultError is the error object of a result line.
type resultError struct {
	Code      string `json:"code,omitempty"`
	Message   string `json:"message,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// result is one output line. Its body is kept raw until the writer embeds it: a JSON body
// compacted onto the line, any other as a JSON string.
type result struct {
	Line      int          `json:"line"`
	ID        string       `json:"id,omitempty"`
	Method    string       `json:"method,omitempty"`
	Path      string       `json:"path,omitempty"`
	Status    int          `json:"status,omitempty"`
	Outcome   string       `json:"outcome"`
	Attempts  int          `json:"attempts"`
	RequestID string       `json:"request_id,omitempty"`
	ElapsedMS int64        `json:"elapsed_ms"`
	BodyFile  string       `json:"body_file,omitempty"`
	Error     *resultError `json:"error,omitempty"`

	body []byte
	// bodyJSON says that body is known to be valid JSON.
	bodyJSON bool
	hash     uint64
	// release gives back the memory the body holds, once the line is written.
	release func()
	// earlier says that an earlier run did the line (the journal says so).
	earlier bool
}

// appendJSON appends the result as one JSON object: the batch's hot path, written by hand to
// skip encoding/json's reflection and a copy of the body.
func (r *result) appendJSON(b []byte) []byte {
	b = append(b, `{"line":`...)
	b = strconv.AppendInt(b, int64(r.Line), 10)
	b = appendField(b, "id", r.ID)
	b = appendField(b, "method", r.Method)
	b = appendField(b, "path", r.Path)
	if r.Status != 0 {
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(r.Status), 10)
	}
	b = append(b, `,"outcome":`...)
	b = appendString(b, r.Outcome)
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(r.Attempts), 10)
	b = appendField(b, "request_id", r.RequestID)
	b = append(b, `,"elapsed_ms":`...)
	b = strconv.AppendInt(b, r.ElapsedMS, 10)
	if len(r.body) > 0 {
		b = append(b, `,"body":`...)
		b = appendBody(b, r.body, r.bodyJSON)
	}
	b = appendField(b, "body_file", r.BodyFile)
	if r.Error != nil {
		e, _ := json.Marshal(r.Error)
		b = append(b, `,"error":`...)
		b = append(b, e...)
	}
	return append(b, '}')
}

// appendBody appends a JSON body compacted onto one line, and any other body as a JSON string.
// known says that the body was already found to be valid JSON.
func appendBody(b, body []byte, known bool) []byte {
	if known || json.Valid(body) {
		// Most JSON bodies end with a newline and hold no other: cut it rather than compact.
		trimmed := bytes.TrimRight(body, " \t\r\n")
		if bytes.IndexByte(trimmed, '\n') < 0 && bytes.IndexByte(trimmed, '\r') < 0 {
			return append(b, trimmed...)
		}
		buf := bytes.NewBuffer(b)
		if json.Compact(buf, body) == nil {
			return buf.Bytes()
		}
		b = buf.Bytes()[:len(b)]
	}
	return appendString(b, string(body))
}

// appendField appends ,"name":"value" when value is not empty.
func appendField(b []byte, name, value string) []byte {
	if value == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendString(b, value)
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// LineSet is a set of line numbers, as a bitset.
type LineSet struct{ bits []uint64 }

// Has reports whether line n is in the set.
func (s *LineSet) Has(n int) bool {
	return s != nil && n >= 0 && n/64 < len(s.bits) && s.bits[n/64]&(1<<(n%64)) != 0
}

func (s *LineSet) add(n int) {
	for n/64 >= len(s.bits) {
		s.bits = append(s.bits, 0)
	}
	s.bits[n/64] |= 1 << (n % 64)
}

// ResultLines reads a results file and returns the line numbers it holds a result for; a line
// that is not a result (a torn last line) is passed over.
func ResultLines(r io.Reader) (*LineSet, error) {
	set := &LineSet{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<30)
	for sc.Scan() {
		l := sc.Bytes()
		if !bytes.HasPrefix(l, []byte(`{"line":`)) {
			continue
		}
		l = l[len(`{"line":`):]
		i := bytes.IndexAny(l, ",}")
		if i < 0 {
			continue
		}
		if n, err := strconv.Atoi(string(l[:i])); err == nil && n > 0 {
			set.add(n)
		}
	}
	return set, sc.Err()
}
