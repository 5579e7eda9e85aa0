package batch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/brellium/brellium/request"
)

// Prior is what an earlier run recorded about a batch line.
type Prior uint8

// The states a journal can give a line.
const (
	// NotDone: never recorded, or ended without being done; send it.
	NotDone Prior = iota
	// Done: it ended ok (or done); report it skipped.
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
	// Done marks an end that is done although its outcome is not ok (a write that ran, whose
	// body could not be kept).
	Done bool `json:"done,omitempty"`
}

// journalEntry is what an earlier run left of one line.
type journalEntry struct {
	hash  uint64
	line  uint32
	prior Prior
}

// slot is a line's place in the journal's index: 0 when the journal holds nothing of the line,
// else its Prior plus one in the top two bits and 30 bits of its text's hash, enough to tell that
// a line is not the one the journal recorded. Four bytes a line: a million lines take 4 MB.
type slot uint32

func newSlot(e journalEntry) slot { return slot(e.prior+1)<<30 | slot(e.hash&(1<<30-1)) }

func (s slot) prior() Prior { return Prior(s>>30) - 1 }

func (s slot) matches(hash uint64) bool { return s&(1<<30-1) == slot(hash&(1<<30-1)) }

// Journal is a batch's append-only record of each line's state: "start" before an unsafe line is
// sent (durable before it is sent), "end" with the outcome when it finishes (durable before its
// result line is written: call Sync). A rerun with the same input and journal sends only what
// is not done. It is safe for concurrent use; the syncs of workers that start lines at the same
// time are one.
type Journal struct {
	mu sync.Mutex
	f  *os.File
	w  *bufio.Writer
	// index holds what earlier runs recorded, by line number: the last record of each.
	index []slot

	// Group commit: records are numbered as they are appended; synced is the number of the
	// last one on disk, and syncing says that a Sync is under way.
	appended, synced uint64
	syncing          bool
	synced1          *sync.Cond
	syncErr          error
}

// OpenJournal opens or creates the journal at path for an input. sha is the input's SHA-256 when
// it is a regular file, "" for a stream; a journal written for another input is refused.
func OpenJournal(path, input, sha string) (*Journal, error) {
	j := &Journal{}
	j.synced1 = sync.NewCond(&j.mu)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, request.Usagef("--journal %s: %v", path, err)
	}
	size, keep, last, err := j.load(path, f, sha)
	if err != nil {
		f.Close()
		return nil, err
	}
	if keep < size {
		// A torn last record from a crash: cut it off, so that it never stands in the middle.
		if err := f.Truncate(keep); err != nil {
			f.Close()
			return nil, request.Usagef("--journal %s: cutting off a torn last record: %v", path, err)
		}
	}
	if _, err := f.Seek(keep, io.SeekStart); err != nil {
		f.Close()
		return nil, request.Usagef("--journal %s: %v", path, err)
	}
	j.f, j.w = f, bufio.NewWriterSize(f, 64<<10)
	if keep > 0 && last != '\n' {
		// A whole last record that lost its line end: end it.
		_ = j.w.WriteByte('\n')
	}
	if keep == 0 {
		j.append(journalRecord{V: 1, Input: input, SHA256: sha})
		if err := j.Sync(); err != nil {
			f.Close()
			return nil, err
		}
		syncDir(filepath.Dir(path))
	}
	return j, nil
}

// load reads the records of an existing journal, as a stream, and returns the file's size, how
// many of its bytes to keep (all, or up to a torn last record), and the last byte kept.
func (j *Journal) load(path string, f *os.File, sha string) (size, keep int64, last byte, err error) {
	br := bufio.NewReaderSize(f, 64<<10)
	var offset int64
	n := 0
	for {
		line, rerr := br.ReadSlice('\n')
		if rerr == bufio.ErrBufferFull {
			// A record longer than any brellium writes: read the rest of it to report it.
			rest, _ := br.ReadBytes('\n')
			line = append(append([]byte(nil), line...), rest...)
			rerr = nil
		}
		if len(line) > 0 {
			n++
			start := offset
			offset += int64(len(line))
			last = line[len(line)-1]
			complete := last == '\n'
			if err := j.record(path, n, bytes.TrimRight(line, "\r\n"), sha); err != nil {
				var torn *tornRecord
				if errors.As(err, &torn) {
					if _, peekErr := br.Peek(1); peekErr == io.EOF || !complete {
						// The last record is torn: the process died while writing it.
						if start == 0 {
							return offset, 0, 0, request.Usagef("--journal %s is not a brellium journal; give another path", path)
						}
						return offset, start, '\n', nil
					}
					return 0, 0, 0, request.Usagef("--journal %s: record %d is damaged; refusing to guess what was sent", path, n)
				}
				return 0, 0, 0, err
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return 0, 0, 0, request.Usagef("--journal %s: %v", path, rerr)
		}
	}
	if n == 0 && offset > 0 {
		return 0, 0, 0, request.Usagef("--journal %s is not a brellium journal; give another path", path)
	}
	return offset, offset, last, nil
}

// tornRecord is a record that does not parse.
type tornRecord struct{}

func (*tornRecord) Error() string { return "torn record" }

// record takes in record n of the journal (1 is the header).
func (j *Journal) record(path string, n int, raw []byte, sha string) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		if n == 1 {
			return request.Usagef("--journal %s is not a brellium journal; give another path", path)
		}
		return nil
	}
	if n == 1 {
		var head journalRecord
		if err := json.Unmarshal(raw, &head); err != nil || head.V != 1 {
			return request.Usagef("--journal %s is not a brellium journal (its first line is not a v1 header); give another path", path)
		}
		if head.SHA256 != "" && sha != "" && head.SHA256 != sha {
			return request.Usagef("--journal %s belongs to another input (%s, sha256 %.12s…); this input's sha256 is %.12s…: use another journal, or the same input", path, head.Input, head.SHA256, sha)
		}
		return nil
	}
	e, ok := parseEntry(raw)
	if !ok {
		return &tornRecord{}
	}
	if need := int(e.line) + 1 - len(j.index); need > 0 {
		j.index = append(j.index, make([]slot, need)...)
	}
	j.index[e.line] = newSlot(e)
	return nil
}

// parseEntry reads a line's record: the form brellium writes ({"line":N,"h":"HEX","s":"…"…})
// by hand, anything else through encoding/json.
func parseEntry(raw []byte) (journalEntry, bool) {
	var r journalRecord
	if !fastRecord(raw, &r) {
		if err := json.Unmarshal(raw, &r); err != nil {
			return journalEntry{}, false
		}
	}
	if r.Line <= 0 || r.Line > 1<<32-1 {
		return journalEntry{}, false
	}
	h, _ := strconv.ParseUint(r.Hash, 16, 64)
	e := journalEntry{line: uint32(r.Line), hash: h}
	switch {
	case r.State == "start":
		e.prior = Unknown
	case r.State == "end" && (r.Outcome == "ok" || r.Done):
		e.prior = Done
	case r.State == "end" && r.Outcome == "unknown_outcome":
		e.prior = Unknown
	default:
		e.prior = NotDone
	}
	return e, true
}

// fastRecord parses the records that append writes, field by field in their order; it reports
// false for anything else.
func fastRecord(raw []byte, r *journalRecord) bool {
	rest, ok := bytes.CutPrefix(raw, []byte(`{"line":`))
	if !ok {
		return false
	}
	i := bytes.IndexByte(rest, ',')
	if i < 0 {
		return false
	}
	n, err := strconv.Atoi(string(rest[:i]))
	if err != nil {
		return false
	}
	r.Line = n
	str := func(name string) (string, bool) {
		var ok bool
		if rest, ok = bytes.CutPrefix(rest, []byte(`,"`+name+`":"`)); !ok {
			return "", false
		}
		end := bytes.IndexByte(rest, '"')
		if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
			return "", false
		}
		v := string(rest[:end])
		rest = rest[end+1:]
		return v, true
	}
	rest = rest[i:]
	if r.Hash, ok = str("h"); !ok {
		return false
	}
	if r.State, ok = str("s"); !ok {
		return false
	}
	if r.State == "end" {
		if r.Outcome, ok = str("outcome"); !ok {
			return false
		}
		if tail, done := bytes.CutPrefix(rest, []byte(`,"done":true`)); done {
			r.Done, rest = true, tail
		}
	}
	return string(rest) == "}"
}

// Prior returns what an earlier run recorded about line n, checking that it was the same text.
func (j *Journal) Prior(n int, hash uint64) (Prior, error) {
	if n < 0 || n >= len(j.index) || j.index[n] == 0 {
		return NotDone, nil
	}
	if !j.index[n].matches(hash) {
		return NotDone, request.Usagef("the journal recorded another text for line %d: it belongs to another input; use another journal, or the same input", n)
	}
	return j.index[n].prior(), nil
}

// Start records that line n is about to be sent, and returns once the record is on disk. The
// workers that start lines at the same time share one sync.
func (j *Journal) Start(n int, hash uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.append(journalRecord{Line: n, Hash: strconv.FormatUint(hash, 16), State: "start"})
	return j.syncLocked(j.appended)
}

// End records how line n ended; done marks it done although the outcome is not ok. It is
// buffered: call Sync before the line counts as done (before its result line is written).
func (j *Journal) End(n int, hash uint64, outcome string, done bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.append(journalRecord{Line: n, Hash: strconv.FormatUint(hash, 16), State: "end", Outcome: outcome, Done: done})
	return j.syncErr
}

// append writes a record into the buffer. The caller holds j.mu (or owns j alone).
func (j *Journal) append(r journalRecord) {
	b, _ := json.Marshal(r)
	_, _ = j.w.Write(append(b, '\n'))
	j.appended++
}

// Sync writes out what is buffered and syncs the file.
func (j *Journal) Sync() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.syncLocked(j.appended)
}

// syncLocked returns once record upTo is on disk: it waits for a sync under way that covers it,
// or makes one that covers every record appended so far. The caller holds j.mu.
func (j *Journal) syncLocked(upTo uint64) error {
	for j.synced < upTo && j.syncErr == nil {
		if j.syncing {
			j.synced1.Wait()
			continue
		}
		j.syncing = true
		target := j.appended
		err := j.w.Flush()
		if err != nil {
			err = fmt.Errorf("writing the journal: %w", err)
		}
		j.mu.Unlock()
		if err == nil {
			if serr := j.f.Sync(); serr != nil {
				err = fmt.Errorf("syncing the journal: %w", serr)
			}
		}
		j.mu.Lock()
		j.syncing = false
		if err != nil {
			j.syncErr = err
		} else {
			j.synced = target
		}
		j.synced1.Broadcast()
	}
	return j.syncErr
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
