package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gdattn/gdattn/examples/internal/sweep"
)

// merge combines the results.json of several runs (say, GD models and the
// Trained TF run as separate processes) into one, grouping the models of the
// same feature set (same cache entry and input dimension): a model present in
// several folders gets the seeds of all, a seed in several folders is taken
// from the last. It writes results.json and fewshot.png to out.
func merge(dirs []string, out string, stdout io.Writer) (*Results, error) {
	if len(dirs) < 2 {
		return nil, fmt.Errorf("-merge needs at least two result folders")
	}
	if out == "" {
		return nil, fmt.Errorf("-merge needs -out")
	}
	merged := &Results{}
	var cmds []string
	for _, dir := range dirs {
		raw, err := os.ReadFile(filepath.Join(dir, "results.json"))
		if err != nil {
			return nil, err
		}
		var r Results
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "results.json"), err)
		}
		cmds = append(cmds, r.Command)
		merged.Seconds += r.Seconds
		if merged.Options.Models == "" {
			merged.Options = r.Options
		}
	next:
		for _, fr := range r.Features {
			for i := range merged.Features {
				m := &merged.Features[i]
				if m.Cache == fr.Cache && m.InputDim == fr.InputDim {
					for _, mr := range fr.Models {
						m.Models = replaceModel(m.Models, mr)
					}
					continue next
				}
			}
			merged.Features = append(merged.Features, fr)
		}
	}
	merged.Command = strings.Join(cmds, " && ")
	if err := writeResults(merged, out); err != nil {
		return nil, err
	}
	for _, fr := range merged.Features {
		fmt.Fprintf(stdout, "%s features, d=%d:\n", fr.Kind, fr.InputDim)
		for _, m := range fr.Models {
			fmt.Fprintf(stdout, "  %-4s top-1 %.4f ± %.4f   NLL %.4f ± %.4f   (%d seeds)\n", m.Name, m.Top1, m.Top1Std, m.NLL, m.NLLStd, len(m.Seeds))
		}
	}
	fmt.Fprintf(stdout, "wrote %s and %s\n", filepath.Join(out, "results.json"), filepath.Join(out, "fewshot.png"))
	return merged, nil
}

// replaceModel adds mr to ms. A model already in ms under the same name gets
// mr's seeds (a seed present in both is taken from mr) and its mean and std
// recomputed, so seeds run as separate processes merge into one model;
// linear probing, which has no seed, is replaced whole.
func replaceModel(ms []modelRes, mr modelRes) []modelRes {
	for i := range ms {
		if ms[i].Name != mr.Name {
			continue
		}
		if mr.Name == "lp" {
			ms[i] = mr
			return ms
		}
		seeds := append([]seedRes(nil), ms[i].Seeds...)
	next:
		for _, sr := range mr.Seeds {
			for k := range seeds {
				if seeds[k].Seed == sr.Seed {
					seeds[k] = sr
					continue next
				}
			}
			seeds = append(seeds, sr)
		}
		sort.Slice(seeds, func(a, b int) bool { return seeds[a].Seed < seeds[b].Seed })
		var top1, nll []float64
		for _, sr := range seeds {
			top1, nll = append(top1, sr.Top1), append(nll, sr.NLL)
		}
		ms[i].Seeds = seeds
		ms[i].Top1, ms[i].Top1Std = sweep.MeanStd(top1)
		ms[i].NLL, ms[i].NLLStd = sweep.MeanStd(nll)
		return ms
	}
	return append(ms, mr)
}
