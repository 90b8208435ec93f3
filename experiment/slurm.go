package experiment

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// SlurmOptions are the resources and options of a Slurm submission.
type SlurmOptions struct {
	// Parallel is the most array tasks running at once (%P; 0: no limit).
	Parallel int
	// CPUs and MemMB are each task's --cpus-per-task and --mem (MiB).
	CPUs, MemMB int
	// TimeFactor scales the longest missing run's estimate into the
	// tasks' --time (plus 10 minutes).
	TimeFactor float64
	// Time, if set, is the tasks' --time instead (Slurm's format, e.g.
	// 2:00:00 or 1-00:00:00); a plan without estimates needs it.
	Time string
	// Partition is --partition (empty: the cluster's default).
	Partition string
	// ExtraArgs are more sbatch options, space-separated.
	ExtraArgs string
	// GPU asks for one GPU per task (--gres=gpu:1).
	GPU bool
	// Sbatch is the sbatch program (default "sbatch" on $PATH).
	Sbatch string
}

func (o SlurmOptions) check() error {
	switch {
	case o.Parallel < 0:
		return fmt.Errorf("-parallel %d: want >= 0", o.Parallel)
	case o.CPUs < 1 || o.CPUs > 1024:
		return fmt.Errorf("-cpus %d: want 1..1024", o.CPUs)
	case o.MemMB < 1:
		return fmt.Errorf("-mem %d: want >= 1 (MiB)", o.MemMB)
	case !(o.TimeFactor > 0) || math.IsInf(o.TimeFactor, 0):
		return fmt.Errorf("-time-factor %v: want > 0", o.TimeFactor)
	}
	return nil
}

// Submission is what SubmitSlurm submitted.
type Submission struct {
	ArrayJob, MergeJob  string // job ids ("" when nothing was submitted)
	Indices             []int  // the runs of the array
	Script, MergeScript string
	Time                string // the tasks' --time
}

// SlurmTime formats seconds as Slurm's --time, D-HH:MM:SS.
func SlurmTime(sec float64) string {
	s := int64(math.Ceil(sec))
	return fmt.Sprintf("%d-%02d:%02d:%02d", s/86400, s/3600%24, s/60%60, s%60)
}

// SubmitSlurm submits the runs of rep's plan that have no result as one
// Slurm job array (sbatch --array=<indices>%P), whose task k runs
// "command -index k", and a merge job ("command -merge") that starts when
// the array has ended (--dependency=afterany). command is the worker's
// command line: a program on the filesystem the nodes share and its
// flags, without the flags of FlagNames. The batch scripts and one log per
// task go to dir (dir/logs/<plan>-<job>_<task>.out). With every run done,
// only the merge job is submitted. Progress lines go to w.
func SubmitSlurm(rep *Report, command []string, dir string, o SlurmOptions, w io.Writer) (*Submission, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if len(command) == 0 {
		return nil, errors.New("experiment: slurm: no command")
	}
	if o.Sbatch == "" {
		o.Sbatch = "sbatch"
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, fmt.Errorf("experiment: slurm: %w", err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("experiment: slurm: %w", err)
	}
	name := rep.Plan.Name
	longest := 0.0
	for _, i := range rep.Missing {
		longest = max(longest, rep.Plan.Runs[i].Estimate)
	}
	sub := &Submission{Indices: rep.Missing, Time: SlurmTime(longest*o.TimeFactor + 600)}
	if o.Time != "" {
		sub.Time = o.Time
	} else if longest == 0 && len(rep.Missing) > 0 {
		return nil, fmt.Errorf("-submit: plan %s has no CPU-time estimates: give the tasks' time limit with -time (e.g. -time 2:00:00)", name)
	}
	common := []string{"--chdir=" + cwd, fmt.Sprintf("--cpus-per-task=%d", o.CPUs), fmt.Sprintf("--mem=%d", o.MemMB)}
	if o.Partition != "" {
		common = append(common, "--partition="+o.Partition)
	}
	common = append(common, strings.Fields(o.ExtraArgs)...)
	env := fmt.Sprintf("export GOMAXPROCS=${SLURM_CPUS_PER_TASK:-%d} OPENBLAS_NUM_THREADS=${SLURM_CPUS_PER_TASK:-%d} OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-%d}\n", o.CPUs, o.CPUs, o.CPUs)
	var dep string
	if len(rep.Missing) > 0 {
		opts := append(append([]string{}, common...), "--job-name=gdattn-"+name, "--time="+sub.Time,
			"--output="+filepath.Join(dir, "logs", name+"-%A_%a.out"))
		if o.GPU {
			opts = append(opts, "--gres=gpu:1")
		}
		script := batchScript(opts, env, append(append([]string{}, command...), "-index", "$SLURM_ARRAY_TASK_ID"))
		sub.Script = filepath.Join(dir, name+"-array.sh")
		if err := writeScript(sub.Script, script); err != nil {
			return nil, err
		}
		array := IndexList(rep.Missing)
		if o.Parallel > 0 {
			array += fmt.Sprintf("%%%d", o.Parallel)
		}
		if sub.ArrayJob, err = sbatch(o.Sbatch, "--parsable", "--array="+array, sub.Script); err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "submitted %d runs of plan %s as job array %s (--array=%s, --time=%s); logs in %s\n",
			len(rep.Missing), name, sub.ArrayJob, array, sub.Time, filepath.Join(dir, "logs"))
		dep = "--dependency=afterany:" + sub.ArrayJob
	} else {
		fmt.Fprintf(w, "every run of plan %s has a result: submitting only the merge\n", name)
	}
	opts := append(append([]string{}, common...), "--job-name=gdattn-"+name+"-merge", "--time=0-00:30:00",
		"--output="+filepath.Join(dir, "logs", name+"-merge-%j.out"))
	sub.MergeScript = filepath.Join(dir, name+"-merge.sh")
	if err := writeScript(sub.MergeScript, batchScript(opts, env, append(append([]string{}, command...), "-merge"))); err != nil {
		return nil, err
	}
	args := []string{"--parsable"}
	if dep != "" {
		args = append(args, dep)
	}
	if sub.MergeJob, err = sbatch(o.Sbatch, append(args, sub.MergeScript)...); err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "submitted the merge as job %s (after the array ends; with runs still missing it reports them and fails)\n", sub.MergeJob)
	return sub, nil
}

func batchScript(opts []string, env string, command []string) string {
	var b strings.Builder
	b.WriteString("#!/bin/bash\n# Written by gdattn's experiment.SubmitSlurm.\n")
	for _, o := range opts {
		b.WriteString("#SBATCH " + o + "\n")
	}
	b.WriteString("set -eu\n" + env + "exec")
	for _, a := range command {
		if a == "$SLURM_ARRAY_TASK_ID" {
			b.WriteString(` "$SLURM_ARRAY_TASK_ID"`)
			continue
		}
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString("\n")
	return b.String()
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=/.,:+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func writeScript(path, text string) error {
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		return fmt.Errorf("experiment: slurm: %w", err)
	}
	return nil
}

// sbatch runs sbatch --parsable ... and returns the job id.
func sbatch(prog string, args ...string) (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.Command(prog, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("experiment: slurm: %s %s: %v: %s", prog, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	id, _, _ := strings.Cut(strings.TrimSpace(out.String()), ";") // "<id>;<cluster>"
	if id == "" {
		return "", fmt.Errorf("experiment: slurm: %s printed no job id", prog)
	}
	return id, nil
}

// WorkerCommand returns the command line of a worker: the running program
// (which must be on a filesystem the nodes share: a binary built with go
// build, not go run's temporary one) and every flag given on fs's command
// line as -name=value, except those of FlagNames.
func WorkerCommand(fs *flag.FlagSet) ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("experiment: %w", err)
	}
	if strings.Contains(exe, string(filepath.Separator)+"go-build") {
		return nil, fmt.Errorf("-submit: this program runs from go run's temporary %s, which the cluster's nodes cannot run: build it (go build -o bin/NAME ./examples/NAME) and submit with that", exe)
	}
	return append([]string{exe}, GivenFlags(fs, FlagNames)...), nil
}

// GivenFlags returns the flags given on fs's command line as -name=value,
// in the order of their names, leaving out those in skip.
func GivenFlags(fs *flag.FlagSet, skip []string) []string {
	var out []string
	fs.Visit(func(f *flag.Flag) {
		if !slices.Contains(skip, f.Name) {
			out = append(out, "-"+f.Name+"="+f.Value.String())
		}
	})
	return out
}
