package request

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"strings"
)

// MaxLineBytes is the longest batch line read; a longer one is an invalid line.
const MaxLineBytes = 16 << 20

// Line is one request line of a batch input.
type Line struct {
	// N is the 1-based line number in the input; blank and comment lines count.
	N int
	// Hash identifies the line's text, so a journal can tell that it belongs to this input.
	Hash uint64
	// ID is the line's own "id", or "".
	ID      string
	Method  string
	Path    string
	Body    []byte
	Headers []string
	// Idempotent is the line's own "idempotent".
	Idempotent bool
	// UploadURL and File make the line an upload: PUT File to the pre-signed UploadURL (then
	// Path is the URL without its signature, for results).
	UploadURL, File string
	// Err says why the line could not be parsed; nothing is sent for it.
	Err error
}

// batchLine is the JSON form of a line.
type batchLine struct {
	ID         json.RawMessage   `json:"id"`
	Method     string            `json:"method"`
	Path       *string           `json:"path"`
	Body       json.RawMessage   `json:"body"`
	Headers    map[string]string `json:"headers"`
	Idempotent bool              `json:"idempotent"`
	UploadURL  *string           `json:"upload_url"`
	File       *string           `json:"file"`
}

// ParseLine parses one batch line: a JSON object, or text `METHOD PATH [JSON-BODY]`. skip is
// true for a blank line or a # comment. A line that cannot be parsed comes back with Err set.
func ParseLine(n int, text string) (l Line, skip bool) {
	l = Line{N: n, Hash: LineHash(text)}
	t := strings.TrimSpace(text)
	if t == "" || strings.HasPrefix(t, "#") {
		return l, true
	}
	if strings.HasPrefix(t, "{") {
		l.Err = parseJSONLine(t, &l)
	} else {
		l.Err = parseTextLine(t, &l)
	}
	if l.Err != nil {
		l.Err = fmt.Errorf("line %d: %w", n, l.Err)
	}
	return l, false
}

// LineHash is the FNV-1a hash of a line's text, trailing white space ignored.
func LineHash(text string) uint64 {
	h := fnv.New64a()
	_, _ = io.WriteString(h, strings.TrimRight(text, " \t\r\n"))
	return h.Sum64()
}

func parseJSONLine(t string, l *Line) error {
	dec := json.NewDecoder(strings.NewReader(t))
	dec.DisallowUnknownFields()
	var b batchLine
	if err := dec.Decode(&b); err != nil {
		return fmt.Errorf("invalid JSON line: %v", err)
	}
	if dec.More() {
		return errors.New("invalid JSON line: more than one JSON value")
	}
	if b.UploadURL != nil || b.File != nil {
		if err := parseUploadLine(b, l); err != nil {
			return err
		}
	} else if b.Path == nil || strings.TrimSpace(*b.Path) == "" {
		return errors.New(`"path" is required`)
	} else {
		l.Path = strings.TrimSpace(*b.Path)
		l.Method = strings.ToUpper(strings.TrimSpace(b.Method))
		if l.Method == "" {
			l.Method = "GET"
		}
	}
	if len(b.ID) > 0 && string(b.ID) != "null" {
		var s string
		switch {
		case json.Unmarshal(b.ID, &s) == nil:
			l.ID = s
		case isJSONNumber(b.ID):
			l.ID = string(b.ID)
		default:
			return errors.New(`"id" must be a string or a number`)
		}
	}
	if len(b.Body) > 0 && string(b.Body) != "null" {
		l.Body = []byte(b.Body)
	}
	for name, value := range b.Headers {
		l.Headers = append(l.Headers, name+": "+value)
	}
	l.Idempotent = b.Idempotent
	return nil
}

// parseUploadLine reads {"upload_url":…,"file":…}: both are needed, and a body, a path or a
// method other than PUT do not go with them.
func parseUploadLine(b batchLine, l *Line) error {
	switch {
	case b.UploadURL == nil || strings.TrimSpace(*b.UploadURL) == "":
		return errors.New(`"file" goes with "upload_url": give the upload_url that POST /v2/documents answered`)
	case b.File == nil || strings.TrimSpace(*b.File) == "":
		return errors.New(`"upload_url" needs "file": the path of the file to upload`)
	case b.Path != nil:
		return errors.New(`"upload_url" and "path" do not go together: a line is an upload or an API call`)
	case len(b.Body) > 0 && string(b.Body) != "null":
		return errors.New(`an upload line takes no "body": the file is the body`)
	case b.Method != "" && !strings.EqualFold(strings.TrimSpace(b.Method), "PUT"):
		return fmt.Errorf(`an upload is a PUT, not %s`, strings.ToUpper(b.Method))
	}
	l.UploadURL, l.File = strings.TrimSpace(*b.UploadURL), *b.File
	l.Method, l.Path = "PUT", RedactQuery(l.UploadURL)
	return nil
}

func isJSONNumber(raw []byte) bool {
	var n json.Number
	return json.Unmarshal(raw, &n) == nil
}

func parseTextLine(t string, l *Line) error {
	method, rest, _ := strings.Cut(t, " ")
	rest = strings.TrimLeft(rest, " \t")
	path, body, _ := strings.Cut(rest, " ")
	body = strings.TrimSpace(body)
	if path == "" {
		return fmt.Errorf("want METHOD PATH [JSON-BODY] or a JSON object, got %q", truncate(t, 60))
	}
	l.Method, l.Path = strings.ToUpper(method), path
	if body != "" {
		l.Body = []byte(body)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// LineReader streams the lines of a batch input with their numbers, in constant memory.
type LineReader struct {
	r *bufio.Reader
	n int
}

// NewLineReader reads lines from r.
func NewLineReader(r io.Reader) *LineReader {
	return &LineReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next line's number and text. A line longer than MaxLineBytes is returned
// with tooLong set and its text cut. At the end it returns io.EOF.
func (lr *LineReader) Next() (n int, text string, tooLong bool, err error) {
	var buf bytes.Buffer
	for {
		chunk, isPrefix, err := lr.r.ReadLine()
		if err != nil {
			if errors.Is(err, io.EOF) && buf.Len() > 0 {
				break
			}
			return 0, "", false, err
		}
		if buf.Len()+len(chunk) <= MaxLineBytes {
			buf.Write(chunk)
		} else {
			tooLong = true
		}
		if !isPrefix {
			break
		}
	}
	lr.n++
	text = buf.String()
	if lr.n == 1 {
		// A byte-order mark that an editor put first (Windows Notepad, Excel) is no part of the line.
		text = strings.TrimPrefix(text, "\uFEFF")
	}
	return lr.n, text, tooLong, nil
}
