package fewshot

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gdattn/gdattn/examples/internal/sweep"
	"github.com/gdattn/gdattn/experiment"
)

// RunAll does what the experiment flags ask: print the plan, submit it to
// Slurm, run a part of it (-index, -shard), merge the runs done into
// results.json, the table and the figure (-merge), or, by default, run
// every run without a result and merge. fs is the command's flag set (the
// Slurm workers' command line is built from it); stdout gets the plan or
// the table.
func RunAll(o Options, exp experiment.Flags, fs *flag.FlagSet, stdout io.Writer) error {
	e, err := New(o)
	if err != nil {
		return err
	}
	if o.Out == "" {
		if exp.Plan || exp.PlanJSON || exp.Merge || exp.Submit != "" || exp.Worker() {
			return fmt.Errorf("-out is empty: the plan's runs are stored under -out/runs")
		}
		_, err := e.Run(stdout)
		return err
	}
	store, err := experiment.OpenStore(o.Out)
	if err != nil {
		return err
	}
	switch {
	case exp.Plan, exp.PlanJSON:
		return experiment.WritePlan(stdout, e.Plan, store, exp.PlanJSON)
	case exp.Submit != "":
		_, err := experiment.Submit(stdout, e.Plan, store, fs, exp.Slurm)
		return err
	case exp.Merge:
		rep, err := experiment.Collect(e.Plan, store)
		if err != nil {
			return err
		}
		rep.WriteStatus(stdout)
		if err := rep.Check(exp.Partial); err != nil {
			return err
		}
		_, err = e.Merge(rep, stdout)
		return err
	}
	indices, err := exp.Indices(len(e.Plan.Runs))
	if err != nil {
		return err
	}
	if err := e.Execute(store, indices); err != nil || exp.Worker() {
		return err
	}
	rep, err := experiment.Collect(e.Plan, store)
	if err != nil {
		return err
	}
	if err := rep.Check(false); err != nil {
		return err
	}
	_, err = e.Merge(rep, stdout)
	return err
}

// Run runs every run of the plan that has no result in the store under
// e.O.Out (a temporary one, removed after, when Out is empty), then
// merges them all: the table on stdout, results.json and fewshot.png to
// Out.
func (e *Experiment) Run(stdout io.Writer) (*Results, error) {
	dir := e.O.Out
	if dir == "" {
		tmp, err := os.MkdirTemp("", "fewshot-runs-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	store, err := experiment.OpenStore(dir)
	if err != nil {
		return nil, err
	}
	all := make([]int, len(e.Plan.Runs))
	for i := range all {
		all[i] = i
	}
	if err := e.Execute(store, all); err != nil {
		return nil, err
	}
	rep, err := experiment.Collect(e.Plan, store)
	if err != nil {
		return nil, err
	}
	if err := rep.Check(false); err != nil {
		return nil, err
	}
	return e.Merge(rep, stdout)
}

// Execute runs the runs at indices that have no result in store, each
// storing its result (package experiment).
func (e *Experiment) Execute(store *experiment.Store, indices []int) error {
	progress := e.progress()
	return experiment.Execute(e.Plan, store, indices, func(i int, _ experiment.Run) (any, error) {
		return e.runOne(i, progress)
	}, progress)
}

func (e *Experiment) progress() io.Writer {
	if e.O.Quiet {
		return nil
	}
	return os.Stderr
}

// Merge builds the results from the runs done of rep: for every feature
// map its models in plan order, each with the seeds done, prints the
// table and, with Out set, writes results.json and fewshot.png there. A
// partial report (runs missing) says so first.
func (e *Experiment) Merge(rep *experiment.Report, stdout io.Writer) (*Results, error) {
	if note := rep.Note(); note != "" {
		fmt.Fprintln(stdout, note+"; the table holds the runs done")
	}
	res := &Results{Command: strings.Join(os.Args, " "), Options: e.O}
	for _, kind := range e.kinds {
		var fr *FeatureResult
		trainClasses := 0
		for i, r := range rep.Plan.Runs {
			k := e.keys[i]
			if k.Features.Kind != kind {
				continue
			}
			got, ok := rep.Get(r.Key)
			if !ok {
				continue
			}
			var out runOut
			if err := json.Unmarshal(got.Output, &out); err != nil {
				return nil, fmt.Errorf("result of %s (%s): %w", r.Label, got.Source, err)
			}
			res.Seconds += got.Seconds
			if fr == nil {
				f := out.Features
				f.Cache, f.Models = filepath.Join(e.O.Cache, f.Cache), nil
				fr, trainClasses = &f, out.TrainClasses
			}
			sr := SeedResult{Top1: out.Top1, NLL: out.NLL, Seconds: got.Seconds, Curve: out.Curve, Params: out.Params}
			if k.Train != nil {
				sr.Seed = k.Train.Seed
			}
			var m *ModelResult
			if n := len(fr.Models); n > 0 && fr.Models[n-1].Name == k.Model {
				m = &fr.Models[n-1]
			} else {
				fr.Models = append(fr.Models, ModelResult{Name: k.Model})
				m = &fr.Models[len(fr.Models)-1]
			}
			m.Seeds = append(m.Seeds, sr)
			if k.Probe != nil {
				m.Top1, m.NLL, m.Top1Std, m.NLLStd = out.Top1, out.NLL, out.Top1Err, out.NLLErr
			}
		}
		if fr == nil {
			continue
		}
		for i := range fr.Models {
			if m := &fr.Models[i]; m.Name != "lp" {
				setStats(m)
			}
		}
		fmt.Fprintf(stdout, "%s features (%s): d=%d, %d train / %d held-out categories, L=%d train / M=%d test episodes (5-way 10-shot, N=50)\n",
			kind, fr.Cache, fr.InputDim, trainClasses, len(fr.Test), e.O.L, e.O.M)
		for _, m := range fr.Models {
			printModel(stdout, m)
		}
		res.Features = append(res.Features, *fr)
	}
	if len(res.Features) == 0 {
		return nil, fmt.Errorf("no run of plan %s is done: nothing to merge", rep.Plan.Name)
	}
	if e.O.Out != "" {
		if err := writeResults(res, e.O.Out); err != nil {
			return nil, err
		}
		fmt.Fprintf(stdout, "wrote %s and %s\n", filepath.Join(e.O.Out, "results.json"), filepath.Join(e.O.Out, "fewshot.png"))
	}
	return res, nil
}

// setStats sets a trained model's means and standard deviations over its
// seeds.
func setStats(m *ModelResult) {
	var top1, nll []float64
	for _, sr := range m.Seeds {
		top1, nll = append(top1, sr.Top1), append(nll, sr.NLL)
	}
	m.Top1, m.Top1Std = sweep.MeanStd(top1)
	m.NLL, m.NLLStd = sweep.MeanStd(nll)
}

func printModel(w io.Writer, m ModelResult) {
	fmt.Fprintf(w, "  %-4s top-1 %.4f ± %.4f   NLL %.4f ± %.4f   (%d seeds)\n", m.Name, m.Top1, m.Top1Std, m.NLL, m.NLLStd, len(m.Seeds))
}
