package cmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/brellium/brellium/output"
	"github.com/brellium/brellium/request"
	"github.com/brellium/brellium/retry"
	"github.com/brellium/brellium/retry/limit"
)

// identity names the credential that a budget belongs to, without the secret: the client id,
// or a hash of the static token.
func identity(token string, f *Factory) string {
	if token != "" {
		sum := sha256.Sum256([]byte(token))
		return "token:" + hex.EncodeToString(sum[:8])
	}
	if id := strings.TrimSpace(f.env("BRELLIUM_CLIENT_ID")); id != "" {
		return "client:" + id
	}
	return "anonymous"
}

// budgetKey is the shared budget's name for an origin and identity: a hash, never a token.
func budgetKey(base *url.URL, ident string) string {
	sum := sha256.Sum256([]byte(request.Origin(base) + "\x00" + ident))
	return hex.EncodeToString(sum[:12])
}

// newLimiter builds the client budget for --limiter mode, with the organization's level shared
// where the budget is (see limit.Headroom) and the reserve, and a function that releases it.
func newLimiter(ctx context.Context, f *Factory, mode string, g *GlobalOptions, reserve int, base *url.URL, ident string, logger *output.Logger) (retry.Limiter, func(), error) {
	lim, release, levels, err := newPace(ctx, f, mode, g, base, ident, logger)
	if err != nil || levels == nil {
		return lim, release, err
	}
	return &limit.Headroom{Limiter: lim, Levels: levels, Reserve: reserve, Rate: g.Rate, Burst: g.Burst, Clock: f.Clock,
		Learn: g.RateAuto, MaxRate: maxRate,
		OnPace: func(p limit.Pace) { logger.Pace(p.Why, p.Others, p.Rate, p.Reserve) }}, release, nil
}

// newPace builds the token bucket of --limiter mode and where it keeps the organization's level
// (nil for --limiter off, which paces nothing).
func newPace(ctx context.Context, f *Factory, mode string, g *GlobalOptions, base *url.URL, ident string, logger *output.Logger) (retry.Limiter, func(), limit.Levels, error) {
	warn := func(err error) { logger.Warn(err.Error()) }
	key := budgetKey(base, ident)
	local := func() (*limit.FileLimiter, error) {
		dir, err := cacheDir(f)
		if err != nil {
			return nil, err
		}
		l, err := limit.NewFileLimiter(filepath.Join(dir, "limiter", key+".state"), g.Rate, g.Burst, f.Clock)
		if err != nil {
			return nil, request.Usagef("--limiter local: %v (set BRELLIUM_CACHE_DIR, or use --limiter process)", err)
		}
		l.OnWarn = warn
		return l, nil
	}
	process := func() (retry.Limiter, func(), limit.Levels, error) {
		return limit.NewBucket(g.Rate, g.Burst, f.Clock), func() {}, limit.NewMemLevels(g.Rate, g.Burst, f.Clock), nil
	}
	switch {
	case mode == "off":
		return limit.Off{}, func() {}, nil, nil
	case mode == "process":
		return process()
	case mode == "local":
		l, err := local()
		if err != nil {
			// Pacing this process alone is better than refusing to run.
			warn(fmt.Errorf("%v: pacing this process alone", err))
			return process()
		}
		return l, func() { _ = l.Close() }, l, nil
	}
	r, err := limit.NewRedisLimiter(ctx, mode, key, g.Rate, g.Burst, f.Clock)
	if err != nil {
		return nil, nil, nil, request.Usagef("%v", err)
	}
	r.OnWarn = warn
	closeAll := func() { _ = r.Close() }
	if l, err := local(); err == nil {
		r.Fallback = l
		closeAll = func() { _ = r.Close(); _ = l.Close() }
	}
	return r, closeAll, r, nil
}
