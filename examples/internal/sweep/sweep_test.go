package sweep

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/train"
)

type cfg struct {
	Model string  `json:"model"`
	L     int     `json:"L"`
	LR    float64 `json:"lr"`
}

func TestJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "runs.jsonl")
	j, err := OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if j.Len() != 0 {
		t.Fatalf("new journal has %d records", j.Len())
	}
	a, b := cfg{"gd", 16, 0.01}, cfg{"tf", 16, 0.01}
	if err := j.Append(a, Record{Final: train.Metrics{Top1: 0.5, NLL: 1.5, Oracle: math.NaN(), N: 8}}); err != nil {
		t.Fatal(err)
	}
	if err := j.Append(b, Record{Final: train.Metrics{Top1: 0.25}, Curve: []train.EpochMetrics{{Epoch: 1, TrainLoss: 2, Metrics: train.Metrics{Top1: 0.2}}}}); err != nil {
		t.Fatal(err)
	}
	if err := j.Append(a, Record{Final: train.Metrics{Top1: 0.75}}); err != nil { // replaces the first
		t.Fatal(err)
	}
	// A crash in the middle of a write leaves a partial line.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"config":{"model":"x","L":1`)
	f.Close()

	j2, err := OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if j2.Len() != 2 || j2.Skipped != 1 {
		t.Fatalf("reopened: %d records, %d skipped; want 2 and 1", j2.Len(), j2.Skipped)
	}
	ka, _ := Key(a)
	if r, ok := j2.Get(ka); !ok || r.Final.Top1 != 0.75 {
		t.Errorf("record of %s = %+v, %v; want the later one (top-1 0.75)", ka, r.Final, ok)
	}
	kb, _ := Key(b)
	rb, _ := j2.Get(kb)
	if len(rb.Curve) != 1 || rb.Curve[0].Epoch != 1 || rb.Curve[0].TrainLoss != 2 || rb.Curve[0].Top1 != 0.2 {
		t.Errorf("curve read back as %+v", rb.Curve)
	}
	if got := j2.Records(); len(got) != 2 || string(got[0].Config) != ka {
		t.Errorf("Records() = %d records, first %s; want 2, first %s", len(got), got[0].Config, ka)
	}
	// The next append starts on a fresh line, so nothing else is lost.
	c := cfg{"gd", 32, 0.01}
	if err := j2.Append(c, Record{Final: train.Metrics{Top1: 0.1}}); err != nil {
		t.Fatal(err)
	}
	if err := j.Reload(); err != nil {
		t.Fatal(err)
	}
	if j.Len() != 3 || j.Skipped != 1 {
		t.Errorf("after repair: %d records, %d skipped; want 3 and 1", j.Len(), j.Skipped)
	}
	// Whitespace in a hand-edited config does not change the key.
	raw, _ := os.ReadFile(path)
	raw = bytes.Replace(raw, []byte(`{"model":"tf","L":16`), []byte(`{ "model": "tf", "L": 16`), 1)
	os.WriteFile(path, raw, 0o644)
	if err := j.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, ok := j.Get(kb); !ok {
		t.Errorf("key %s not found after reformatting its config", kb)
	}
}

func TestPointJSON(t *testing.T) {
	p := Point{Panel: "p", Series: "s", X: 2, Seeds: 0, Top1: NewStat(nil), Oracle: math.NaN()}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("point with NaN: %v", err)
	}
	if !strings.Contains(string(b), `"oracle":null`) || !strings.Contains(string(b), `"mean":null`) {
		t.Errorf("point JSON %s: want NaNs as null", b)
	}
}

func TestWritePointsCSV(t *testing.T) {
	var buf bytes.Buffer
	pts := []Point{{Panel: "rbf", Series: "GD, 1 step", X: 2048, Seeds: 2, Top1: NewStat([]float64{0.5, 0.7}), NLL: NewStat([]float64{1, 1}), Oracle: 0.8}}
	if err := WritePointsCSV(&buf, pts); err != nil {
		t.Fatal(err)
	}
	want := "panel,series,x,seeds,top1_mean,top1_std,nll_mean,nll_std,oracle\n" +
		"rbf,\"GD, 1 step\",2048,2,0.6,0.141421,1,0,0.8\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
}
