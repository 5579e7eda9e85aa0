package cmd

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/brellium/brellium/emulator"
)

// TestGeneratedFilesAreFresh fails when the committed completion scripts or man pages differ from
// what the commands generate now: run `go generate ./...` and commit.
func TestGeneratedFilesAreFresh(t *testing.T) {
	files, err := GeneratedFiles()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join("..", name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is stale or missing (%v): run go generate ./... and commit", name, err)
		}
	}
	committed, _ := filepath.Glob(filepath.Join("..", "man", "*.1"))
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
		"bash": {"-n", "../completions/brellium.bash"},
		"zsh":  {"-n", "../completions/brellium.zsh"},
		"fish": {"--no-execute", "../completions/brellium.fish"},
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
