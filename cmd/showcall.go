package cmd

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/brellium/brellium/output"
	"github.com/brellium/brellium/request"
	"github.com/brellium/brellium/retry"
)

// showCall prints the call without sending it: --dry-run shows the request that would go out
// (credentials as ***) and its repeat rule; --curl an equivalent curl command line, the token as
// "$BRELLIUM_ACCESS_TOKEN". Nothing is minted or sent.
func showCall(f *Factory, g *GlobalOptions, o *RequestOptions, body []byte) error {
	if o.Emulator {
		return request.Usagef("--dry-run and --curl show a call to --base-url; with --emulator there is none until it starts")
	}
	base, err := request.ParseBaseURL(g.BaseURL)
	if err != nil {
		return err
	}
	spec, err := buildSpec(o, body, base)
	if err != nil {
		return err
	}
	auth, source := "", ""
	token, err := accessToken(f)
	switch {
	case err != nil:
		return err
	case token != "":
		auth, source = "Bearer "+token, "BRELLIUM_ACCESS_TOKEN"
	case hasHeader(o.Headers, "Authorization"):
		source = "-H"
	case strings.TrimSpace(f.env("BRELLIUM_CLIENT_ID")) != "" && f.env("BRELLIUM_CLIENT_SECRET") != "":
		auth, source = "Bearer minted", "a token minted from BRELLIUM_CLIENT_ID and BRELLIUM_CLIENT_SECRET"
	}
	header := (&retry.Engine{UserAgent: "brellium/" + Version}).Header(spec, auth)
	w := f.IOStreams.Out
	if o.Curl {
		_, err := fmt.Fprintln(w, curlCommand(spec, header, o))
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", spec.Method, spec.URL.String())
	for _, line := range output.HeaderLines(header) {
		fmt.Fprintln(&b, line)
	}
	if spec.Body != nil {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimRight(string(spec.Body), "\n"))
	}
	class := spec.Class()
	safe := "no"
	if class.Safe {
		safe = "yes"
	}
	fmt.Fprintf(&b, "\ncredentials: %s\n", orNone(source))
	fmt.Fprintf(&b, "safe to repeat: %s — %s\n", safe, class.Why)
	fmt.Fprintln(&b, "not sent (--dry-run); brellium explain "+spec.Method+" "+shellJoin([]string{spec.Path()})+" shows what each answer would lead to")
	_, err = fmt.Fprint(w, f.Secrets().Scrub(b.String()))
	return err
}

func orNone(s string) string {
	if s == "" {
		return "none (set BRELLIUM_ACCESS_TOKEN, or BRELLIUM_CLIENT_ID and BRELLIUM_CLIENT_SECRET)"
	}
	return s
}

// curlCommand is a curl command line that sends the same request once: the token as
// "$BRELLIUM_ACCESS_TOKEN", any other credential as ***.
func curlCommand(spec *request.Spec, header http.Header, o *RequestOptions) string {
	parts := []string{"curl", "-sS"}
	if spec.Method != http.MethodGet || spec.Body != nil {
		parts = append(parts, "-X", spec.Method)
	}
	if spec.Method == http.MethodHead {
		parts = []string{"curl", "-sS", "-I"}
	}
	parts = append(parts, shellJoin([]string{spec.URL.String()}))
	for _, k := range slices.Sorted(maps.Keys(header)) {
		for _, v := range header[k] {
			if k == "Authorization" && strings.HasPrefix(v, "Bearer ") {
				parts = append(parts, "-H", `"Authorization: Bearer $BRELLIUM_ACCESS_TOKEN"`)
				continue
			}
			parts = append(parts, "-H", shellJoin([]string{k + ": " + output.Redact(k, v)}))
		}
	}
	if spec.Body != nil {
		parts = append(parts, "--data-raw", shellJoin([]string{string(spec.Body)}))
	}
	if o.Location {
		parts = append(parts, "-L")
	}
	if o.Include {
		parts = append(parts, "-i")
	}
	return strings.Join(parts, " ")
}
