// Command gendocs writes brellium's shell completion scripts (completions/) and man pages (man/).
// Run it from the repository root: go generate ./... (or go run ./internal/gendocs).
package main

import (
	"fmt"
	"os"

	"github.com/brellium/brellium/cmd"
)

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := cmd.WriteGeneratedFiles(dir); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}
