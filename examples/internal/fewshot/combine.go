package fewshot

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gdattn/gdattn/internal/cli"
)

// Combine combines the results.json of several folders (the results of
// separate commands: say, the GD models and a Trained TF with other
// settings) into one, grouping the models of the same feature set (same
// cache entry and input dimension): a model present in several folders gets
// the seeds of all, a seed in several folders is taken from the last. It
// writes results.json and fewshot.png to out. (Runs of one plan need no
// combining: -merge merges them.) It reads the committed results.json
// files, which were combined this way.
func Combine(dirs []string, out string, stdout io.Writer) (*Results, error) {
	if len(dirs) < 2 {
		return nil, fmt.Errorf("-combine needs at least two result folders")
	}
	if out == "" {
		return nil, fmt.Errorf("-combine needs -out")
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
			printModel(stdout, m)
		}
	}
	fmt.Fprintf(stdout, "wrote %s and %s\n", filepath.Join(out, "results.json"), filepath.Join(out, "fewshot.png"))
	return merged, nil
}

// replaceModel adds mr to ms. A model already in ms under the same name gets
// mr's seeds (a seed present in both is taken from mr) and its mean and std
// recomputed, so seeds run as separate processes merge into one model;
// linear probing, which has no seed, is replaced whole.
func replaceModel(ms []ModelResult, mr ModelResult) []ModelResult {
	for i := range ms {
		if ms[i].Name != mr.Name {
			continue
		}
		if mr.Name == "lp" {
			ms[i] = mr
			return ms
		}
		seeds := append([]SeedResult(nil), ms[i].Seeds...)
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
		ms[i].Seeds = seeds
		setStats(&ms[i])
		return ms
	}
	return append(ms, mr)
}

// CheckCombine checks the -combine mode of the command line: no other flag
// but -out, which must be set, and at least two folders in list
// (comma-separated), each with a readable results.json that holds results
// (every trained model with its seeds), none of them -out. It returns the
// folders.
func CheckCombine(set cli.Set, list, out string) ([]string, error) {
	if err := cli.Only(set, true, "-combine", "combine", "out"); err != nil {
		return nil, err
	}
	if out == "" {
		return nil, cli.Usagef("-combine needs -out")
	}
	dirs := strings.Split(list, ",")
	if len(dirs) < 2 {
		return nil, cli.Usagef("-combine needs at least two result folders")
	}
	for i, d := range dirs {
		dirs[i] = strings.TrimSpace(d)
		p := filepath.Join(dirs[i], "results.json")
		raw, err := cli.ReadInput("combine", p, cli.MaxResultsBytes)
		if err != nil {
			return nil, err
		}
		var r Results
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, cli.Usagef("-combine: %s: %v", p, err)
		}
		if len(r.Features) == 0 {
			return nil, cli.Usagef("-combine: %s holds no results", p)
		}
		for _, fr := range r.Features {
			for _, m := range fr.Models {
				if m.Name != "lp" && len(m.Seeds) == 0 {
					// Combine averages the seeds of a trained model.
					return nil, cli.Usagef("-combine: %s: %s features: model %q has no seeds", p, fr.Kind, m.Name)
				}
			}
		}
	}
	ins := make([]cli.Path, len(dirs))
	for i, d := range dirs {
		ins[i] = cli.Path{Flag: "combine", Path: d}
	}
	// Combine writes -out/results.json: -out must not be a combined folder.
	if err := cli.NotInputs([]cli.Path{{Flag: "out", Path: out}}, ins...); err != nil {
		return nil, err
	}
	return dirs, nil
}
