package sweep

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gdattn/gdattn/internal/infile"
	"github.com/gdattn/gdattn/internal/numeric"
	"github.com/gdattn/gdattn/train"
)

// Record is one finished training run as a [Journal] stores it: the run's
// configuration (any JSON-encodable value; it is also the run's key), the
// final test metrics and optionally the training curve.
type Record struct {
	Config       json.RawMessage      `json:"config"`
	Final        train.Metrics        `json:"final"`
	Curve        []train.EpochMetrics `json:"curve,omitempty"`
	TrainSeconds float64              `json:"train_seconds"`
	Finished     time.Time            `json:"finished"`
}

// Key is the canonical key of a run configuration: its compact JSON. Two
// configurations have the same key exactly when they encode to the same
// JSON, so a config struct should hold every setting that changes the
// result. Adding a field tagged omitempty keeps old keys valid while the
// field holds its zero value.
func Key(cfg any) (string, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("sweep: key: %w", err)
	}
	return string(b), nil
}

// Journal is an append-only results file of finished runs, one JSON
// [Record] per line, keyed by configuration, so that an interrupted sweep
// can be resumed: run only the configurations the journal lacks, and
// append each run when it finishes. A run killed before Append is simply
// missing and reruns; a line truncated by a crash is skipped with a
// warning (and the next Append starts on a fresh line). Later records
// replace earlier ones with the same key.
//
// Several processes may append to the same journal (sharding a sweep):
// each record is written with one O_APPEND write. Call Reload to see the
// records others have written since Open.
type Journal struct {
	path string
	recs map[string]Record
	keys []string // in file order of first appearance
	// Skipped counts unreadable lines met by the last Open or Reload.
	Skipped int
}

// maxJournalBytes bounds a journal (1 GiB; a sweep's is a few hundred
// kilobytes).
const maxJournalBytes = 1 << 30

// OpenJournal reads the journal at path, creating an empty one (and its
// directory) if it does not exist.
func OpenJournal(path string) (*Journal, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("sweep: journal: %w", err)
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return nil, fmt.Errorf("sweep: journal: %w", err)
		}
		f.Close()
	}
	j := &Journal{path: path}
	return j, j.Reload()
}

// Path is the journal's file.
func (j *Journal) Path() string { return j.path }

// Reload rereads the file.
func (j *Journal) Reload() error {
	// A regular file only: a FIFO or device there is refused, not waited on.
	f, _, err := infile.Open(j.path, maxJournalBytes)
	if err != nil {
		return fmt.Errorf("sweep: journal: %w", err)
	}
	defer f.Close()
	j.recs, j.keys, j.Skipped = map[string]Record{}, nil, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<30)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(b, &r); err != nil || len(r.Config) == 0 {
			j.Skipped++
			continue
		}
		var c bytes.Buffer
		if err := json.Compact(&c, r.Config); err != nil {
			j.Skipped++
			continue
		}
		k := c.String()
		if _, ok := j.recs[k]; !ok {
			j.keys = append(j.keys, k)
		}
		j.recs[k] = r
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("sweep: journal %s: %w", j.path, err)
	}
	return nil
}

// Len is the number of distinct configurations recorded.
func (j *Journal) Len() int { return len(j.recs) }

// Get returns the record of key.
func (j *Journal) Get(key string) (Record, bool) {
	r, ok := j.recs[key]
	return r, ok
}

// Records returns every record, in the order their keys first appear.
func (j *Journal) Records() []Record {
	out := make([]Record, len(j.keys))
	for i, k := range j.keys {
		out[i] = j.recs[k]
	}
	return out
}

// Append records a finished run of configuration cfg: it sets r.Config
// (and r.Finished, if zero) and appends r to the file as one line.
func (j *Journal) Append(cfg any, r Record) error {
	key, err := Key(cfg)
	if err != nil {
		return err
	}
	r.Config = json.RawMessage(key)
	if r.Finished.IsZero() {
		r.Finished = time.Now().UTC().Truncate(time.Second)
	}
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("sweep: journal: %w", err)
	}
	f, err := os.OpenFile(j.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("sweep: journal: %w", err)
	}
	// Start on a fresh line if a crash left the last one unterminated.
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
	}
	_, err = f.Write(append(line, '\n'))
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sweep: journal %s: %w", j.path, err)
	}
	if _, ok := j.recs[key]; !ok {
		j.keys = append(j.keys, key)
	}
	j.recs[key] = r
	return nil
}

// Stat is a metric over seeds: the values, their mean and sample std.
type Stat struct {
	Mean   float64   `json:"mean"`
	Std    float64   `json:"std"`
	Values []float64 `json:"values"`
}

// NewStat summarises v (MeanStd).
func NewStat(v []float64) Stat {
	m, s := MeanStd(v)
	return Stat{Mean: m, Std: s, Values: append([]float64(nil), v...)}
}

// Point is one aggregated point of a figure: series Series of panel Panel
// at abscissa X, over the seeds that finished.
type Point struct {
	Panel  string  `json:"panel"`
	Series string  `json:"series"`
	X      float64 `json:"x"`
	Seeds  int     `json:"seeds"`
	Top1   Stat    `json:"top1"`
	NLL    Stat    `json:"nll"`
	Oracle float64 `json:"oracle"`
}

// PointCSVHeader is the header WritePointsCSV writes.
var PointCSVHeader = []string{"panel", "series", "x", "seeds", "top1_mean", "top1_std", "nll_mean", "nll_std", "oracle"}

// WritePointsCSV writes pts as CSV with PointCSVHeader (NaN as "NaN").
func WritePointsCSV(w io.Writer, pts []Point) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(PointCSVHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, p := range pts {
		if err := cw.Write([]string{p.Panel, p.Series, f(p.X), strconv.Itoa(p.Seeds),
			f(p.Top1.Mean), f(p.Top1.Std), f(p.NLL.Mean), f(p.NLL.Std), f(p.Oracle)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteFile writes data to path atomically (a temporary file in the same
// directory, then a rename), creating the directory.
func WriteFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644) // CreateTemp makes 0600
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// WriteJSON writes v as indented JSON to path, atomically.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("sweep: %s: %w", path, err)
	}
	return WriteFile(path, append(b, '\n'))
}

// jsonFloat encodes NaN and ±Inf as null (numeric.JSONFloat).
type jsonFloat = numeric.JSONFloat

// MarshalJSON writes NaN mean and std (no values) as null.
func (s Stat) MarshalJSON() ([]byte, error) {
	vals := make([]jsonFloat, len(s.Values))
	for i, v := range s.Values {
		vals[i] = jsonFloat(v)
	}
	return json.Marshal(struct {
		Mean   jsonFloat   `json:"mean"`
		Std    jsonFloat   `json:"std"`
		Values []jsonFloat `json:"values"`
	}{jsonFloat(s.Mean), jsonFloat(s.Std), vals})
}

// MarshalJSON writes a NaN oracle as null.
func (p Point) MarshalJSON() ([]byte, error) {
	type plain Point // without the method
	return json.Marshal(struct {
		plain
		Oracle jsonFloat `json:"oracle"`
	}{plain(p), jsonFloat(p.Oracle)})
}

// MeanStd returns the mean and the sample standard deviation of v (NaN,
// NaN for no values; a std of 0 for one).
func MeanStd(v []float64) (float64, float64) {
	if len(v) == 0 {
		return math.NaN(), math.NaN()
	}
	m := 0.0
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	if len(v) == 1 {
		return m, 0
	}
	s := 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return m, math.Sqrt(s / float64(len(v)-1))
}
