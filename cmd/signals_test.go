package cmd

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brellium/brellium/emulator"
)

// startWaiting starts `brellium get` against an emulator that answers 429 Retry-After 10, and
// returns once brellium is in its wait.
func startWaiting(t *testing.T) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	bin := buildBinary(t)
	em := startEmulator(t, emulator.Config{})
	em.Script(emulator.Fault{Status: 429, Code: "RATE_LIMITED", Times: 10, Headers: map[string]string{"Retry-After": "10"}})
	c := exec.Command(bin, "get", "/v2/audits/"+emulator.SampleAuditID, "--limiter", "off", "--log-format", "json")
	c.Env = append(os.Environ(), "BRELLIUM_BASE_URL="+em.URL, "BRELLIUM_ACCESS_TOKEN=t")
	stderr, _ := c.StderrPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), `"decision":"retry"`) {
			break
		}
	}
	go func() {
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
		}
	}()
	return c, &log
}

func TestSignalDuringAWaitEndsTheCallAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		c, log := startWaiting(t)
		sent := time.Now()
		_ = c.Process.Signal(tc.sig)
		err := c.Wait()
		took := time.Since(sent)
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != tc.code {
			t.Fatalf("%v: exit %d, want %d\n%s", tc.sig, code, tc.code, log.String())
		}
		if took > 200*time.Millisecond {
			t.Errorf("%v during a 10 s wait ended the call after %v, want within 200 ms", tc.sig, took)
		}
		t.Logf("%v during a Retry-After wait: exit %d after %v", tc.sig, code, took.Round(time.Millisecond))
	}
}

// TestBatchSignalFlushesOutputAndJournal interrupts a batch of slow unsafe writes and checks that
// every line written is whole JSON, that the journal agrees with the output, and the exit code.
func TestBatchSignalFlushesOutputAndJournal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	bin := buildBinary(t)
	em := startEmulator(t, emulator.Config{Latency: 100 * time.Millisecond, Burst: 1000, Rate: 1000})
	dir := t.TempDir()
	var lines []string
	for i := 1; i <= 200; i++ {
		lines = append(lines, fmt.Sprintf(`POST /v2/documents {"documents":[{"file_name":"s%d.pdf"}]}`, i))
	}
	in := filepath.Join(dir, "in.txt")
	_ = os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	out := filepath.Join(dir, "out.jsonl")
	c := exec.Command(bin, "batch", in, "--journal", filepath.Join(dir, "j"), "-o", out, "--concurrency", "4", "--limiter", "off")
	c.Env = append(os.Environ(), "BRELLIUM_BASE_URL="+em.URL, "BRELLIUM_ACCESS_TOKEN=t")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	for em.Stats().Requests < 20 {
		time.Sleep(5 * time.Millisecond)
	}
	sent := time.Now()
	_ = c.Process.Signal(syscall.SIGINT)
	err := c.Wait()
	took := time.Since(sent)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130", err)
	}
	if took > 5*time.Second+time.Second {
		t.Errorf("the batch took %v to stop after SIGINT (5 s for in-flight requests)", took)
	}
	results := readResults(t, out)
	b, _ := os.ReadFile(out)
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !json.Valid([]byte(l)) {
			t.Fatalf("a torn output line: %q", l)
		}
	}
	ok := 0
	for _, r := range results {
		if r.Outcome == "ok" {
			ok++
		}
	}
	// The journal agrees with the output: every line that ended has the same outcome in both,
	// and no line ended in one without the other.
	ends := journalEnds(t, filepath.Join(dir, "j"))
	for n, r := range results {
		if r.Outcome != "skipped" && ends[n] != r.Outcome {
			t.Errorf("line %d: %q in the output, %q in the journal", n, r.Outcome, ends[n])
		}
	}
	for n, o := range ends {
		if results[n].Outcome != o {
			t.Errorf("line %d: %q in the journal, %q in the output", n, o, results[n].Outcome)
		}
	}
	if len(ends) == 0 || ok == 0 {
		t.Fatalf("nothing ended before the interrupt (%d journal ends, %d ok lines): the test proves nothing", len(ends), ok)
	}
	if created := em.Stats().Created["documents"]; ok > created || created > ok+4 {
		t.Errorf("%d lines ok in the output, %d documents created: more than the 4 in flight differ", ok, created)
	}
	t.Logf("SIGINT after %d requests: exit 130 after %v; %d result lines, %d ok", em.Stats().Requests, took.Round(time.Millisecond), len(results), ok)
}

// journalEnds reads a journal's "end" records: line number → outcome of its last end.
func journalEnds(t *testing.T, path string) map[int]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ends := map[int]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n")[1:] {
		var r struct {
			Line    int    `json:"line"`
			State   string `json:"s"`
			Outcome string `json:"outcome"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("a torn journal record after a graceful stop: %q", l)
		}
		if r.State == "end" {
			ends[r.Line] = r.Outcome
		}
	}
	return ends
}
