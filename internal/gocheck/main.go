// Command gocheck fails when the Go toolchain that builds it is older than the version named on
// its command line (go1.26.10): the release runs it first, so that no release ships without the
// standard library's fixes.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./internal/gocheck go1.26.10")
		os.Exit(2)
	}
	if !atLeast(runtime.Version(), os.Args[1]) {
		fmt.Fprintf(os.Stderr, "gocheck: built with %s, older than %s: set GOTOOLCHAIN=auto (or install %s)\n", runtime.Version(), os.Args[1], os.Args[1])
		os.Exit(1)
	}
}

// atLeast reports whether Go version have (go1.26.10) is floor or newer; a development build
// (devel …) counts as newer.
func atLeast(have, floor string) bool {
	if strings.HasPrefix(have, "devel") {
		return true
	}
	h, f := parts(have), parts(floor)
	for i := range 3 {
		if h[i] != f[i] {
			return h[i] > f[i]
		}
	}
	return true
}

// parts reads go1.26.10 (or go1.26, go1.27rc1) as 1, 26, 10; a pre-release counts as .0.
func parts(v string) [3]int {
	var p [3]int
	for i, s := range strings.SplitN(strings.TrimPrefix(v, "go"), ".", 3) {
		s = strings.FieldsFunc(s, func(r rune) bool { return r < '0' || r > '9' })[0]
		p[i], _ = strconv.Atoi(s)
	}
	return p
}
