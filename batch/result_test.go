package batch

import (
	"encoding/json"
	"testing"
)

// TestResultEncodingMatchesEncodingJSON pins the hand-written encoder to encoding/json's output.
func TestResultEncodingMatchesEncodingJSON(t *testing.T) {
	cases := []*result{
		{Line: 1, Outcome: "invalid", Error: &resultError{Reason: "line 1: \"quoted\" <tag> & tab\t"}},
		{Line: 2, ID: "ünïcode", Method: "GET", Path: "/v2/a?b=1&c=2", Status: 200, Outcome: "ok", Attempts: 3,
			RequestID: "r", ElapsedMS: 12, Body: bodyJSON([]byte("{\n  \"a\": [1, 2]\n}"), false)},
		{Line: 3, Method: "GET", Path: "/x", Status: 502, Outcome: "exhausted", Body: bodyJSON([]byte("<html>\n</html>"), false),
			Error: &resultError{Code: "BAD_GATEWAY", Message: "m", RequestID: "r", Reason: "why"}},
	}
	for _, r := range cases {
		want, _ := json.Marshal(r)
		if got := r.appendJSON(nil); string(got) != string(want) {
			t.Errorf("appendJSON:\n got %s\nwant %s", got, want)
		}
	}
}

// BenchmarkResultEncoding is the cost of one batch result line.
func BenchmarkResultEncoding(b *testing.B) {
	r := &result{Line: 12, ID: "a", Method: "GET", Path: "/v2/audits/a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d", Status: 200, Outcome: "ok",
		Attempts: 1, RequestID: "9c3f1a7e-5b2d-4e8f-a1c6-2d7b8e9f0a1b", ElapsedMS: 35,
		Body: []byte(`{"audit_id":"a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d","object":"audit","status":"complete","flags":["Failed","Missing Signature"],"display_info":[{"label":"Patient","value":"Sample Patient"}],"people":[],"responses":[]}`)}
	b.ReportAllocs()
	for b.Loop() {
		_ = r.appendJSON(nil)
	}
}
