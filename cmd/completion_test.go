package cmd

import (
	"bytes"
	"testing"

	"github.com/brellium/brellium/emulator"
)

func TestPathCompletion(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	r := h.runArgs([]string{"__complete", "get", "/v2/au"})
	for _, want := range []string{"/v2/audits/", "/v2/audits?limit="} {
		if !bytes.Contains([]byte(r.out), []byte(want)) {
			t.Errorf("completing get /v2/au does not offer %s:\n%s", want, r.out)
		}
	}
	r = h.runArgs([]string{"__complete", "request", "P"})
	if !bytes.Contains([]byte(r.out), []byte("PATCH")) || !bytes.Contains([]byte(r.out), []byte("POST")) {
		t.Errorf("completing request P:\n%s", r.out)
	}
	r = h.runArgs([]string{"__complete", "get", "/x", "--limiter", ""})
	if !bytes.Contains([]byte(r.out), []byte("process")) {
		t.Errorf("completing --limiter:\n%s", r.out)
	}
}
