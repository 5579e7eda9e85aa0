package output

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/tidwall/pretty"

	"github.com/brellium/brellium/retry"
)

// WriteHead writes the status line and the headers, then a blank line, as curl -i does.
func WriteHead(w io.Writer, r *retry.Response) error {
	if _, err := fmt.Fprintf(w, "%s %s\r\n", r.Proto, r.StatusText); err != nil {
		return err
	}
	names := make([]string, 0, len(r.Header))
	for k := range r.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		for _, v := range r.Header[k] {
			if _, err := fmt.Fprintf(w, "%s: %s\r\n", k, v); err != nil {
				return err
			}
		}
	}
	_, err := io.WriteString(w, "\r\n")
	return err
}

// WriteBody writes a response body. With indent (stdout is a terminal) a JSON body is indented,
// and coloured with color; anything else is written byte for byte.
func WriteBody(w io.Writer, body []byte, indent, color bool) error {
	if indent && json.Valid(body) {
		out := pretty.PrettyOptions(body, &pretty.Options{Width: 80, Indent: "  "})
		if color {
			out = pretty.Color(out, pretty.TerminalStyle)
		}
		_, err := w.Write(out)
		return err
	}
	_, err := w.Write(body)
	return err
}
