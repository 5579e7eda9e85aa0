package batch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"

	"github.com/brellium/brellium/request"
)

// Prior is what an earlier run recorded about a batch line.
type Prior int

// The states a journal can give a line.
const (
	// NotDone: never recorded, or ended without being done; send it.
	NotDone Prior = iota
	// Done: it ended ok; report it skipped.
	Done
	// Unknown: an unsafe line that was sent and never finished, or ended unknown_outcome;
	// never send it again.
	Unknown
)

// journalRecord is one line of the journal file.
type journalRecord struct {
	V       int    `json:"v,omitempty"`
	Input   string `json:"input,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
	Line    int    `json:"line,omitempty"`
	Hash    string `json:"h,omitempty"`
	State   string `json:"s,omitempty"`
	Outcome string `json:"outcome,omitempty"`
}

type journalEntry struct {
	line  int
	hash  uint64
	prior Prior
}

// Journal is a batch's append-only record of each line's state: "start" before an unsafe line is
// sent (synced), "end" with the outcome when it finishes (synced before the line counts as done).
// A rerun with the same input and journal sends only what is not done. It is safe for
// concurrent use.
type Journal struct {
	mu      sync.Mutex
	f       *os.File
	w       *bufio.Writer
	entries []journalEntry // from earlier runs, sorted by line
}

// OpenJournal opens or creates the journal at path for an input. sha is the input's SHA-256 when
// it is a regular file, "" for a stream; a journal written for another input is refused.
func OpenJournal(path, input, sha string) (*Journal, error) {
	j := &Journal{}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		data = nil
	case err != nil:
		return nil, request.Usagef("--journal %s: %v", path, err)
	}
	fresh := len(data) == 0
	keep := len(data)
	if !fresh {
		if keep, err = j.load(path, data, sha); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, request.Usagef("--journal %s: %v", path, err)
	}
	j.f, j.w = f, bufio.NewWriter(f)
	if keep < len(data) {
		// A torn last record from a crash: cut it off, so that it never stands in the middle.
		if err := f.Truncate(int64(keep)); err != nil {
			f.Close()
			return nil, request.Usagef("--journal %s: cutting off a torn last record: %v", path, err)
		}
	}
	if !fresh && data[keep-1] != '\n' {
		// A whole last record that lost its line end: end it.
		_ = j.w.WriteByte('\n')
	}
	if fresh {
		j.append(journalRecord{V: 1, Input: input, SHA256: sha})
		if err := j.Sync(); err != nil {
			f.Close()
			return nil, err
		}
		syncDir(filepath.Dir(path))
	}
	return j, nil
}

// load reads the records of an existing journal and returns how many bytes of data to keep: all
// of them, or up to a torn last record.
func (j *Journal) load(path string, data []byte, sha string) (int, error) {
	keep := len(data)
	lines := splitLines(data)
	if len(lines) == 0 {
		return 0, request.Usagef("--journal %s is not a brellium journal; give another path", path)
	}
	var head journalRecord
	if err := json.Unmarshal(lines[0], &head); err != nil || head.V != 1 {
		return 0, request.Usagef("--journal %s is not a brellium journal (its first line is not a v1 header); give another path", path)
	}
	if head.SHA256 != "" && sha != "" && head.SHA256 != sha {
		return 0, request.Usagef("--journal %s belongs to another input (%s, sha256 %.12s…); this input's sha256 is %.12s…: use another journal, or the same input", path, head.Input, head.SHA256, sha)
	}
	for i, raw := range lines[1:] {
		var r journalRecord
		if err := json.Unmarshal(raw, &r); err != nil || r.Line <= 0 {
			if i == len(lines)-2 {
				// A torn last record: the process died while writing it.
				keep = bytes.LastIndex(data, raw)
				break
			}
			return 0, request.Usagef("--journal %s: record %d is damaged; refusing to guess what was sent", path, i+2)
		}
		h, _ := strconv.ParseUint(r.Hash, 16, 64)
		e := journalEntry{line: r.Line, hash: h}
		switch {
		case r.State == "start":
			e.prior = Unknown
		case r.State == "end" && r.Outcome == "ok":
			e.prior = Done
		case r.State == "end" && r.Outcome == "unknown_outcome":
			e.prior = Unknown
		default:
			e.prior = NotDone
		}
		j.entries = append(j.entries, e)
	}
	// Keep the last record of each line.
	sort.SliceStable(j.entries, func(a, b int) bool { return j.entries[a].line < j.entries[b].line })
	out := j.entries[:0]
	for i, e := range j.entries {
		if i+1 < len(j.entries) && j.entries[i+1].line == e.line {
			continue
		}
		out = append(out, e)
	}
	j.entries = out
	return keep, nil
}

func splitLines(data []byte) [][]byte {
	var lines [][]byte
	start := 0
	for i, c := range data {
		if c == '\n' {
			if i > start {
				lines = append(lines, data[start:i])
			}
			start = i + 1
		}
	}
	if start < len(data) {
		lines = append(lines, data[start:])
	}
	return lines
}

// Prior returns what an earlier run recorded about line n, checking that it was the same text.
func (j *Journal) Prior(n int, hash uint64) (Prior, error) {
	i := sort.Search(len(j.entries), func(i int) bool { return j.entries[i].line >= n })
	if i == len(j.entries) || j.entries[i].line != n {
		return NotDone, nil
	}
	if e := j.entries[i]; e.hash != hash {
		return NotDone, request.Usagef("the journal recorded another text for line %d: it belongs to another input; use another journal, or the same input", n)
	}
	return j.entries[i].prior, nil
}

// Start records that line n is about to be sent, and syncs it to disk.
func (j *Journal) Start(n int, hash uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.append(journalRecord{Line: n, Hash: strconv.FormatUint(hash, 16), State: "start"})
	return j.syncLocked()
}

// End records how line n ended. It is written at once (so it survives the process being
// killed) but not synced: call Sync before the line counts as done.
func (j *Journal) End(n int, hash uint64, outcome string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.append(journalRecord{Line: n, Hash: strconv.FormatUint(hash, 16), State: "end", Outcome: outcome})
	if err := j.w.Flush(); err != nil {
		return fmt.Errorf("writing the journal: %w", err)
	}
	return nil
}

func (j *Journal) append(r journalRecord) {
	b, _ := json.Marshal(r)
	_, _ = j.w.Write(append(b, '\n'))
}

// Sync writes out what is buffered and syncs the file.
func (j *Journal) Sync() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.syncLocked()
}

func (j *Journal) syncLocked() error {
	if err := j.w.Flush(); err != nil {
		return fmt.Errorf("writing the journal: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("syncing the journal: %w", err)
	}
	return nil
}

// Close syncs and closes the journal.
func (j *Journal) Close() error {
	err := j.Sync()
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
