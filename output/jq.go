package output

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/itchyny/gojq"
)

// Query is a jq expression (github.com/itchyny/gojq), compiled once: --jq, and --until.
type Query struct {
	src  string
	code *gojq.Code
}

// ParseQuery compiles a jq expression; a bad one is an error that says where.
func ParseQuery(src string) (*Query, error) {
	q, err := gojq.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("invalid jq expression %q: %v", src, err)
	}
	code, err := gojq.Compile(q, gojq.WithEnvironLoader(func() []string { return nil }))
	if err != nil {
		return nil, fmt.Errorf("invalid jq expression %q: %v", src, err)
	}
	return &Query{src: src, code: code}, nil
}

// String returns the expression.
func (q *Query) String() string { return q.src }

// DecodeJSON reads a JSON document as jq sees it: numbers kept exact.
func DecodeJSON(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the body is not JSON: %v", err)
	}
	return v, nil
}

// Run runs the expression on v and returns its results.
func (q *Query) Run(ctx context.Context, v any) ([]any, error) {
	var out []any
	iter := q.code.RunWithContext(ctx, v)
	for {
		r, ok := iter.Next()
		if !ok {
			return out, nil
		}
		if err, isErr := r.(error); isErr {
			if he, halt := err.(*gojq.HaltError); halt && he.Value() == nil {
				return out, nil
			}
			return out, fmt.Errorf("jq %s: %v", q.src, err)
		}
		out = append(out, r)
	}
}

// Holds reports whether the expression's last result on v is true (not false or null).
func (q *Query) Holds(ctx context.Context, v any) (bool, error) {
	rs, err := q.Run(ctx, v)
	if err != nil || len(rs) == 0 {
		return false, err
	}
	last := rs[len(rs)-1]
	return last != nil && last != false, nil
}

// WriteValues writes each value on a line of its own: a string raw, anything else as JSON.
func WriteValues(w io.Writer, values []any) error {
	var b []byte
	for _, v := range values {
		if s, ok := v.(string); ok {
			b = append(b, s...)
		} else {
			j, _ := gojq.Marshal(v)
			b = append(b, j...)
		}
		b = append(b, '\n')
	}
	_, err := w.Write(b)
	return err
}

// WriteJSONValues writes each value as JSON on a line of its own, strings included.
func WriteJSONValues(w io.Writer, values []any) error {
	var b []byte
	for _, v := range values {
		j, _ := gojq.Marshal(v)
		b = append(append(b, j...), '\n')
	}
	_, err := w.Write(b)
	return err
}
