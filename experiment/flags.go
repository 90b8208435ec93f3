package experiment

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Flags are the worker flags every experiment command shares. Register
// them on the command's flag set, then Check them and ask Indices for the
// runs to run.
type Flags struct {
	// Plan prints the plan (-plan), PlanJSON as JSON (-plan-json).
	Plan, PlanJSON bool
	// Index is -index: one run's index, or "env" for the index in
	// $JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) or
	// $SLURM_ARRAY_TASK_ID (a Slurm array task).
	Index string
	// Shard is -shard i/n: runs i, i+n, i+2n, ... of the plan.
	Shard string
	// Merge builds the report from the runs that exist (-merge); Partial
	// lets it do so while runs are missing (-partial).
	Merge, Partial bool
	// Submit is -submit: "slurm" submits the missing runs as a job array
	// and a merge job (SubmitSlurm), with the options in Slurm.
	Submit string
	Slurm  SlurmOptions
}

// FlagNames are the flags Register defines: they choose what a command
// does with its plan, and a worker submitted by SubmitSlurm gets the
// command line without them.
var FlagNames = []string{"plan", "plan-json", "index", "shard", "merge", "partial", "submit",
	"parallel", "cpus", "mem", "time-factor", "time", "partition", "sbatch-args", "gpu"}

// Register defines the flags on fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.BoolVar(&f.Plan, "plan", false, "print the plan (every run: index, estimated CPU time, label, key; the runs done marked) and exit")
	fs.BoolVar(&f.PlanJSON, "plan-json", false, "print the plan as JSON and exit")
	fs.StringVar(&f.Index, "index", "", "run only run i of the plan (0-based; env: from $JOB_COMPLETION_INDEX or $SLURM_ARRAY_TASK_ID), skipped if done")
	fs.StringVar(&f.Shard, "shard", "", "i/n: run only runs i, i+n, i+2n, ... of the plan (0 <= i < n), each skipped if done")
	fs.BoolVar(&f.Merge, "merge", false, "write the tables and figures from the runs done; refused while runs are missing unless -partial")
	fs.BoolVar(&f.Partial, "partial", false, "with -merge: write them while runs are missing (the output says so)")
	fs.StringVar(&f.Submit, "submit", "", "slurm: submit the missing runs as a Slurm job array (sbatch), and a merge job after it")
	fs.IntVar(&f.Slurm.Parallel, "parallel", 0, "with -submit: at most this many array tasks at once (0: no limit)")
	fs.IntVar(&f.Slurm.CPUs, "cpus", 1, "with -submit: CPUs per task (--cpus-per-task)")
	fs.IntVar(&f.Slurm.MemMB, "mem", 2048, "with -submit: memory per task in MiB (--mem)")
	fs.Float64Var(&f.Slurm.TimeFactor, "time-factor", 3, "with -submit: the time limit of a task is this times the longest run's estimate, plus 10 minutes")
	fs.StringVar(&f.Slurm.Time, "time", "", "with -submit: each task's time limit (--time, e.g. 2:00:00; default from the plan's estimates)")
	fs.StringVar(&f.Slurm.Partition, "partition", "", "with -submit: the Slurm partition (default: the cluster's)")
	fs.StringVar(&f.Slurm.ExtraArgs, "sbatch-args", "", "with -submit: more sbatch options, space-separated (e.g. --account=abc --qos=long)")
	fs.BoolVar(&f.Slurm.GPU, "gpu", false, "with -submit: request one GPU per task (--gres=gpu:1; for the CUDA build)")
}

// Check refuses combinations of the flags that make no sense. set holds
// the flags given on the command line.
func (f *Flags) Check(set map[string]bool) error {
	modes := 0
	for _, m := range []bool{f.Plan || f.PlanJSON, f.Index != "", f.Shard != "", f.Merge, f.Submit != ""} {
		if m {
			modes++
		}
	}
	if modes > 1 {
		return errors.New("-plan/-plan-json, -index, -shard, -merge and -submit exclude each other")
	}
	if f.Plan && f.PlanJSON {
		return errors.New("-plan and -plan-json exclude each other")
	}
	if set["partial"] && !f.Merge {
		return errors.New("-partial needs -merge")
	}
	if f.Submit != "" && f.Submit != "slurm" {
		return fmt.Errorf("-submit %q: want slurm", f.Submit)
	}
	for _, n := range []string{"parallel", "cpus", "mem", "time-factor", "time", "partition", "sbatch-args", "gpu"} {
		if set[n] && f.Submit == "" {
			return fmt.Errorf("-%s needs -submit", n)
		}
	}
	if f.Submit != "" {
		if err := f.Slurm.check(); err != nil {
			return err
		}
	}
	if f.Shard != "" {
		if _, _, err := ParseShard(f.Shard); err != nil {
			return err
		}
	}
	if f.Index != "" && f.Index != "env" {
		if _, err := strconv.Atoi(f.Index); err != nil {
			return fmt.Errorf("-index %q: want a run index >= 0 or env", f.Index)
		}
	}
	return nil
}

// Worker reports whether the flags ask to run a part of the plan
// (-index or -shard).
func (f *Flags) Worker() bool { return f.Index != "" || f.Shard != "" }

// Indices returns the indices of the runs to run in a plan of n runs: the
// one of -index, the share of -shard, or all.
func (f *Flags) Indices(n int) ([]int, error) {
	switch {
	case f.Index != "":
		i, err := f.index()
		if err != nil {
			return nil, err
		}
		if i < 0 || i >= n {
			return nil, fmt.Errorf("-index %d: the plan has runs 0..%d", i, n-1)
		}
		return []int{i}, nil
	case f.Shard != "":
		si, sn, err := ParseShard(f.Shard)
		if err != nil {
			return nil, err
		}
		var out []int
		for i := si; i < n; i += sn {
			out = append(out, i)
		}
		return out, nil
	}
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out, nil
}

// IndexEnv are the environment variables -index env reads, in order.
var IndexEnv = []string{"JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID"}

func (f *Flags) index() (int, error) {
	s, from := f.Index, "-index"
	if s == "env" {
		s = ""
		for _, v := range IndexEnv {
			if x, ok := os.LookupEnv(v); ok {
				s, from = x, "$"+v
				break
			}
		}
		if s == "" {
			return 0, fmt.Errorf("-index env: neither $%s is set", strings.Join(IndexEnv, " nor $"))
		}
	}
	i, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || i < 0 {
		return 0, fmt.Errorf("%s %q: want a run index >= 0", from, s)
	}
	return i, nil
}

// ParseShard parses i/n with 0 <= i < n.
func ParseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	i, errI := strconv.Atoi(a)
	n, errN := strconv.Atoi(b)
	if !ok || errI != nil || errN != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("-shard %q: want i/n with 0 <= i < n", s)
	}
	return i, n, nil
}
