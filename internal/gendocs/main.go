// Command gendocs writes brellium's shell completion scripts (completions/) and man pages (man/).
// Run it from the repository root: go generate ./... (or go run ./internal/gendocs). It lives
// here, not in cmd, so that the brellium binary does not carry the man page renderer.
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/brellium/brellium/cmd"
	"github.com/brellium/brellium/output"
)

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := writeGeneratedFiles(dir); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

// manDate is the date printed in the man pages: fixed, so that regenerating them changes nothing
// unless the commands change. Bump it with the contract version.
var manDate = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

// generatedFiles returns the shell completion scripts and man pages, by path relative to the
// repository root: completions/brellium.{bash,zsh,fish,ps1} and man/*.1.
func generatedFiles() (map[string][]byte, error) {
	ios, _, _, _ := output.Test()
	root := cmd.NewCmdRoot(&cmd.Factory{IOStreams: ios, Getenv: func(string) string { return "" }})
	root.DisableAutoGenTag = true
	files := map[string][]byte{}
	gens := map[string]func(*bytes.Buffer) error{
		"completions/brellium.bash": func(b *bytes.Buffer) error { return root.GenBashCompletionV2(b, true) },
		"completions/brellium.zsh":  func(b *bytes.Buffer) error { return root.GenZshCompletion(b) },
		"completions/brellium.fish": func(b *bytes.Buffer) error { return root.GenFishCompletion(b, true) },
		"completions/brellium.ps1":  func(b *bytes.Buffer) error { return root.GenPowerShellCompletionWithDesc(b) },
	}
	for name, gen := range gens {
		var b bytes.Buffer
		if err := gen(&b); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		files[name] = b.Bytes()
	}
	header := &doc.GenManHeader{Title: "BRELLIUM", Section: "1", Date: &manDate, Source: "brellium", Manual: "brellium manual"}
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		if !c.IsAvailableCommand() && c != root {
			return nil
		}
		var b bytes.Buffer
		if err := doc.GenMan(c, header, &b); err != nil {
			return err
		}
		files["man/"+strings.ReplaceAll(c.CommandPath(), " ", "-")+".1"] = withSections(b.Bytes())
		for _, sub := range c.Commands() {
			if err := walk(sub); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root); err != nil {
		return nil, err
	}
	return files, nil
}

// writeGeneratedFiles writes generatedFiles under dir, replacing the man pages that are there.
func writeGeneratedFiles(dir string) error {
	files, err := generatedFiles()
	if err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(dir, "man", "*.1"))
	for _, p := range old {
		_ = os.Remove(p)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[n], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// withSections adds EXIT STATUS, ENVIRONMENT and FILES to a man page, before SEE ALSO.
func withSections(page []byte) []byte {
	var b bytes.Buffer
	for _, sec := range []struct {
		title string
		rows  [][2]string
	}{{"EXIT STATUS", cmd.ExitStatus}, {"ENVIRONMENT", cmd.Environment}, {"FILES", cmd.Files}} {
		b.WriteString(".SH " + sec.title + "\n")
		for _, r := range sec.rows {
			fmt.Fprintf(&b, ".TP\n\\fB%s\\fP\n%s\n", roff(r[0]), roff(r[1]))
		}
	}
	if i := bytes.Index(page, []byte(".SH SEE ALSO")); i >= 0 {
		return append(append(append([]byte(nil), page[:i]...), b.Bytes()...), page[i:]...)
	}
	return append(page, b.Bytes()...)
}

// roff escapes text for a man page: backslashes, and a leading dot or quote.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return strings.ReplaceAll(s, "-", `\-`)
}
