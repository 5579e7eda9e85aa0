package batch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/brellium/brellium/request"
)

func journalPath(t *testing.T) string { return filepath.Join(t.TempDir(), "run.journal") }

// reopen closes j and opens its file again, as a rerun would.
func reopen(t *testing.T, j *Journal, path, sha string) *Journal {
	t.Helper()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j2, err := OpenJournal(path, "in.txt", sha)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j2.Close() })
	return j2
}

// A rerun learns from the journal what each line's last record says: done lines are not sent
// again, lines that may have run (started unsafe, or ended unknown_outcome) are never sent
// again, and the rest are sent.
func TestJournalPriorStates(t *testing.T) {
	path := journalPath(t)
	j, err := OpenJournal(path, "in.txt", "abc")
	if err != nil {
		t.Fatal(err)
	}
	steps := []func() error{
		func() error { return j.End(1, 11, "ok", false) },
		func() error { return j.Start(2, 22) },
		func() error { return j.Start(3, 33) },
		func() error { return j.End(3, 33, "unknown_outcome", false) },
		func() error { return j.End(4, 44, "exhausted", false) },
		func() error { return j.End(5, 55, "api_error", false) },
		func() error { return j.Start(6, 66) },
		func() error { return j.End(6, 66, "ok", false) },
		func() error { return j.End(7, 77, "ok", false) },
		func() error { return j.End(7, 77, "exhausted", false) }, // sent again later, and failed
		func() error { return j.End(8, 88, "skipped", false) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			t.Fatal(err)
		}
	}
	j = reopen(t, j, path, "abc")
	want := map[int]Prior{1: Done, 2: Unknown, 3: Unknown, 4: NotDone, 5: NotDone, 6: Done, 7: NotDone, 8: NotDone, 9: NotDone}
	for n, w := range want {
		got, err := j.Prior(n, uint64(n*11))
		if err != nil || got != w {
			t.Errorf("line %d: prior %v (%v), want %v", n, got, err, w)
		}
	}
}

// A line whose text differs from what the journal recorded for its number is refused, even when
// the input's hash cannot tell (standard input has none).
func TestJournalRefusesAnotherTextForALine(t *testing.T) {
	path := journalPath(t)
	j, _ := OpenJournal(path, "-", "")
	_ = j.End(1, 0xabc, "ok", false)
	j = reopen(t, j, path, "")
	if _, err := j.Prior(1, 0xabd); err == nil || !strings.Contains(err.Error(), "another text for line 1") {
		t.Fatalf("err = %v", err)
	}
	var usage *request.UsageError
	if _, err := j.Prior(1, 0xabd); !errors.As(err, &usage) {
		t.Fatalf("err = %T, want a usage error", err)
	}
	if p, err := j.Prior(1, 0xabc); err != nil || p != Done {
		t.Fatalf("the same text: %v %v", p, err)
	}
}

// A journal written for one file is refused for another, even when every line the journal
// names reads the same (the new file only adds lines).
func TestJournalRefusesAnotherInput(t *testing.T) {
	path := journalPath(t)
	j, _ := OpenJournal(path, "in.txt", "sha-one")
	_ = j.End(1, 1, "ok", false)
	_ = j.Close()
	if _, err := OpenJournal(path, "in.txt", "sha-two"); err == nil || !strings.Contains(err.Error(), "belongs to another input") {
		t.Fatalf("err = %v", err)
	}
	// Standard input has no hash: the per-line check is what guards it.
	j2, err := OpenJournal(path, "-", "")
	if err != nil {
		t.Fatalf("a journal reopened for a stream: %v", err)
	}
	_ = j2.Close()
}

func TestJournalRefusesWhatIsNotAJournal(t *testing.T) {
	for name, content := range map[string]string{
		"not JSON":     "hello\n",
		"wrong header": `{"v":2}` + "\n",
		"blank lines":  "\n\n\n",
	} {
		path := journalPath(t)
		_ = os.WriteFile(path, []byte(content), 0o600)
		if _, err := OpenJournal(path, "in", ""); err == nil || !strings.Contains(err.Error(), "not a brellium journal") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// A torn last record (the process died while writing it) is passed over; a damaged record in
// the middle is refused rather than guessed at.
func TestJournalTornAndDamagedRecords(t *testing.T) {
	path := journalPath(t)
	head := `{"v":1,"input":"in","sha256":"s"}` + "\n"
	rec := func(line int, state, outcome string) string {
		return fmt.Sprintf(`{"line":%d,"h":"%x","s":%q,"outcome":%q}`, line, line, state, outcome) + "\n"
	}
	_ = os.WriteFile(path, []byte(head+rec(1, "end", "ok")+`{"line":2,"h":"2","s":"st`), 0o600)
	j, err := OpenJournal(path, "in", "s")
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := j.Prior(1, 1); p != Done {
		t.Errorf("line 1 before the torn record: %v", p)
	}
	if p, _ := j.Prior(2, 2); p != NotDone {
		t.Errorf("the torn record counted: %v", p)
	}
	// The next record starts on a line of its own.
	_ = j.End(3, 3, "ok", false)
	_ = j.Close()
	j, err = OpenJournal(path, "in", "s")
	if err != nil {
		t.Fatalf("reopened after a torn record: %v", err)
	}
	if p, _ := j.Prior(3, 3); p != Done {
		t.Errorf("the record after the torn one: %v", p)
	}
	_ = j.Close()

	_ = os.WriteFile(path, []byte(head+`{"line":1,"h":"1","s":"end","outcome":"ok"}`+"\ngarbage\n"+rec(3, "end", "ok")), 0o600)
	if _, err := OpenJournal(path, "in", "s"); err == nil || !strings.Contains(err.Error(), "record 3 is damaged") {
		t.Fatalf("a damaged middle record: %v", err)
	}
	_ = os.WriteFile(path, []byte(head+`{"line":0,"h":"1"}`+"\n"+rec(3, "end", "ok")), 0o600)
	if _, err := OpenJournal(path, "in", "s"); err == nil {
		t.Fatal("a record without a line number was accepted")
	}
}

// A new journal is private, starts with its header, and records are appended across runs.
func TestJournalFileIsPrivateAndAppended(t *testing.T) {
	path := journalPath(t)
	j, _ := OpenJournal(path, "in.txt", "s1")
	_ = j.Start(1, 1)
	j = reopen(t, j, path, "s1")
	_ = j.End(1, 1, "ok", false)
	if err := j.Sync(); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("journal mode %v, want 0600", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"v":1`) || !strings.Contains(lines[0], `"sha256":"s1"`) ||
		!strings.Contains(lines[1], `"s":"start"`) || !strings.Contains(lines[2], `"outcome":"ok"`) {
		t.Fatalf("journal:\n%s", b)
	}
}

// Start is on disk when it returns: a process killed right after it leaves the record. End is
// on disk once Sync returns, which the writer calls before a line's result is written.
func TestJournalStartIsWrittenAtOnceAndEndAtSync(t *testing.T) {
	path := journalPath(t)
	j, _ := OpenJournal(path, "in", "")
	defer j.Close()
	_ = j.Start(4, 0x44)
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `{"line":4,"h":"44","s":"start"}`) {
		t.Fatalf("after Start the file holds:\n%s", b)
	}
	_ = j.End(4, 0x44, "ok", false)
	_ = j.Sync()
	b, _ = os.ReadFile(path)
	if !strings.Contains(string(b), `"s":"end","outcome":"ok"`) {
		t.Fatalf("End is not written by Sync:\n%s", b)
	}
}

// Workers that start lines at the same time share syncs, and every start is on disk when its
// Start returns.
func TestJournalStartsShareSyncs(t *testing.T) {
	path := journalPath(t)
	j, _ := OpenJournal(path, "in", "")
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				n := w*1000 + i + 1
				if err := j.Start(n, uint64(n)); err != nil {
					t.Error(err)
					return
				}
				// The record is on disk: another open of the file sees it.
				b, _ := os.ReadFile(path)
				if !strings.Contains(string(b), fmt.Sprintf(`{"line":%d,"h":"%x","s":"start"}`, n, n)) {
					t.Errorf("start of line %d not on disk when Start returned", n)
					return
				}
				_ = j.End(n, uint64(n), "ok", false)
			}
		}(w)
	}
	wg.Wait()
	_ = j.Close()
	j, _ = OpenJournal(path, "in", "")
	defer j.Close()
	if p, _ := j.Prior(15050, 15050); p != Done {
		t.Fatalf("the last line's end: %v", p)
	}
}

// A journal of 200,000 lines loads into little memory: 4 bytes a line (bench/memory.sh
// resumes a million).
func TestJournalLoadsAMillionLinesCompactly(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a large journal")
	}
	path := journalPath(t)
	var b strings.Builder
	b.WriteString(`{"v":1,"input":"in"}` + "\n")
	const n = 200000
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{"line":%d,"h":"%x","s":"end","outcome":"ok"}`+"\n", i, i)
	}
	_ = os.WriteFile(path, []byte(b.String()), 0o600)
	j, err := OpenJournal(path, "in", "")
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if len(j.index) != n+1 || cap(j.index) > 2*(n+1) {
		t.Fatalf("an index of %d slots (cap %d) for %d lines", len(j.index), cap(j.index), n)
	}
	if p, _ := j.Prior(n, n); p != Done {
		t.Fatalf("the last line: %v", p)
	}
}

// Records in another field order, or written by hand, are read too.
func TestJournalReadsRecordsInAnyForm(t *testing.T) {
	for _, raw := range []string{
		`{"line":1,"h":"a","s":"end","outcome":"ok"}`,
		`{"s":"end","outcome":"ok","h":"a","line":1}`,
		`{"line":1,"h":"a","s":"end","outcome":"usage","done":true}`,
		`{ "line": 1, "h": "a", "s": "end", "outcome": "ok" }`,
	} {
		e, ok := parseEntry([]byte(raw))
		if !ok || e.line != 1 || e.hash != 0xa || e.prior != Done {
			t.Errorf("%s: %+v %v", raw, e, ok)
		}
	}
	for _, raw := range []string{`{"line":1,"h":"a","s":"end","outcome":"ok"`, `{"line":0,"h":"a"}`, `{"line":-1}`, `[]`, `{"line":"1"}`} {
		if e, ok := parseEntry([]byte(raw)); ok {
			t.Errorf("%s parsed as %+v", raw, e)
		}
	}
}

func TestJournalCannotBeOpened(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenJournal(dir, "in", ""); err == nil {
		t.Fatal("a folder was accepted as a journal")
	}
	if _, err := OpenJournal(filepath.Join(dir, "missing", "j"), "in", ""); err == nil {
		t.Fatal("a journal in a missing folder was accepted")
	}
}

// A torn last record longer than the next record is cut off, not overwritten in part: no byte
// of it is left in the journal. A blank line between records is passed over. A line number
// beyond what the index holds (2^32-1) is no record.
func TestJournalCutsTornBytesAndReadsItsEdges(t *testing.T) {
	path := journalPath(t)
	head := `{"v":1,"input":"in","sha256":"s"}` + "\n"
	torn := `{"line":2,"h":"2","s":"end","outcome":"` + strings.Repeat("x", 300)
	_ = os.WriteFile(path, []byte(head+`{"line":1,"h":"1","s":"end","outcome":"ok"}`+"\n\n"+torn), 0o600)
	j, err := OpenJournal(path, "in", "s")
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := j.Prior(1, 1); p != Done {
		t.Errorf("line 1 after a blank line: %v", p)
	}
	_ = j.End(3, 3, "ok", false)
	_ = j.Close()
	b, _ := os.ReadFile(path)
	if strings.Contains(string(b), "xxx") || !strings.HasSuffix(string(b), "}\n") {
		t.Fatalf("the journal kept torn bytes:\n%s", b)
	}
	if _, ok := parseEntry([]byte(`{"line":4294967295,"h":"1","s":"start"}`)); !ok {
		t.Error("line 2^32-1 refused")
	}
	if _, ok := parseEntry([]byte(`{"line":4294967296,"h":"1","s":"start"}`)); ok {
		t.Error("line 2^32 accepted: it would wrap to line 0")
	}
}
