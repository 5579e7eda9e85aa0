//go:build unix

package cmd

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brellium/brellium/emulator"
)

// -o FILE that is not a regular file is written, never replaced: `-o /dev/null` is the daily
// curl idiom (with -w), and a FIFO feeds another program. The same code path serves both; a FIFO
// is the one a test can make without privileges.
func TestOutputToAFIFOWritesIntoIt(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	fifo := filepath.Join(t.TempDir(), "answers")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- string(b)
	}()
	r := h.run("get", "/v2/audits/"+emulator.SampleAuditID, "-o", fifo, "-w", "%{http_code}")
	if r.code != 0 || r.out != "200" {
		t.Fatalf("exit %d, stdout %q\n%s", r.code, r.out, r.errOut)
	}
	select {
	case body := <-got:
		if !strings.Contains(body, `"audit_id":"`+emulator.SampleAuditID+`"`) {
			t.Fatalf("the FIFO's reader got %q", body)
		}
	case <-time.After(10 * time.Second): // not a timing check: a reader nobody writes to waits forever
		t.Fatal("nothing was written into the FIFO")
	}
	st, err := os.Lstat(fifo)
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v %v", st.Mode(), err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(fifo)); len(entries) != 1 {
		t.Fatalf("files left in the folder: %v", entries)
	}
}

// -o LINK replaces the file the link points at and keeps the link; a replaced file keeps its
// mode; a read-only file, a missing folder and a folder are refused before anything is sent,
// and the message names FILE, not the temporary file.
func TestOutputFileKeepsLinksAndModes(t *testing.T) {
	h := newHarness(t, emulator.Config{})
	sample := "/v2/audits/" + emulator.SampleAuditID
	dir := t.TempDir()
	target := filepath.Join(dir, "results", "audit.json")
	_ = os.Mkdir(filepath.Dir(target), 0o700)
	if err := os.WriteFile(target, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(target, 0o640)
	link := filepath.Join(dir, "latest.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if r := h.run("get", sample, "-o", link); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.errOut)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", st.Mode(), err)
	}
	st, err := os.Stat(target)
	if b, _ := os.ReadFile(target); err != nil || !strings.Contains(string(b), `"audit_id"`) || st.Mode().Perm() != 0o640 {
		t.Fatalf("target %q, mode %v, %v", b, st.Mode(), err)
	}
	// A link to a file not made yet: the file is made, the link stays.
	dangling := filepath.Join(dir, "next.json")
	if err := os.Symlink(filepath.Join(dir, "results", "new.json"), dangling); err != nil {
		t.Fatal(err)
	}
	if r := h.run("get", sample, "-o", dangling); r.code != 0 {
		t.Fatalf("-o DANGLING-LINK: exit %d\n%s", r.code, r.errOut)
	}
	if st, err := os.Lstat(dangling); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the dangling link was replaced: %v %v", st.Mode(), err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "results", "new.json")); !strings.Contains(string(b), `"audit_id"`) {
		t.Fatalf("the link's target holds %q", b)
	}
	before := h.em.Stats().Requests
	if os.Geteuid() != 0 { // root may write any file
		ro := filepath.Join(dir, "kept.json")
		_ = os.WriteFile(ro, []byte("kept"), 0o444)
		r := h.run("get", sample, "-o", ro)
		if b, _ := os.ReadFile(ro); r.code != 2 || !strings.Contains(r.errOut, "permission denied") || string(b) != "kept" || h.em.Stats().Requests != before {
			t.Fatalf("-o READ-ONLY: exit %d, file %q\n%s", r.code, b, r.errOut)
		}
	}
	missing := filepath.Join(dir, "no-such-folder", "a.json")
	if r := h.run("get", sample, "-o", missing); r.code != 2 || !strings.Contains(r.errOut, "-o "+missing+": no such file or directory") {
		t.Fatalf("-o in a missing folder: exit %d\n%s", r.code, r.errOut)
	}
	r := h.run("get", sample, "-o", dir)
	if r.code != 2 || !strings.Contains(r.errOut, "is a directory") || h.em.Stats().Requests != before {
		t.Fatalf("-o DIR: exit %d, %d requests sent\n%s", r.code, h.em.Stats().Requests-before, r.errOut)
	}
}

// -o /dev/stdout (or a link to it) with stdout sent to a file (`>>` here) writes into what the
// shell opened: a rename would replace the file and lose what it held, and batch's truncation
// would empty it.
func TestOutputToDevStdoutKeepsTheShellsFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	em := startEmulator(t, emulator.Config{})
	link := filepath.Join(t.TempDir(), "out")
	if err := os.Symlink("/dev/stdout", link); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	_ = os.WriteFile(in, []byte("GET /v2/audits/"+emulator.SampleAuditID+"\n"), 0o600)
	runs := [][]string{
		{"get", "/v2/audits/" + emulator.SampleAuditID, "-s", "-o", "/dev/stdout"},
		{"get", "/v2/audits/" + emulator.SampleAuditID, "-s", "-o", link},
		{"batch", in, "-s", "-o", "/dev/stdout"},
		// With a journal, -o FILE is read back for the lines it holds: never a stream.
		{"batch", in, "-s", "-o", "/dev/stdout", "--journal", filepath.Join(dir, "j")},
	}
	for _, args := range runs {
		log := filepath.Join(t.TempDir(), "log.txt")
		if err := os.WriteFile(log, []byte("earlier\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		c := exec.Command(bin, args...)
		c.Env = append(os.Environ(), "BRELLIUM_BASE_URL="+em.URL, "BRELLIUM_ACCESS_TOKEN=t", "BRELLIUM_LIMITER=off")
		c.Stdout = f
		err = c.Run()
		_ = f.Close()
		b, _ := os.ReadFile(log)
		if err != nil || !strings.HasPrefix(string(b), "earlier\n{") || !strings.Contains(string(b), `audit_id`) {
			t.Fatalf("%v: %v: the file holds %q", args, err, b)
		}
	}
}

// The names of files already open are streams; a regular file that merely lives under /dev
// (/dev/shm) is not.
func TestNamesOfOpenFiles(t *testing.T) {
	for path, want := range map[string]bool{
		"/dev/stdout": true, "/dev/stderr": true, "/dev/fd/1": true, "/proc/self/fd/1": true, "/proc/123/fd/4": true,
		"/dev/shm/results.jsonl": false, "/proc/self/status": false, "/tmp/x": false, "/dev/stdoutx": false,
	} {
		if namesAnOpenFile(path) != want {
			t.Errorf("%s: %v", path, !want)
		}
	}
}
