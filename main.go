//go:generate go run ./internal/gendocs

// Command brellium is a curl-like client for the Brellium API and rate-limited JSON APIs.
package main

import (
	"os"

	"github.com/brellium/brellium/cmd"
)

func main() { os.Exit(cmd.Execute(os.Args[1:])) }
