package experiment

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gdattn/gdattn/internal/infile"
)

// Result is a run's result as a [Store] holds it.
type Result struct {
	Key    string          `json:"key"`
	Config json.RawMessage `json:"config"`
	Label  string          `json:"label,omitempty"`
	// Output is what the run produced (its metrics, its curve): the part a
	// rerun of the run must reproduce exactly.
	Output json.RawMessage `json:"output,omitempty"`
	// Error is set for a failed run (Output is then empty).
	Error string `json:"error,omitempty"`
	// Seconds is the run's wall time; Finished when it finished; Host the
	// machine that ran it.
	Seconds  float64   `json:"seconds"`
	Finished time.Time `json:"finished"`
	Host     string    `json:"host,omitempty"`
	// Source is where the result was read from: a result file, or a line
	// of an older journal ("runs.jsonl:12"). Set by Load, not stored.
	Source string `json:"-"`
}

// Failed reports whether the result is a failure.
func (r Result) Failed() bool { return r.Error != "" }

// ConflictError is Store.Put's error when a result of the same run exists
// with a different output: the run is not deterministic (or the two
// workers ran different programs).
type ConflictError struct {
	Key, Path string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("experiment: %s already holds a different result of run %s: the run is not deterministic, or the two workers ran different programs", e.Path, e.Key)
}

// Store is a directory of run results, one file per run under
// <dir>/runs/, shared by any number of workers (see the package
// documentation). An older journal (<dir>/runs.jsonl, or the name given to
// SetJournal) is read by Load.
type Store struct {
	dir     string
	journal string // the older journal's file name in dir
}

// JournalName is the file name of the older one-file journal that Load
// reads beneath the run files.
const JournalName = "runs.jsonl"

// maxResultBytes bounds one result file, maxJournalBytes an older journal.
const (
	maxResultBytes  = 256 << 20
	maxJournalBytes = 1 << 30
)

// OpenStore opens the store in dir. Nothing is created until a result is
// stored (then dir/runs); a store whose directory does not exist is empty.
func OpenStore(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("experiment: store: empty directory name")
	}
	return &Store{dir: dir, journal: JournalName}, nil
}

// SetJournal sets the file name (in the store's directory) of the older
// journal that Load reads beneath the run files (default JournalName).
func (s *Store) SetJournal(name string) { s.journal = name }

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// RunsDir is the directory of the result files.
func (s *Store) RunsDir() string { return filepath.Join(s.dir, "runs") }

// Path is the result file of the run with key.
func (s *Store) Path(key string) string { return filepath.Join(s.RunsDir(), FileName(key)) }

// failedPath is the failure file of the run with key.
func (s *Store) failedPath(key string) string {
	return strings.TrimSuffix(s.Path(key), ".json") + ".failed.json"
}

// Done reports whether the run with key has a result file. (Results in an
// older journal count too: see Load.)
func (s *Store) Done(key string) bool {
	_, err := os.Lstat(s.Path(key))
	return err == nil
}

// errKeyUTF8: a key is written as a JSON string, which must be UTF-8 to
// read back as the same key.
var errKeyUTF8 = errors.New("experiment: store: a run's key must be non-empty, valid UTF-8")

// Put stores the successful result r (r.Key, r.Config and r.Output set;
// Finished and Host filled in if empty). It reports whether r was stored:
// false, with a nil error, when the run already had an identical result;
// a *ConflictError when it had a different one.
func (s *Store) Put(r Result) (bool, error) {
	if r.Key == "" || r.Error != "" {
		return false, fmt.Errorf("experiment: store: Put needs a key and no error (use PutFailure)")
	}
	if !utf8.ValidString(r.Key) {
		return false, errKeyUTF8
	}
	data, err := s.encode(&r)
	if err != nil {
		return false, err
	}
	final := s.Path(r.Key)
	tmp, err := s.writeTemp(filepath.Base(final), data)
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp) // after a link, or a failure
	// A hard link fails if the result exists: the first result stays, and
	// no two workers ever write the same file (atomic on NFS too).
	err = os.Link(tmp, final)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrExist):
		return false, s.same(r, final)
	default:
		// No hard links on this filesystem: an existing result stays,
		// otherwise rename (atomic; two racing workers leave one of two
		// identical results).
		if _, serr := os.Lstat(final); serr == nil {
			return false, s.same(r, final)
		}
		if err := os.Rename(tmp, final); err != nil {
			return false, fmt.Errorf("experiment: store: %w", err)
		}
	}
	if err := syncDir(s.RunsDir()); err != nil {
		return false, err
	}
	if err := os.Remove(s.failedPath(r.Key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return true, fmt.Errorf("experiment: store: %w", err)
	}
	return true, nil
}

// PutFailure records that the run of key and config failed with runErr
// (replacing an earlier failure; never a result).
func (s *Store) PutFailure(key string, config json.RawMessage, label string, seconds float64, runErr error) error {
	if key == "" || !utf8.ValidString(key) {
		return errKeyUTF8
	}
	r := Result{Key: key, Config: config, Label: label, Error: runErr.Error(), Seconds: seconds}
	if r.Error == "" {
		r.Error = "failed"
	}
	data, err := s.encode(&r)
	if err != nil {
		return err
	}
	final := s.failedPath(key)
	tmp, err := s.writeTemp(filepath.Base(final), data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("experiment: store: %w", err)
	}
	return syncDir(s.RunsDir())
}

func (s *Store) encode(r *Result) ([]byte, error) {
	if r.Finished.IsZero() {
		r.Finished = time.Now().UTC().Truncate(time.Second)
	}
	if r.Host == "" {
		r.Host, _ = os.Hostname()
	}
	if len(r.Config) == 0 {
		r.Config = json.RawMessage(r.Key)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("experiment: store: run %s: %w", r.Key, err)
	}
	return append(b, '\n'), nil
}

// writeTemp writes data to a new temporary file in the runs directory,
// synced to disk, and returns its name.
func (s *Store) writeTemp(name string, data []byte) (string, error) {
	if err := os.MkdirAll(s.RunsDir(), 0o755); err != nil {
		return "", fmt.Errorf("experiment: store: %w", err)
	}
	f, err := os.CreateTemp(s.RunsDir(), ".tmp-"+name+"-*")
	if err != nil {
		return "", fmt.Errorf("experiment: store: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("experiment: store: %w", err)
	}
	return f.Name(), nil
}

// same checks that the result file at path has r's output.
func (s *Store) same(r Result, path string) error {
	old, err := readResult(path)
	if err != nil {
		return err
	}
	if !equalJSON(old.Output, r.Output) {
		return &ConflictError{Key: r.Key, Path: path}
	}
	return nil
}

// equalJSON reports whether a and b encode the same value (object keys in
// any order; numbers compared as float64, which every output here is).
func equalJSON(a, b json.RawMessage) bool {
	ca, erra := canonical(a)
	cb, errb := canonical(b)
	if erra != nil || errb != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca, cb)
}

func canonical(m json.RawMessage) ([]byte, error) {
	if len(m) == 0 {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(m, &v); err != nil {
		return nil, err
	}
	return json.Marshal(v) // map keys sorted
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("experiment: store: %w", err)
	}
	defer d.Close()
	// Some filesystems cannot sync a directory (EINVAL): the rename or
	// link is then as durable as they make it.
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) && !strings.Contains(err.Error(), "invalid argument") {
		return fmt.Errorf("experiment: store: sync %s: %w", dir, err)
	}
	return nil
}

func readResult(path string) (Result, error) {
	var r Result
	// A regular file only, opened without waiting on a writer (internal/infile).
	f, _, err := infile.Open(path, maxResultBytes)
	if err != nil {
		return r, fmt.Errorf("experiment: store: %w", err)
	}
	b, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return r, fmt.Errorf("experiment: store: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("experiment: store: %s: %w", path, err)
	}
	if r.Key == "" {
		return r, fmt.Errorf("experiment: store: %s: no key", path)
	}
	r.Source = path
	return r, nil
}

// Contents is what Load read.
type Contents struct {
	// Results are the successful results by key: the run files, and the
	// runs of an older journal that have no run file.
	Results map[string]Result
	// Failures are the failed runs by key that have no result.
	Failures map[string]Result
	// Unreadable lists the files and journal lines that could not be read
	// (a hand-edited file; a journal line cut by a crash).
	Unreadable []string
	// Temporary lists leftover temporary files (a worker killed while
	// writing; harmless, and removable once no worker runs).
	Temporary []string
}

// Load reads every result of the store.
func (s *Store) Load() (*Contents, error) {
	c := &Contents{Results: map[string]Result{}, Failures: map[string]Result{}}
	if err := readJournal(filepath.Join(s.dir, s.journal), c); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(s.RunsDir())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("experiment: store: %w", err)
	}
	var failed []Result
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(s.RunsDir(), name)
		switch {
		case strings.HasPrefix(name, ".tmp-"):
			c.Temporary = append(c.Temporary, path)
		case strings.HasSuffix(name, ".failed.json"):
			r, err := readResult(path)
			if err != nil {
				c.Unreadable = append(c.Unreadable, path)
				continue
			}
			failed = append(failed, r)
		case strings.HasSuffix(name, ".json"):
			r, err := readResult(path)
			if err != nil || FileName(r.Key) != name {
				c.Unreadable = append(c.Unreadable, path)
				continue
			}
			c.Results[r.Key] = r
		}
	}
	for _, r := range failed {
		if _, ok := c.Results[r.Key]; !ok {
			c.Failures[r.Key] = r
		}
	}
	return c, nil
}

// readJournal reads an older journal (one JSON object per line, the run's
// configuration under "config", "train_seconds" and "finished" optional;
// the rest of the object is the run's output) into c, if it exists.
func readJournal(path string, c *Contents) error {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	f, _, err := infile.Open(path, maxJournalBytes) // a regular file only, never waited on
	if err != nil {
		return fmt.Errorf("experiment: journal: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), maxJournalBytes)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		r, err := journalRecord(b)
		if err != nil {
			c.Unreadable = append(c.Unreadable, fmt.Sprintf("%s:%d", path, line))
			continue
		}
		r.Source = fmt.Sprintf("%s:%d", path, line)
		c.Results[r.Key] = r // a later line replaces an earlier one
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("experiment: journal %s: %w", path, err)
	}
	return nil
}

func journalRecord(line []byte) (Result, error) {
	var r Result
	// JSON text is UTF-8: a line that is not (a hand edit, a cut write)
	// would give a key that no result file can hold.
	if !utf8.Valid(line) {
		return r, errors.New("not UTF-8")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		return r, err
	}
	cfg, ok := obj["config"]
	if !ok {
		return r, errors.New("no config")
	}
	var key bytes.Buffer
	if err := json.Compact(&key, cfg); err != nil {
		return r, err
	}
	r.Key, r.Config = key.String(), json.RawMessage(key.String())
	if v, ok := obj["train_seconds"]; ok {
		if err := json.Unmarshal(v, &r.Seconds); err != nil {
			return r, err
		}
	}
	if v, ok := obj["finished"]; ok {
		if err := json.Unmarshal(v, &r.Finished); err != nil {
			return r, err
		}
	}
	for _, k := range []string{"config", "train_seconds", "finished"} {
		delete(obj, k)
	}
	out, err := json.Marshal(obj) // sorted keys: a canonical output
	if err != nil {
		return r, err
	}
	r.Output = out
	return r, nil
}

// Convert writes every result of the older journal in the store's
// directory that has no result file as a result file of its own, keeping
// its finish time (the journal stays as it is). It returns the number of
// results written.
func (s *Store) Convert() (int, error) {
	c := &Contents{Results: map[string]Result{}}
	if err := readJournal(filepath.Join(s.dir, s.journal), c); err != nil {
		return 0, err
	}
	keys := make([]string, 0, len(c.Results))
	for k := range c.Results {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	n := 0
	for _, k := range keys {
		r := c.Results[k]
		r.Host = "converted from " + r.Source
		stored, err := s.Put(r)
		if err != nil {
			return n, err
		}
		if stored {
			n++
		}
	}
	return n, nil
}
