// Package output shows what happened: the IO streams and their terminal and colour decisions,
// the attempt lines and JSON events on stderr, and the response body on stdout.
package output

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/fatih/color"
	"github.com/mattn/go-isatty"
)

// IOStreams are the process's standard streams and what is known of them. Colour is decided
// once, by SetColorMode, for each stream.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdoutTTY, stderrTTY bool
	colorOut, colorErr   bool
}

// System returns the process's streams, with terminal detection by go-isatty.
func System() *IOStreams {
	return &IOStreams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		stdoutTTY: isTerminal(os.Stdout), stderrTTY: isTerminal(os.Stderr),
	}
}

func isTerminal(f *os.File) bool {
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// Test returns streams on buffers, not terminals, for tests.
func Test() (s *IOStreams, in, out, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

// SetTTY overrides terminal detection (for tests).
func (s *IOStreams) SetTTY(stdout, stderr bool) { s.stdoutTTY, s.stderrTTY = stdout, stderr }

// IsStdoutTTY reports whether stdout is a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// IsStderrTTY reports whether stderr is a terminal.
func (s *IOStreams) IsStderrTTY() bool { return s.stderrTTY }

// SetColorMode decides colour once: NO_COLOR set (noColor) turns it off, "always" on, "never"
// off, and "auto" on only for a stream that is a terminal.
func (s *IOStreams) SetColorMode(mode string, noColor bool) error {
	switch mode {
	case "auto", "":
		s.colorOut, s.colorErr = s.stdoutTTY, s.stderrTTY
	case "always":
		s.colorOut, s.colorErr = true, true
	case "never":
		s.colorOut, s.colorErr = false, false
	default:
		return fmt.Errorf("invalid --color %q: want auto, always or never", mode)
	}
	if noColor {
		s.colorOut, s.colorErr = false, false
	}
	return nil
}

// ColorEnabled reports whether stdout is coloured.
func (s *IOStreams) ColorEnabled() bool { return s.colorOut }

// ColorErrEnabled reports whether stderr is coloured.
func (s *IOStreams) ColorErrEnabled() bool { return s.colorErr }

// Palette colours text for one stream; with colour off every helper returns its text unchanged.
type Palette struct {
	on                                   bool
	red, green, yellow, cyan, gray, bold *color.Color
}

// NewPalette returns a palette that colours when on.
func NewPalette(on bool) *Palette {
	p := &Palette{on: on, red: color.New(color.FgRed), green: color.New(color.FgGreen),
		yellow: color.New(color.FgYellow), cyan: color.New(color.FgCyan), gray: color.New(color.FgHiBlack),
		bold: color.New(color.Bold)}
	for _, c := range []*color.Color{p.red, p.green, p.yellow, p.cyan, p.gray, p.bold} {
		if on {
			c.EnableColor()
		} else {
			c.DisableColor()
		}
	}
	return p
}

func (p *Palette) paint(c *color.Color, s string) string {
	if !p.on {
		return s
	}
	return c.Sprint(s)
}

// Red, Green, Yellow, Cyan, Gray and Bold colour s when the palette is on.
func (p *Palette) Red(s string) string    { return p.paint(p.red, s) }
func (p *Palette) Green(s string) string  { return p.paint(p.green, s) }
func (p *Palette) Yellow(s string) string { return p.paint(p.yellow, s) }
func (p *Palette) Cyan(s string) string   { return p.paint(p.cyan, s) }
func (p *Palette) Gray(s string) string   { return p.paint(p.gray, s) }
func (p *Palette) Bold(s string) string   { return p.paint(p.bold, s) }
