package cmd

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/brellium/brellium/emulator"
	"github.com/brellium/brellium/output"
	"github.com/brellium/brellium/request"
	"github.com/brellium/brellium/retry"
	"github.com/brellium/brellium/retry/transport"
)

// session is what a command needs to send calls: the engine with its sender, limiter,
// credentials and logger, the base URL and the policy, and the emulator when --emulator started
// one.
type session struct {
	base   *url.URL
	engine *retry.Engine
	net    transport.Net
	logger *output.Logger
	policy retry.Policy
	// tokenHint says what to do when the API refuses the token.
	tokenHint string
	close     func()
}

// sessionExtras are what a batch adds to the engine: a retry budget, a circuit breaker, and a
// reserve kept by default.
type sessionExtras struct {
	budget retry.Budget
	gate   retry.Gate
	// reserveByDefault keeps defaultReserve when --reserve is not given; a single call keeps 0.
	reserveByDefault bool
}

// newSession sets up the engine for o. Every error is a usage or auth error.
func newSession(ctx context.Context, f *Factory, g *GlobalOptions, o *RequestOptions, logger *output.Logger, extras sessionExtras) (*session, error) {
	s := &session{logger: logger, close: func() {}}
	fail := func(err error) (*session, error) {
		s.close()
		return nil, err
	}
	baseRaw := g.BaseURL
	token, err := accessToken(f)
	if err != nil {
		return nil, err
	}
	if o.Emulator {
		em, err := emulator.Start("127.0.0.1:0", emulator.DefaultConfig())
		if err != nil {
			return nil, fmt.Errorf("starting the emulator: %w", err)
		}
		s.close = func() {
			c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = em.Close(c)
		}
		baseRaw, token = em.URL, "sandbox"
	}
	base, err := request.ParseBaseURL(baseRaw)
	if err != nil {
		return fail(err)
	}
	s.base = base
	s.net = transport.Net{Transport: f.transport()}
	auth, hint, err := credentials(f, base, token, o, logger, s.net)
	if err != nil {
		return fail(err)
	}
	if auth != nil || hasHeader(o.Headers, "Authorization") {
		if err := request.CheckCredentialsTransport(base); err != nil {
			return fail(err)
		}
	}
	s.tokenHint = hint
	mode := g.Limiter
	if o.Emulator && mode == "local" {
		mode = "process" // an in-process emulator's budget lives and dies with this process
	}
	reserve := g.Reserve
	if reserve < 0 {
		reserve = 0
		if extras.reserveByDefault {
			reserve = defaultReserve(g.Burst)
		}
	}
	limiter, closeLimiter, err := newLimiter(ctx, f, mode, g, reserve, base, identity(token, f), logger)
	if err != nil {
		return fail(err)
	}
	closeEmulator := s.close
	s.close = func() {
		s.net.CloseIdleConnections()
		closeLimiter()
		closeEmulator()
	}
	s.engine = &retry.Engine{
		Sender: s.net, Limiter: limiter, Clock: f.Clock, Rand: f.Rand,
		Sink: logger, Auth: auth, UserAgent: "brellium/" + Version,
		Budget: extras.budget, Gate: extras.gate,
	}
	s.policy = policyOf(o)
	return s, nil
}

// policyOf is the retry policy that the flags of a call set.
func policyOf(o *RequestOptions) retry.Policy {
	return retry.Policy{
		Retries: o.Retry, MaxTime: time.Duration(o.MaxTime), Timeout: time.Duration(o.Timeout),
		BackoffBase: time.Duration(o.BackoffBase), BackoffCap: time.Duration(o.BackoffCap),
		FollowRedirects: o.Location,
	}
}
