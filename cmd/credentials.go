package cmd

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/brellium/brellium/output"
	"github.com/brellium/brellium/request"
	"github.com/brellium/brellium/retry"
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
// BRELLIUM_CLIENT_SECRET, or nil when they are not both set. Mints go through the retry engine
// (5xx repeated, at most 3 attempts) paced by the token endpoint's own budget.
func clientCredentials(f *Factory, base *url.URL, logger retry.Sink) (*request.ClientCredentials, error) {
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
		Transport: f.transport(), Clock: f.Clock, Rand: f.Rand, Sink: logger, UserAgent: "brellium/" + Version,
		// The token endpoint's own budget: a burst of 20 per client_id, then one per 10 s.
		Limiter: retry.NewBucket(0.1, 20, f.Clock),
	}
	body, _ := json.Marshal(map[string]string{"grant_type": "client_credentials", "client_id": id, "client_secret": secret})
	mint := func(ctx context.Context) (request.Minted, error) {
		spec, err := request.New(base, request.Options{Method: http.MethodPost, Target: "/v2/oauth/token", Body: body})
		if err != nil {
			return request.Minted{}, err
		}
		p := retry.DefaultPolicy()
		p.Retries = 2
		res, err := engine.Do(ctx, spec, p)
		if err != nil {
			return request.Minted{}, err
		}
		var tok struct {
			AccessToken string  `json:"access_token"`
			ExpiresIn   float64 `json:"expires_in"`
		}
		if json.Unmarshal(res.Response.Body, &tok) != nil || tok.AccessToken == "" || tok.ExpiresIn <= 0 {
			return request.Minted{}, &retry.AuthError{Failure: retry.Failure{Method: spec.Method, Path: spec.Path(),
				Status: res.Response.Status, RequestID: res.Response.RequestID,
				Reason: "the token endpoint's answer has no access_token and expires_in"}}
		}
		return request.Minted{AccessToken: tok.AccessToken, ExpiresIn: time.Duration(tok.ExpiresIn * float64(time.Second))}, nil
	}
	return &request.ClientCredentials{Origin: request.Origin(base), ClientID: id, CacheDir: dir, Mint: mint, Now: clock.Now}, nil
}

// credentials picks the Authorization source: BRELLIUM_ACCESS_TOKEN as is, else the user's own
// -H Authorization, else client credentials, else an auth error that says what to set. The
// hint says what to do when the API refuses the credential.
func credentials(f *Factory, base *url.URL, token string, o *RequestOptions, logger *output.Logger) (retry.Authorizer, string, error) {
	switch {
	case token != "":
		return retry.StaticToken(token), staticTokenHint, nil
	case hasHeader(o.Headers, "Authorization"):
		return nil, "", nil
	}
	cc, err := clientCredentials(f, base, logger)
	if err != nil {
		return nil, "", err
	}
	if cc != nil {
		return cc, "the token was refused again after one re-mint: check BRELLIUM_CLIENT_ID and BRELLIUM_CLIENT_SECRET", nil
	}
	return nil, "", errNoCredentials(o.Method, o.Target)
}

func errNoCredentials(method, path string) error {
	return &retry.AuthError{Failure: retry.Failure{Method: method, Path: path,
		Reason: "no credentials: set BRELLIUM_ACCESS_TOKEN, or BRELLIUM_CLIENT_ID and BRELLIUM_CLIENT_SECRET (or try --emulator)"}}
}

func hasHeader(headers []string, name string) bool {
	for _, h := range headers {
		if n, _, ok := strings.Cut(h, ":"); ok && strings.EqualFold(strings.TrimSpace(n), name) {
			return true
		}
	}
	return false
}
