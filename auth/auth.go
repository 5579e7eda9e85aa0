// Package auth holds the credentials brellium sends: a static bearer token, or client
// credentials whose tokens are minted at the token endpoint, cached for every process and
// re-minted after a 401. It never prints, reads flags or environment variables, or exits.
package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/brellium/brellium/request"
	"github.com/brellium/brellium/retry"
)

// StaticToken is a bearer token used as is; it cannot be renewed.
type StaticToken string

// Authorization returns "Bearer TOKEN", or "" for an empty token.
func (t StaticToken) Authorization(context.Context) (string, error) {
	if t == "" {
		return "", nil
	}
	return "Bearer " + string(t), nil
}

// Renewable is false: a static token cannot be re-minted.
func (StaticToken) Renewable() bool { return false }

// Renew fails: a static token cannot be re-minted.
func (StaticToken) Renew(context.Context) error {
	return errors.New("a static access token cannot be renewed")
}

// The token endpoint: where tokens are minted, and its own budget of a burst of 20 requests per
// client_id, then one every 10 s. A mint's engine should be paced by that budget.
const (
	TokenPath  = "/v2/oauth/token"
	TokenBurst = 20
	TokenRate  = 0.1
)

// Config is what client credentials need.
type Config struct {
	// Base is the API's origin; tokens are minted at Base + TokenPath.
	Base             *url.URL
	ClientID, Secret string
	// CacheDir is the cache folder shared by every process.
	CacheDir string
	// Engine sends the mints (5xx repeated, at most 3 attempts: the endpoint table's rule).
	Engine *retry.Engine
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// NewClientCredentials returns the client credentials of cfg, minting at the token endpoint:
// POST {"grant_type":"client_credentials","client_id":…,"client_secret":…}, answered by
// {"access_token":…,"token_type":"Bearer","expires_in":SECONDS}.
func NewClientCredentials(cfg Config) *ClientCredentials {
	body, _ := json.Marshal(map[string]string{"grant_type": "client_credentials", "client_id": cfg.ClientID, "client_secret": cfg.Secret})
	mint := func(ctx context.Context) (Minted, error) {
		spec, err := request.New(cfg.Base, request.Options{Method: http.MethodPost, Target: TokenPath, Body: body})
		if err != nil {
			return Minted{}, err
		}
		p := retry.DefaultPolicy()
		p.Retries = 2
		res, err := cfg.Engine.Do(ctx, spec, p)
		if err != nil {
			return Minted{}, err
		}
		return parseMinted(spec, res.Response)
	}
	return &ClientCredentials{Origin: request.Origin(cfg.Base), ClientID: cfg.ClientID, CacheDir: cfg.CacheDir, Mint: mint, Now: cfg.Now}
}

// parseMinted reads the token endpoint's answer.
func parseMinted(spec *request.Spec, r *retry.Response) (Minted, error) {
	var tok struct {
		AccessToken string  `json:"access_token"`
		ExpiresIn   float64 `json:"expires_in"`
	}
	if json.Unmarshal(r.Body, &tok) != nil || tok.AccessToken == "" || !(tok.ExpiresIn > 0) {
		return Minted{}, &retry.AuthError{Failure: retry.Failure{Method: spec.Method, Path: spec.Path(),
			Status: r.Status, RequestID: r.RequestID,
			Reason: "the token endpoint's answer has no access_token and expires_in"}}
	}
	if !request.ValidHeaderValue(tok.AccessToken) {
		return Minted{}, &retry.AuthError{Failure: retry.Failure{Method: spec.Method, Path: spec.Path(),
			Status: r.Status, RequestID: r.RequestID,
			Reason: "the token endpoint's access_token holds a line break or another control character, which no header can carry"}}
	}
	// A life past MaxTokenLife (1e300 seconds, say) is cut there.
	if tok.ExpiresIn > MaxTokenLife.Seconds() {
		tok.ExpiresIn = MaxTokenLife.Seconds()
	}
	return Minted{AccessToken: tok.AccessToken, ExpiresIn: time.Duration(tok.ExpiresIn * float64(time.Second))}, nil
}
