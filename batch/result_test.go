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

// Every byte, alone and among plain text, is quoted as encoding/json quotes it.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for c := 0; c < 256; c++ {
		for _, s := range []string{string([]byte{byte(c)}), "a" + string([]byte{byte(c)}) + "z"} {
			want, _ := json.Marshal(s)
			if got := appendString(nil, s); !bytes.Equal(got, want) {
				t.Errorf("byte %#x: %s, want %s", c, got, want)
			}
		}
	}
	for _, s := range []string{"", "plain", "ü", "a\u2028b", "\x7f", "~"} {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("%q: %s, want %s", s, got, want)
		}
	}
}

// A JSON body is embedded compacted: one that ends with blanks is cut, one with inner line
// breaks (CR or LF) compacted; a body that is not JSON is quoted.
func TestAppendBody(t *testing.T) {
	for body, want := range map[string]string{
		`{"a":1}` + " \t\r\n":   `{"a":1}`,
		"{\"a\":\r1}":           `{"a":1}`,
		"{\"a\":\n 1}\n":        `{"a":1}`,
		`"str"`:                 `"str"`,
		"not json":              `"not json"`,
		"{\"a\":\"x\\ny\"}\n\n": `{"a":"x\ny"}`,
	} {
		if got := string(appendBody(nil, []byte(body), false)); got != want {
			t.Errorf("%q: %s, want %s", body, got, want)
		}
	}
}

// The set of lines holds exactly what was added, at the edges of its words too; a results file
// gives the line numbers of its result lines, and passes over the rest.
func TestLineSet(t *testing.T) {
	s := &LineSet{}
	in := []int{1, 63, 64, 127, 128, 1000}
	for _, n := range in {
		s.add(n)
	}
	for n := -1; n <= 1100; n++ {
		want := false
		for _, m := range in {
			want = want || m == n
		}
		if s.Has(n) != want {
			t.Errorf("Has(%d) = %v", n, !want)
		}
	}
	var nilSet *LineSet
	if nilSet.Has(1) {
		t.Error("a nil set holds 1")
	}
	got, err := ResultLines(bytes.NewBufferString(`{"line":3,"outcome":"ok"}` + "\n" + `{"line":70}` + "\n" +
		`{"line":0,"outcome":"ok"}` + "\n" + `{"line":-2}` + "\n" + `{"line":x}` + "\n" + `noise` + "\n" + `{"line":9`))
	if err != nil || !got.Has(3) || !got.Has(70) || got.Has(0) || got.Has(9) || got.Has(-2) {
		t.Errorf("ResultLines: %v %v", got, err)
	}
}
