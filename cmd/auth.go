package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/brellium/brellium/auth"
	"github.com/brellium/brellium/output"
	"github.com/brellium/brellium/request"
	"github.com/brellium/brellium/retry/transport"
)

// NewCmdAuth builds `brellium auth token|status|logout`.
func NewCmdAuth(f *Factory, g *GlobalOptions) *cobra.Command {
	c := &cobra.Command{
		Use:   "auth",
		Short: "Show, print or forget the access token",
		Long: `Credentials come from BRELLIUM_ACCESS_TOKEN (used as is), else from BRELLIUM_CLIENT_ID and
BRELLIUM_CLIENT_SECRET: a token is minted with POST /v2/oauth/token, cached in the cache
folder (BRELLIUM_CACHE_DIR; folder 0700, file 0600) and reused until a minute before it
expires, by this and every later brellium process.`,
	}
	run := func(name, short, example string, fn func(context.Context, *Factory, *GlobalOptions) error) *cobra.Command {
		sub := &cobra.Command{
			Use: name, Short: short, Example: example, Args: exactArgs(0, "no arguments"),
			RunE: func(c *cobra.Command, _ []string) error {
				if err := g.resolve(c, f); err != nil {
					return err
				}
				return fn(c.Context(), f, g)
			},
		}
		g.addFlags(sub, baseFlag)
		return sub
	}
	c.AddCommand(
		run("token", "Print a valid access token, minting one if needed (for other tools)",
			`  curl -H "Authorization: Bearer $(brellium auth token)" https://api.brellium.com/v2/audits?limit=1`, runAuthToken),
		run("status", "Say where the token comes from and when it expires (never the token)", `  brellium auth status`, runAuthStatus),
		run("logout", "Remove the cached token", `  brellium auth logout`, runAuthLogout),
	)
	return c
}

// authSource returns the static token, or the client credentials, for the base URL.
func authSource(f *Factory, g *GlobalOptions) (token string, cc *auth.ClientCredentials, err error) {
	base, err := request.ParseBaseURL(g.BaseURL)
	if err != nil {
		return "", nil, err
	}
	t, err := accessToken(f)
	if err != nil {
		return "", nil, err
	}
	if t != "" {
		return t, nil, request.CheckCredentialsTransport(base)
	}
	logger := output.NewLogger(f.IOStreams, output.LogOptions{Format: "text", Silent: true, Secrets: f.Secrets()})
	cc, err = clientCredentials(f, base, logger, transport.Net{Transport: f.transport()})
	return "", cc, err
}

func runAuthToken(ctx context.Context, f *Factory, g *GlobalOptions) error {
	token, cc, err := authSource(f, g)
	if err != nil {
		return err
	}
	if cc != nil {
		if token, err = cc.Token(ctx); err != nil {
			return err
		}
	}
	if token == "" {
		return errNoCredentials(f, "auth", "token")
	}
	_, err = fmt.Fprintln(f.IOStreams.Out, token)
	return err
}

func runAuthStatus(_ context.Context, f *Factory, g *GlobalOptions) error {
	token, cc, err := authSource(f, g)
	if err != nil {
		return err
	}
	w := f.IOStreams.Out
	fmt.Fprintf(w, "base URL: %s\n", g.BaseURL)
	switch {
	case token != "":
		fmt.Fprintln(w, "source: BRELLIUM_ACCESS_TOKEN (used as is; it cannot be re-minted)")
	case cc != nil:
		fmt.Fprintf(w, "source: client credentials (BRELLIUM_CLIENT_ID %s)\n", cc.ClientID)
		s := cc.Status()
		fmt.Fprintf(w, "cache: %s\n", s.Path)
		switch {
		case !s.Cached:
			fmt.Fprintln(w, "token: none cached; the next call mints one")
		case s.Valid:
			fmt.Fprintf(w, "token: cached, expires %s (in %s)\n", s.ExpiresAt.Format(time.RFC3339), time.Until(s.ExpiresAt).Round(time.Second))
		default:
			fmt.Fprintf(w, "token: cached but expired or about to (%s); the next call mints one\n", s.ExpiresAt.Format(time.RFC3339))
		}
	default:
		fmt.Fprintln(w, "source: none")
		return errNoCredentials(f, "auth", "status")
	}
	return nil
}

func runAuthLogout(_ context.Context, f *Factory, g *GlobalOptions) error {
	token, cc, err := authSource(f, g)
	if err != nil {
		return err
	}
	if cc == nil {
		if token != "" {
			fmt.Fprintln(f.IOStreams.Out, "nothing cached: BRELLIUM_ACCESS_TOKEN is used as is (unset it to log out)")
			return nil
		}
		return errNoCredentials(f, "auth", "logout")
	}
	removed, err := cc.Logout()
	if err != nil {
		return fmt.Errorf("removing %s: %w", cc.CachePath(), err)
	}
	if removed {
		fmt.Fprintf(f.IOStreams.Out, "removed the cached token for %s at %s\n", cc.ClientID, g.BaseURL)
	} else {
		fmt.Fprintln(f.IOStreams.Out, "no cached token")
	}
	return nil
}
