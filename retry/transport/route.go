package transport

import (
	"context"

	"github.com/brellium/brellium/retry"
)

// Route sends each attempt through Fast when that changes nothing the user can see, and
// through Net otherwise: Fast carries the calls to its origin that the engine repeats whatever
// became of an attempt without an answer (so "sent" need not be exact), without -L, without a
// body read from a file, and without a
// framing header of the user's (Host, Content-Length, Transfer-Encoding), which net/http ignores
// and fasthttp would obey. A nil Fast sends everything through Net.
type Route struct {
	Fast *FastClient
	Net  Net
}

// Send makes one attempt through the sender that fits it.
func (r Route) Send(ctx context.Context, o *retry.Outgoing) (*retry.Response, bool, error) {
	if r.fast(o) {
		return r.Fast.Send(ctx, o)
	}
	return r.Net.Send(ctx, o)
}

func (r Route) fast(o *retry.Outgoing) bool {
	if r.Fast == nil || !o.Free || o.FollowRedirects || o.Spec.File != nil || !r.Fast.Serves(o.Spec.URL) {
		return false
	}
	for _, k := range [...]string{"Host", "Content-Length", "Transfer-Encoding"} {
		if _, set := o.Header[k]; set {
			return false
		}
	}
	return true
}

// CloseIdleConnections closes the idle connections of both senders.
func (r Route) CloseIdleConnections() {
	if r.Fast != nil {
		r.Fast.CloseIdleConnections()
	}
	r.Net.CloseIdleConnections()
}
