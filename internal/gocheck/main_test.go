package main

import "testing"

func TestAtLeast(t *testing.T) {
	cases := []struct {
		have, floor string
		want        bool
	}{
		{"go1.26.10", "go1.26.10", true}, {"go1.26.12", "go1.26.10", true}, {"go1.27.0", "go1.26.10", true},
		{"go1.26.8", "go1.26.10", false}, {"go1.26", "go1.26.10", false}, {"go1.25.99", "go1.26.10", false},
		{"go1.27rc1", "go1.26.10", true}, {"devel go1.27-abc", "go1.26.10", true}, {"go2.0.0", "go1.26.10", true},
	}
	for _, c := range cases {
		if got := atLeast(c.have, c.floor); got != c.want {
			t.Errorf("atLeast(%s, %s) = %v, want %v", c.have, c.floor, got, c.want)
		}
	}
}
