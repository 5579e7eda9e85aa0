package cmd

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/brellium/brellium/output"
	"github.com/brellium/brellium/request"
	"github.com/brellium/brellium/retry"
)

// paginate GETs every page of a list, each through the engine and the budget like any call, and
// prints the items, one JSON value a line (with --jq, what it makes of each; with --slurp, one
// array of them all). A Brellium list ({"object":"list","data":[…],"has_more":true}) goes on with
// starting_after=<the last item's id>; another API's with its Link: <…>; rel="next". A page that
// fails ends the command with its exit code, after the items already printed, and the hint says
// how to go on from there.
//
// With -o FILE the items go to a temporary file that replaces FILE only once every page has
// arrived, as a single call's whole body does; a page that fails leaves FILE as it was.
func paginate(ctx context.Context, f *Factory, sess *session, o *RequestOptions, spec *request.Spec, out *callOutcome) error {
	dest, _, _, err := openDest(f, o)
	if err != nil {
		return err
	}
	defer dest.discard()
	w := dest.out
	var slurped []any
	emit := func(items []any) error {
		switch {
		case o.Slurp:
			slurped = append(slurped, items...)
			return nil
		case o.query != nil:
			for _, item := range items {
				if err := writeQuery(ctx, w, o.query, item); err != nil {
					return err
				}
			}
			return nil
		}
		if err := output.WriteJSONValues(w, items); err != nil {
			return &retry.StreamWriteError{Err: err}
		}
		return nil
	}
	flush := func() error {
		if !o.Slurp {
			return nil
		}
		if slurped == nil {
			slurped = []any{}
		}
		if o.query != nil {
			return writeQuery(ctx, w, o.query, slurped)
		}
		if err := output.WriteJSONValues(w, []any{slurped}); err != nil {
			return &retry.StreamWriteError{Err: err}
		}
		return nil
	}
	// done ends a list read whole (or up to --max-pages): FILE of -o takes its place now.
	done := func() error {
		if err := flush(); err != nil {
			return err
		}
		return dest.commit()
	}
	page := spec
	for n := 1; ; n++ {
		res, err := sess.engine.Do(ctx, page, sess.policy)
		out.add(res)
		if err == nil && res.Response.Truncated {
			err = request.Usagef("page %d is over %s: too large to read as a list", n, retry.FormatSize(retry.DefaultKeep))
		}
		if err != nil {
			switch {
			case n > 1 && dest.file != nil && !dest.file.direct:
				out.hint = fmt.Sprintf("%d page%s read and not written: -o %s is written only once every page has arrived; run it again, or go on from this page: brellium get %s --paginate",
					n-1, plural(n-1), o.Output, shellJoin([]string{page.Path()}))
			case n > 1:
				out.hint = fmt.Sprintf("%d page%s read; to go on from this page: brellium get %s --paginate", n-1, plural(n-1), shellJoin([]string{page.Path()}))
			}
			_ = flush()
			return err
		}
		items, next, err := pageItems(res.Response, page.URL)
		if err == nil {
			err = emit(items)
		}
		if err != nil {
			_ = flush()
			return err
		}
		if next == nil {
			return done()
		}
		if !request.SameOrigin(next, sess.base) {
			_ = flush()
			return &retry.APIError{Failure: retry.Failure{Method: page.Method, Path: page.Path(), Status: res.Response.Status,
				RequestID: res.Response.RequestID, Reason: "the next page (" + next.Redacted() + ") is on another origin: not followed"}}
		}
		following, err := request.New(sess.base, request.Options{Method: http.MethodGet, Target: next.String(), Headers: o.Headers})
		if err != nil {
			_ = flush()
			return err
		}
		if o.MaxPages > 0 && n >= o.MaxPages {
			out.hint = fmt.Sprintf("stopped after %d pages (--max-pages); the next page: brellium get %s --paginate", n, shellJoin([]string{following.Path()}))
			sess.logger.Warn(out.hint)
			out.hint = ""
			return done()
		}
		page = following
	}
}

// pageItems reads a page: its items and the URL of the next page (nil at the end).
func pageItems(r *retry.Response, at *url.URL) ([]any, *url.URL, error) {
	v, err := output.DecodeJSON(r.Body)
	if err != nil {
		return nil, nil, request.Usagef("--paginate: %v", err)
	}
	var items []any
	hasMore, brelliumList := false, false
	switch x := v.(type) {
	case []any:
		items = x
	case map[string]any:
		if data, ok := x["data"].([]any); ok {
			items = data
			hasMore, brelliumList = x["has_more"] == true, x["has_more"] != nil
		} else {
			items = []any{x}
		}
	default:
		items = []any{x}
	}
	if brelliumList {
		if !hasMore || len(items) == 0 {
			return items, nil, nil
		}
		id, ok := itemID(items[len(items)-1])
		if !ok {
			return items, nil, request.Usagef("--paginate: the list has more, but its last item has no id to go on from")
		}
		next := *at
		q := next.Query()
		q.Set("starting_after", id)
		next.RawQuery = q.Encode()
		return items, &next, nil
	}
	if link := nextLink(r.Header.Values("Link")); link != "" {
		next, err := at.Parse(link)
		if err != nil {
			return items, nil, request.Usagef("--paginate: a Link rel=\"next\" that is not a URL: %q", link)
		}
		return items, next, nil
	}
	return items, nil, nil
}

// itemID is a list item's id: its "id", else "<object>_id" (an audit's audit_id), else its one
// field that ends in _id.
func itemID(item any) (string, bool) {
	m, ok := item.(map[string]any)
	if !ok {
		return "", false
	}
	str := func(k string) (string, bool) {
		s, ok := m[k].(string)
		return s, ok && s != ""
	}
	if id, ok := str("id"); ok {
		return id, true
	}
	if obj, ok := str("object"); ok {
		if id, ok := str(obj + "_id"); ok {
			return id, true
		}
	}
	var ids []string
	for k := range m {
		if strings.HasSuffix(k, "_id") {
			ids = append(ids, k)
		}
	}
	sort.Strings(ids)
	if len(ids) == 1 {
		return str(ids[0])
	}
	return "", false
}

var linkPart = regexp.MustCompile(`<([^>]*)>\s*((?:;\s*[^;,]+)*)`)

// nextLink is the target of rel="next" in RFC 8288 Link headers, or "".
func nextLink(values []string) string {
	for _, v := range values {
		for _, m := range linkPart.FindAllStringSubmatch(v, -1) {
			for _, param := range strings.Split(m[2], ";") {
				k, val, _ := strings.Cut(strings.TrimSpace(param), "=")
				if strings.EqualFold(strings.TrimSpace(k), "rel") {
					for _, rel := range strings.Fields(strings.Trim(strings.TrimSpace(val), `"`)) {
						if strings.EqualFold(rel, "next") {
							return m[1]
						}
					}
				}
			}
		}
	}
	return ""
}
