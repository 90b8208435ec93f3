package sweep

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gdattn/gdattn/internal/numeric"
	"github.com/gdattn/gdattn/train"
)

// Record is one finished training run: the run's configuration (any
// JSON-encodable value), the final test metrics and optionally the training
// curve. It is also the line format of the older journals (runs.jsonl) that
// package experiment still reads.
type Record struct {
	Config       json.RawMessage      `json:"config"`
	Final        train.Metrics        `json:"final"`
	Curve        []train.EpochMetrics `json:"curve,omitempty"`
	TrainSeconds float64              `json:"train_seconds"`
	Finished     time.Time            `json:"finished"`
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
