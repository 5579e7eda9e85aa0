package output

import (
	"testing"
)

func TestColorDecision(t *testing.T) {
	cases := []struct {
		mode      string
		noColor   bool
		tty       bool
		wantColor bool
	}{
		{"auto", false, true, true},
		{"auto", false, false, false},
		{"auto", true, true, false},
		{"always", false, false, true},
		{"never", false, true, false},
		{"always", true, true, false},
	}
	for _, c := range cases {
		s, _, _, _ := Test()
		s.SetTTY(c.tty, c.tty)
		if err := s.SetColorMode(c.mode, c.noColor); err != nil {
			t.Fatal(err)
		}
		if s.ColorEnabled() != c.wantColor || s.ColorErrEnabled() != c.wantColor {
			t.Errorf("%+v: colour %v", c, s.ColorEnabled())
		}
	}
	s, _, _, _ := Test()
	if err := s.SetColorMode("sometimes", false); err == nil {
		t.Error("an unknown colour mode was accepted")
	}
}

func TestPaletteOffReturnsTextUnchanged(t *testing.T) {
	if got := NewPalette(false).Red("x"); got != "x" {
		t.Errorf("Red with colour off = %q", got)
	}
	if got := NewPalette(true).Red("x"); got == "x" {
		t.Error("Red with colour on did not colour")
	}
}

func TestRedact(t *testing.T) {
	cases := map[[2]string]string{
		{"Authorization", "Bearer abc"}:    "Bearer ***",
		{"authorization", "abc"}:           "***",
		{"Cookie", "session=1"}:            "***",
		{"Set-Cookie", "a=b"}:              "***",
		{"Proxy-Authorization", "Basic x"}: "Basic ***",
		{"X-Request-Id", "r1"}:             "r1",
	}
	for in, want := range cases {
		if got := Redact(in[0], in[1]); got != want {
			t.Errorf("Redact(%q, %q) = %q, want %q", in[0], in[1], got, want)
		}
	}
}

// The notes that are not attempts (pace, breaker) are one line each: text made inert, JSON with
// their event name.
func TestLoggerNotes(t *testing.T) {
	s, _, _, errOut := Test()
	l := NewLogger(s, LogOptions{})
	l.Breaker(true, "holding\x1b[2J")
	l.Pace("slower", 15, 50, 10)
	if got := errOut.String(); got != "breaker: holding\\x1b[2J\npace: slower\n" {
		t.Errorf("text: %q", got)
	}
	errOut.Reset()
	l = NewLogger(s, LogOptions{Format: "json"})
	l.Breaker(false, "goes on")
	l.Pace("slower", 15.04, 50, 10)
	want := `{"event":"breaker","state":"closed","why":"goes on"}` + "\n" +
		`{"event":"pace","why":"slower","others_per_second":15,"rate":50,"reserve":10}` + "\n"
	if got := errOut.String(); got != want {
		t.Errorf("json: %q", got)
	}
}
