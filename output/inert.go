package output

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// maxField caps a server-supplied value in a line of the text log; a longer one is cut, with the
// count of what was left out.
const maxField = 2048

// Inert makes server-supplied text safe to print on a terminal: every control character (C0
// but tab, DEL, the C1 range, so ESC and CSI too) and every byte that is not UTF-8 is shown
// escaped (\x1b, \u009b), so that no server can move the cursor, retitle the window, write the
// clipboard or forge a line; and a value over maxField bytes is cut.
func Inert(s string) string { return inertN(s, maxField) }

func inertN(s string, limit int) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean && len(s) <= limit {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if b.Len() >= limit {
			fmt.Fprintf(&b, "…(%d more bytes)", len(s)-i)
			break
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 && r != '\t', r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r <= 0x9f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Secrets are the credentials brellium holds (the client secret, tokens, passwords in URLs):
// every line the logger writes, and every batch result line, is scrubbed of them. It is safe
// for concurrent use; the zero value holds none.
type Secrets struct {
	mu    sync.RWMutex
	list  []string
	bytes [][]byte
}

// Add registers a secret. Values under 6 bytes are passed over: scrubbing them would mangle
// ordinary text.
func (s *Secrets) Add(secret string) {
	if s == nil || len(secret) < 6 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.list {
		if v == secret {
			return
		}
	}
	s.list = append(s.list, secret)
	// Its JSON-escaped form too, as it would stand in a JSON line.
	if q := quoted(secret); q != secret {
		s.list = append(s.list, q)
	}
	s.bytes = s.bytes[:0]
	for _, v := range s.list {
		s.bytes = append(s.bytes, []byte(v))
	}
}

// Scrub replaces every secret in text with ***.
func (s *Secrets) Scrub(text string) string {
	if s == nil {
		return text
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, v := range s.list {
		if strings.Contains(text, v) {
			text = strings.ReplaceAll(text, v, "***")
		}
	}
	return text
}

// ScrubBytes is Scrub for a line of bytes; it returns line itself when it holds no secret.
func (s *Secrets) ScrubBytes(line []byte) []byte {
	if s == nil {
		return line
	}
	s.mu.RLock()
	found := false
	for _, v := range s.bytes {
		if bytes.Contains(line, v) {
			found = true
			break
		}
	}
	s.mu.RUnlock()
	if !found {
		return line
	}
	return []byte(s.Scrub(string(line)))
}

// quoted is s as it stands inside a JSON string.
func quoted(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == '<' || r == '>' || r == '&' || r == 0x2028 || r == 0x2029:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
