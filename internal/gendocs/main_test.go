package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedFilesAreFresh fails when the committed completion scripts or man pages differ from
// what the commands generate now: run `go generate ./...` and commit.
func TestGeneratedFilesAreFresh(t *testing.T) {
	files, err := generatedFiles()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join("..", "..", name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is stale or missing (%v): run go generate ./... and commit", name, err)
		}
	}
	committed, _ := filepath.Glob(filepath.Join("..", "..", "man", "*.1"))
	for _, p := range committed {
		if _, ok := files[filepath.Join("man", filepath.Base(p))]; !ok {
			t.Errorf("%s documents a command that no longer exists: run go generate ./...", p)
		}
	}
}

// TestCompletionScriptsParse checks each script with its shell's syntax check, for the shells
// that are installed (bash always is).
func TestCompletionScriptsParse(t *testing.T) {
	for shell, args := range map[string][]string{
		"bash": {"-n", "../../completions/brellium.bash"},
		"zsh":  {"-n", "../../completions/brellium.zsh"},
		"fish": {"--no-execute", "../../completions/brellium.fish"},
	} {
		if _, err := exec.LookPath(shell); err != nil {
			t.Logf("%s not installed: its completion script was not parsed", shell)
			continue
		}
		if out, err := exec.Command(shell, args...).CombinedOutput(); err != nil {
			t.Errorf("%s %v: %v\n%s", shell, args, err, out)
		}
	}
}
