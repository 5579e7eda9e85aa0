package cmd

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

	"github.com/brellium/brellium/output"
	"github.com/brellium/brellium/request"
)

// manDate is the date printed in the man pages: fixed, so that regenerating them changes nothing
// unless the commands change. Bump it with the contract version.
var manDate = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

// GeneratedFiles returns the shell completion scripts and man pages, by path relative to the
// repository root: completions/brellium.{bash,zsh,fish,ps1} and man/*.1.
func GeneratedFiles() (map[string][]byte, error) {
	ios, _, _, _ := output.Test()
	root := NewCmdRoot(&Factory{IOStreams: ios, Getenv: func(string) string { return "" }})
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
		files["man/"+strings.ReplaceAll(c.CommandPath(), " ", "-")+".1"] = b.Bytes()
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

// WriteGeneratedFiles writes GeneratedFiles under dir, replacing the man pages that are there.
func WriteGeneratedFiles(dir string) error {
	files, err := GeneratedFiles()
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

// pathCompletion completes the PATH argument with the API's path templates.
func pathCompletion(method string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for _, p := range request.PathTemplates(method) {
			if strings.HasPrefix(p, toComplete) {
				out = append(out, p)
			}
		}
		return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
	}
}
