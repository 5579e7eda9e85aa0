package batch

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// resultError is the error object of a result line.
type resultError struct {
	Code      string `json:"code,omitempty"`
	Message   string `json:"message,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// result is one output line.
type result struct {
	Line      int             `json:"line"`
	ID        string          `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Path      string          `json:"path,omitempty"`
	Status    int             `json:"status,omitempty"`
	Outcome   string          `json:"outcome"`
	Attempts  int             `json:"attempts"`
	RequestID string          `json:"request_id,omitempty"`
	ElapsedMS int64           `json:"elapsed_ms"`
	Body      json.RawMessage `json:"body,omitempty"`
	Error     *resultError    `json:"error,omitempty"`

	hash uint64
}

// bodyJSON embeds a JSON body (compacted onto one line) and any other body as a JSON string.
// known says that the body was already found to be valid JSON.
func bodyJSON(body []byte, known bool) json.RawMessage {
	if len(body) == 0 {
		return nil
	}
	if known || json.Valid(body) {
		// Most JSON bodies end with a newline and hold no other: cut it rather than compact.
		trimmed := bytes.TrimRight(body, " \t\r\n")
		if bytes.IndexByte(trimmed, '\n') < 0 && bytes.IndexByte(trimmed, '\r') < 0 {
			return json.RawMessage(trimmed)
		}
		var b bytes.Buffer
		if json.Compact(&b, body) == nil {
			return b.Bytes()
		}
	}
	s, _ := json.Marshal(string(body))
	return s
}

// appendJSON appends the result as one JSON object, the body embedded as it is (bodyJSON made
// it one valid line): the batch's hot path, written by hand to skip encoding/json's reflection
// and the re-validation of the body.
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
	if len(r.Body) > 0 {
		b = append(b, `,"body":`...)
		b = append(b, r.Body...)
	}
	if r.Error != nil {
		e, _ := json.Marshal(r.Error)
		b = append(b, `,"error":`...)
		b = append(b, e...)
	}
	return append(b, '}')
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
