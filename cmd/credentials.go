package cmd

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/brellium/brellium/auth"
	"github.com/brellium/brellium/output"
	"github.com/brellium/brellium/request"
	"github.com/brellium/brellium/retry"
	"github.com/brellium/brellium/retry/limit"
)

// staticTokenHint is what to do when the API refuses BRELLIUM_ACCESS_TOKEN.
const staticTokenHint = "BRELLIUM_ACCESS_TOKEN was refused: set a valid token, or unset it to mint one from BRELLIUM_CLIENT_ID and BRELLIUM_CLIENT_SECRET"

// cacheDir is BRELLIUM_CACHE_DIR, else os.UserCacheDir()/brellium.
func cacheDir(f *Factory) (string, error) {
	if d := strings.TrimSpace(f.env("BRELLIUM_CACHE_DIR")); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", request.Usagef("no cache folder: set BRELLIUM_CACHE_DIR (%v)", err)
	}
	return filepath.Join(d, "brellium"), nil
}

// clientCredentials returns the minting credential from BRELLIUM_CLIENT_ID and
// BRELLIUM_CLIENT_SECRET, or nil when they are not both set. Mints go through an engine of their
// own, paced by the token endpoint's own budget.
func clientCredentials(f *Factory, base *url.URL, logger retry.Sink, sender retry.Sender) (*auth.ClientCredentials, error) {
	id, secret := strings.TrimSpace(f.env("BRELLIUM_CLIENT_ID")), f.env("BRELLIUM_CLIENT_SECRET")
	if id == "" || secret == "" {
		return nil, nil
	}
	if err := request.CheckCredentialsTransport(base); err != nil {
		return nil, err
	}
	dir, err := cacheDir(f)
	if err != nil {
		return nil, err
	}
	var clock retry.Clock = retry.SystemClock{}
	if f.Clock != nil {
		clock = f.Clock
	}
	engine := &retry.Engine{
		Sender: sender, Clock: f.Clock, Rand: f.Rand, Sink: logger, UserAgent: "brellium/" + Version,
		Limiter: limit.NewBucket(auth.TokenRate, auth.TokenBurst, f.Clock),
	}
	cc := auth.NewClientCredentials(auth.Config{Base: base, ClientID: id, Secret: secret, CacheDir: dir, Engine: engine, Now: clock.Now})
	cc.OnToken = f.Secrets().Add // a minted token is scrubbed from everything printed
	return cc, nil
}

// credentials picks the Authorization source: BRELLIUM_ACCESS_TOKEN as is, else the user's own
// -H Authorization, else client credentials, else an auth error that says what to set. The
// hint says what to do when the API refuses the credential.
func credentials(f *Factory, base *url.URL, token string, o *RequestOptions, logger *output.Logger, sender retry.Sender) (retry.Authorizer, string, error) {
	switch {
	case token != "":
		return auth.StaticToken(token), staticTokenHint, nil
	case hasHeader(o.Headers, "Authorization"):
		return nil, "", nil
	}
	cc, err := clientCredentials(f, base, logger, sender)
	if err != nil {
		return nil, "", err
	}
	if cc != nil {
		return cc, "the token was refused again after one re-mint: check BRELLIUM_CLIENT_ID and BRELLIUM_CLIENT_SECRET", nil
	}
	return nil, "", errNoCredentials(f, o.Method, o.Target)
}

// errNoCredentials says which credential is missing: the secret or the id of a pair half set,
// else all of them.
func errNoCredentials(f *Factory, method, path string) error {
	id, secret := strings.TrimSpace(f.env("BRELLIUM_CLIENT_ID")) != "", f.env("BRELLIUM_CLIENT_SECRET") != ""
	why := "no credentials: set BRELLIUM_ACCESS_TOKEN, or BRELLIUM_CLIENT_ID and BRELLIUM_CLIENT_SECRET (or try --emulator)"
	switch {
	case id && !secret:
		why = "BRELLIUM_CLIENT_ID is set but BRELLIUM_CLIENT_SECRET is not: set both to mint a token (or set BRELLIUM_ACCESS_TOKEN)"
	case secret && !id:
		why = "BRELLIUM_CLIENT_SECRET is set but BRELLIUM_CLIENT_ID is not: set both to mint a token (or set BRELLIUM_ACCESS_TOKEN)"
	}
	return &retry.AuthError{Failure: retry.Failure{Method: method, Path: path, Reason: why}}
}

func hasHeader(headers []string, name string) bool {
	for _, h := range headers {
		if n, _, ok := strings.Cut(h, ":"); ok && strings.EqualFold(strings.TrimSpace(n), name) {
			return true
		}
	}
	return false
}

// accessToken is BRELLIUM_ACCESS_TOKEN, refused when a header could not carry it (never quoting
// it).
func accessToken(f *Factory) (string, error) {
	t := strings.TrimSpace(f.env("BRELLIUM_ACCESS_TOKEN"))
	if !request.ValidHeaderValue(t) {
		return "", request.Usagef("BRELLIUM_ACCESS_TOKEN holds a line break or another control character, which no header can carry: set it to the token alone")
	}
	return t, nil
}
