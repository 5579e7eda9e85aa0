package batch

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestResultEncodingMatchesEncodingJSON pins the hand-written encoder to encoding/json's output,
// with the body compacted (JSON) or quoted (anything else).
func TestResultEncodingMatchesEncodingJSON(t *testing.T) {
	type withBody struct {
		*result
		Body json.RawMessage `json:"body,omitempty"`
	}
	cases := []struct {
		r    *result
		body string // as encoding/json would embed it
	}{
		{&result{Line: 1, Outcome: "invalid", Error: &resultError{Reason: "line 1: \"quoted\" <tag> & tab\t"}}, ""},
		{&result{Line: 2, ID: "ünïcode", Method: "GET", Path: "/v2/a?b=1&c=2", Status: 200, Outcome: "ok", Attempts: 3,
			RequestID: "r", ElapsedMS: 12, body: []byte("{\n  \"a\": [1, 2]\n}")}, `{"a":[1,2]}`},
		{&result{Line: 3, Method: "GET", Path: "/x", Status: 502, Outcome: "exhausted", body: []byte("<html>\n</html>"),
			Error: &resultError{Code: "BAD_GATEWAY", Message: "m", RequestID: "r", Reason: "why"}}, `"\u003chtml\u003e\n\u003c/html\u003e"`},
		{&result{Line: 4, Outcome: "ok", body: []byte(`{"a":1}` + "\n"), bodyJSON: true, BodyFile: ""}, `{"a":1}`},
		{&result{Line: 5, Outcome: "ok", BodyFile: "bodies/5.json"}, ""},
		{&result{Line: 6, Outcome: "ok", body: []byte("{broken\n")}, `"{broken\n"`},
	}
	for _, c := range cases {
		want, _ := json.Marshal(withBody{c.r, json.RawMessage(c.body)})
		// encoding/json puts the embedded struct's fields first and body last; the encoder puts
		// body before body_file and error: compare as objects.
		var w, g map[string]any
		_ = json.Unmarshal(want, &w)
		got := c.r.appendJSON(nil)
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("appendJSON gave invalid JSON: %s", got)
		}
		if !bytes.Equal(mustJSON(w), mustJSON(g)) || bytes.Contains(got, []byte("\n")) {
			t.Errorf("appendJSON:\n got %s\nwant %s", got, want)
		}
	}
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

// BenchmarkResultEncoding is the cost of one batch result line.
func BenchmarkResultEncoding(b *testing.B) {
	r := &result{Line: 12, ID: "a", Method: "GET", Path: "/v2/audits/a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d", Status: 200, Outcome: "ok",
		Attempts: 1, RequestID: "9c3f1a7e-5b2d-4e8f-a1c6-2d7b8e9f0a1b", ElapsedMS: 35, bodyJSON: true,
		body: []byte(`{"audit_id":"a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d","object":"audit","status":"complete","flags":["Failed","Missing Signature"],"display_info":[{"label":"Patient","value":"Sample Patient"}],"people":[],"responses":[]}`)}
	b.ReportAllocs()
	var line []byte
	for b.Loop() {
		line = r.appendJSON(line[:0])
	}
}
