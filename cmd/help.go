package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// ExitStatus is the contract's exit-code table, for `brellium --help` and the man pages.
var ExitStatus = [][2]string{
	{"0", "ok: a 2xx, or a write that the API shows was already done"},
	{"1", "internal: a bug in brellium, or the output could not be written"},
	{"2", "usage: bad flags or input (an invalid body, a query over 2,048 bytes, a foreign origin, credentials over plain http, a batch body over --max-body)"},
	{"3", "api_error: a final error answer that retrying cannot fix (400, 404, 409, 422, 501, …)"},
	{"4", "exhausted: a retryable failure that lasted past --retry or --max-time"},
	{"5", "blocked: a bare 403 (no JSON body): stop and lower concurrency"},
	{"6", "unknown_outcome: an unsafe write got a 5xx, a timeout or a dropped connection and was not repeated"},
	{"7", "auth_error: no credentials, a 401 after one re-mint, or the token endpoint refused them"},
	{"130, 143", "interrupted: SIGINT, SIGTERM"},
}

// Environment lists the variables brellium reads; a flag wins over its variable.
var Environment = [][2]string{
	{"BRELLIUM_ACCESS_TOKEN", "the access token, used as is (never a flag: it would show in ps)"},
	{"BRELLIUM_CLIENT_ID, BRELLIUM_CLIENT_SECRET", "client credentials: a token is minted at POST /v2/oauth/token and cached"},
	{"BRELLIUM_BASE_URL", "the API origin (--base-url; default https://api.brellium.com)"},
	{"BRELLIUM_RATE, BRELLIUM_BURST", "the client budget (--rate, --burst; default 5 per second, burst 100)"},
	{"BRELLIUM_LIMITER", "the budget's scope: local, process, off or redis://HOST:PORT/DB (--limiter)"},
	{"BRELLIUM_CACHE_DIR", "the cache folder (default: the user cache folder's brellium)"},
	{"BRELLIUM_BATCH_CLIENT", "fast (default) or net: the HTTP client of batch lines that repeat freely"},
	{"NO_COLOR", "any value turns colour off (--color)"},
	{"GOGC, GOMEMLIMIT", "when set, the collector's own pace and limit (batch and emulator set theirs otherwise)"},
	{"HTTPS_PROXY, HTTP_PROXY, NO_PROXY", "proxies, as Go's net/http reads them"},
}

// Files lists what brellium keeps in its cache folder.
var Files = [][2]string{
	{"$BRELLIUM_CACHE_DIR/tokens/", "minted tokens, one file (0600) per origin and client id, in a private folder (0700)"},
	{"$BRELLIUM_CACHE_DIR/limiter/", "the machine-wide budget's state and lock files (0600), in a private folder (0700)"},
}

// helpTable lays out a table of the help: names in a column, meanings wrapped beside them.
func helpTable(title string, rows [][2]string) string {
	width := 0
	for _, r := range rows {
		width = max(width, len(r[0]))
	}
	var b strings.Builder
	b.WriteString("\n" + title + ":\n")
	for _, r := range rows {
		pad := strings.Repeat(" ", width-len(r[0]))
		b.WriteString(wrap(r[1], strings.Repeat(" ", width+4), explainWidth, "  "+r[0]+pad+"  "))
	}
	return b.String()
}

// withExitCodes ends the root command's help with the exit codes, so that scripts know what to
// branch on.
func withExitCodes(root *cobra.Command) {
	help := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		help(c, args)
		if c == root {
			fmt.Fprint(c.OutOrStdout(), helpTable("Exit codes", ExitStatus))
		}
	})
}
