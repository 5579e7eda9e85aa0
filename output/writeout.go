package output

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// WriteOut is what -w/--write-out can show of a call, under curl's names where curl has them.
type WriteOut struct {
	HTTPCode  int
	TimeTotal time.Duration
	ExitCode  int
	Header    http.Header
	RequestID string
	Attempts  int
	Outcome   string
	// RateLimit is the last answer's ratelimit triple; Present is false when it had none.
	RateLimitPresent                                   bool
	RateLimitLimit, RateLimitRemaining, RateLimitReset int
}

// writeOutVars are the %{…} variables, in the order %{json} lists them.
var writeOutVars = []string{"http_code", "time_total", "exitcode", "request_id", "attempts", "outcome",
	"ratelimit_limit", "ratelimit_remaining", "ratelimit_reset"}

func (v WriteOut) value(name string) any {
	switch name {
	case "http_code":
		return v.HTTPCode
	case "time_total":
		return json.Number(strconv.FormatFloat(v.TimeTotal.Seconds(), 'f', 6, 64))
	case "exitcode":
		return v.ExitCode
	case "request_id":
		return v.RequestID
	case "attempts":
		return v.Attempts
	case "outcome":
		return v.Outcome
	}
	if !v.RateLimitPresent {
		return nil
	}
	switch name {
	case "ratelimit_limit":
		return v.RateLimitLimit
	case "ratelimit_remaining":
		return v.RateLimitRemaining
	default:
		return v.RateLimitReset
	}
}

// CheckWriteOut reports an unknown variable or a malformed % in a -w format.
func CheckWriteOut(format string) error {
	_, err := expand(format, WriteOut{})
	return err
}

// WriteWriteOut writes the -w format, filled in, to w.
func WriteWriteOut(w io.Writer, format string, v WriteOut) error {
	s, err := expand(format, v)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, s)
	return err
}

// expand fills a format in: %{name}, %header{Name}, %% for a percent sign, and \n, \t, \r, \\.
func expand(format string, v WriteOut) (string, error) {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		switch {
		case c == '\\' && i+1 < len(format):
			i++
			switch format[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '\\':
				b.WriteByte('\\')
			default:
				b.WriteByte('\\')
				b.WriteByte(format[i])
			}
		case c == '%' && strings.HasPrefix(format[i:], "%%"):
			b.WriteByte('%')
			i++
		case c == '%' && strings.HasPrefix(format[i:], "%header{"):
			end := strings.IndexByte(format[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("%q: %%header{ is not closed", format)
			}
			b.WriteString(v.Header.Get(format[i+len("%header{") : i+end]))
			i += end
		case c == '%' && strings.HasPrefix(format[i:], "%{"):
			end := strings.IndexByte(format[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("%q: %%{ is not closed", format)
			}
			name := format[i+2 : i+end]
			i += end
			if name == "json" {
				m := map[string]any{}
				for _, n := range writeOutVars {
					m[n] = v.value(n)
				}
				j, _ := json.Marshal(m)
				b.Write(j)
				continue
			}
			if !known(name) {
				return "", fmt.Errorf("unknown variable %%{%s}: want one of %%{%s}, %%{json} or %%header{NAME}", name, strings.Join(writeOutVars, "}, %{"))
			}
			if name == "http_code" {
				fmt.Fprintf(&b, "%03d", v.HTTPCode) // as curl writes it: 000 when no answer came
				continue
			}
			if x := v.value(name); x != nil {
				fmt.Fprint(&b, x)
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

func known(name string) bool {
	for _, n := range writeOutVars {
		if n == name {
			return true
		}
	}
	return false
}
