package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/examples/internal/fewshot"
	"github.com/gdattn/gdattn/examples/internal/sweep"
)

// TestCommittedResults: the committed results files still decode, field
// for field, into the results the command writes today, every model's mean
// and standard deviation are those of its seeds, and every model row of
// RESULTS.md's tables is in one of them (so each table keeps its
// provenance).
func TestCommittedResults(t *testing.T) {
	doc, err := os.ReadFile("RESULTS.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, name := range []string{"results.json", "results-d64.json", "results-d512.json"} {
		raw, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		var r fewshot.Results
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(r.Features) == 0 {
			t.Fatalf("%s holds no results", name)
		}
		for _, fr := range r.Features {
			for _, m := range fr.Models {
				if m.Name != "lp" {
					var top1, nll []float64
					for _, s := range m.Seeds {
						top1, nll = append(top1, s.Top1), append(nll, s.NLL)
					}
					mt, st := sweep.MeanStd(top1)
					mn, sn := sweep.MeanStd(nll)
					if math.Abs(mt-m.Top1) > 1e-12 || math.Abs(st-m.Top1Std) > 1e-12 || math.Abs(mn-m.NLL) > 1e-12 || math.Abs(sn-m.NLLStd) > 1e-12 {
						t.Errorf("%s: %s %s: mean ± std %v ± %v, NLL %v ± %v; its seeds give %v ± %v, %v ± %v",
							name, fr.Kind, m.Name, m.Top1, m.Top1Std, m.NLL, m.NLLStd, mt, st, mn, sn)
					}
				}
				row := fmt.Sprintf("| %.4f ± %.4f | %.4f ± %.4f |", m.Top1, m.Top1Std, m.NLL, m.NLLStd)
				if !strings.Contains(string(doc), row) {
					t.Errorf("%s: %s features, d=%d, %s: the row %q is not in RESULTS.md", name, fr.Kind, fr.InputDim, m.Name, row)
				}
				rows++
			}
		}
	}
	if rows != 14 {
		t.Errorf("checked %d model rows, want the 14 of the committed files", rows)
	}
}
