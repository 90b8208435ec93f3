// Command peer times gdattn against a PyTorch implementation of the same
// models (peer.py, next to this file) and prints a markdown table of the
// median step times, their ratio and the peak memory of each side.
//
//	go run ./bench/peer                    # 5 repetitions, 1 thread, train, float32
//	go run ./bench/peer -reps 9 -threads 2 -mode infer
//	go run ./bench/peer -workloads synthetic/gd-1,quadrant/gd-1 -out peer.md
//	go run ./bench/peer -reps 3 -workloads language/gd-small,language/gdff-small,language/gpt-small
//	go run ./bench/peer -workloads synthetic/gd-1,synthetic/tf-1 -N 10,50,125,250
//
// Workloads are bench.ICLWorkloads names and the language workloads
// language/<model>-<preset>: model gd (gd.LM, the GD language model of
// Appendix H), gdff (GD + FF) or gpt (tf.GPT, 1 layer), preset small
// (bench.LMSmall: vocabulary 50,258, context 64, d' = 64, 8 heads, batch 8)
// or, with -lm-paper, paper (bench.LMPaper). The language workloads train
// with bench.LMTrainConfig on both sides (AdamW as examples/language, with
// gradient clipping); the in-context ones with Adam.
//
// PyTorch runs in three implementations of the same models (-impl; see
// peer.py): "mirror", the same operations as gdattn's graph (selection
// matrices as products, one-hot label embedding), "idiomatic", what a
// PyTorch user would write (slices, a gather, the GD erase and
// cross-attention as one assignment), and "fast", the fastest formulation
// of the same functions found (products regrouped: the TF head's scores
// through g W_Q W_Kᵀ and its values through W_V W_O, the GD kernel weights
// once for all blocks; additive masks; the last GD block and the last TF
// layer (with its cross-attention) at the query row only, which alone
// reaches the loss, as gdattn computes them, the latter's values regrouped as
// (w·z_c)·(W_V W_O)). gdattn's Trained TF computes those values the same
// way (tf.Config.RegroupQuery) unless -regroup-query=false; the sizes
// column says "regrouped" when it does. Its GD model computes the first
// block's residuals and their gradients in one op (gd.Config.FuseEncoder)
// unless -fuse-encoder=false; the sizes column then says "fused encoder".
// Its language models compute the loss's softmax of float32 logits in
// float32 arithmetic, as PyTorch's cross_entropy does
// (bench.Workload.Float32CrossEntropy), unless -xent32=false; the sizes
// column then says "float32 softmax".
// Every side runs as a child process,
// one workload at a time, the order rotating from one repetition to the
// next so that a change in the machine's load hits all alike; each child warms up, then
// times single steps until it has -min-steps of them and -min-time, and
// reports their median. The table gives, per workload, the median over the
// repetitions of each side's median, the ratio gdattn/PyTorch of those, the
// range of the per-repetition ratios, the same for the process CPU time per
// step (user + system: robust to other jobs' load, which a wall clock on a
// shared machine mostly measures), and the peak RSS of each side's
// child process (VmHWM from /proc/self/status, read by the child at its
// end: the whole process, so PyTorch's includes the interpreter and the
// torch import; the "(process baseline)" row shows that floor for each
// side).
//
// -N runs every in-context workload at each of the listed context sizes
// (named synthetic/gd-1/N=125 and so on; such a name is also accepted by
// -workloads): the authors ran their synthetic sweeps at N = 125.
//
// Threads: every child, gdattn's and PyTorch's, gets every thread variable
// the libraries involved read set to -threads (threadVars: GOMAXPROCS,
// OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS, ...), and PyTorch
// also torch.set_num_threads(-threads). (OpenBLAS sizes its own thread pool
// from OPENBLAS_NUM_THREADS or the core count, whatever torch.set_num_threads
// says: without the variable a "one thread" PyTorch ran its products on
// every core.)
//
// The peer's BLAS: Debian's python3-torch links whatever libblas.so.3 the
// system's alternatives provide, the reference (netlib) BLAS unless an
// optimised one is installed (apt-get install libopenblas0-pthread). Before
// anything else the driver runs `peer.py blas` with the same thread
// variables: it names the BLAS library mapped into the PyTorch process and
// times a 1024x1024x1024 float32 torch.mm. The report header prints both,
// and the driver refuses to time against a peer whose sgemm runs below
// minPeerGFLOPS per second of CPU time (a reference BLAS runs at about 6)
// unless -allow-slow-blas is given, in which case the header says so in
// bold.
//
// Before timing, the check (skipped with -nocheck) verifies that the sides
// compute the same thing: for each checked workload (-check-workloads; by
// default the synthetic ones and the timed language workloads of the small
// preset) gdattn builds the model in float64, writes the minibatch (x, y;
// for a language model the ids and targets), every parameter (W_e, log α,
// log g, and the TF's matrices; the language models' embeddings, heads,
// layer norms and feed-forward weights) and every gradient as .npy files
// with graph/npy, and peer.py loads them with numpy and compares the loss
// of each implementation (to 1e-6, absolute) and its gradients (to 1e-6
// relative to the largest entry).
//
// PyTorch is Debian's python3-torch (apt-get install -y python3-torch),
// run with -python (default /usr/bin/python3).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gdattn/gdattn/bench"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/npy"
	"github.com/gdattn/gdattn/internal/cli"
	"gorgonia.org/tensor"
)

type options struct {
	reps, threads       int
	dtype, mode         string
	workloads, check    string
	python, peer, out   string
	warmup, minSteps    int
	minTime             time.Duration
	worker, workload    string
	impl                string
	noCheck, keepExport bool
	lmPaper             bool
	sweepN              string
	allowSlowBLAS       bool
	regroup             bool
	fuse                bool
	xent32              bool
}

// minPeerGFLOPS is the float32 GFLOP/s (per second of CPU time, one thread)
// below which the peer's BLAS does not count as optimised: OpenBLAS runs
// a 1024x1024 sgemm at about 90-105 on this machine's cores, the reference
// BLAS at about 6.
const minPeerGFLOPS = 50

// threadVars are the environment variables that size a thread pool in the
// children: Go's, OpenMP's (PyTorch's intra-op pool), OpenBLAS's, MKL's,
// BLIS's, numexpr's and Accelerate's. Every child gets each set to -threads.
var threadVars = []string{"GOMAXPROCS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
	"MKL_NUM_THREADS", "BLIS_NUM_THREADS", "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"}

// threadEnv is the environment of a child: this process's, with every
// threadVars variable set to threads (later entries win in os/exec).
func threadEnv(threads string) []string {
	env := os.Environ()
	for _, v := range threadVars {
		env = append(env, v+"="+threads)
	}
	return env
}

// workerFlags are the flags the driver passes to a gdattn child (-worker);
// a child refuses every other flag.
var workerFlags = []string{"worker", "workload", "dtype", "warmup", "min-steps", "min-time", "regroup-query", "fuse-encoder", "xent32"}

func main() { cli.Main("peer", func() error { return command(os.Args[1:]) }) }

// command parses and checks the command line args, then drives the
// comparison or, with -worker, runs as a gdattn child.
func command(args []string) error {
	var o options
	fs := cli.NewFlagSet("peer")
	fs.IntVar(&o.reps, "reps", 5, "repetitions of each side per workload, 1..1000")
	fs.IntVar(&o.threads, "threads", 1, "threads per side (GOMAXPROCS; torch.set_num_threads), 1..1024")
	fs.StringVar(&o.dtype, "dtype", "float32", "float32 or float64")
	fs.StringVar(&o.mode, "mode", "train", "train (forward, backward, Adam) or infer (forward to the logits)")
	fs.StringVar(&o.workloads, "workloads", "synthetic/gd-1,synthetic/gd-2,synthetic/tf-1,synthetic/tf-2",
		"comma-separated workloads: bench.ICLWorkloads names (e.g. quadrant/gd-1, fewshot/tf-1) and language/<gd|gdff|gpt>-small (-paper with -lm-paper)")
	fs.StringVar(&o.check, "check-workloads", "auto",
		"workloads whose loss and gradients are compared before timing (empty: none); auto: the four synthetic ones when an in-context workload is timed, and every timed language workload of the small preset")
	fs.StringVar(&o.sweepN, "N", "", "comma-separated context sizes N (e.g. 10,50,125,250): every in-context workload is timed at each (empty: each workload's own N)")
	fs.BoolVar(&o.allowSlowBLAS, "allow-slow-blas", false, fmt.Sprintf("time against a PyTorch whose sgemm runs below %d GFLOP/s (a reference BLAS) instead of refusing; the report says so in bold", minPeerGFLOPS))
	fs.BoolVar(&o.lmPaper, "lm-paper", false, "allow the language workloads of the paper preset (language/gd-paper, ...: tens of seconds per step)")
	fs.StringVar(&o.impl, "impl", "mirror,idiomatic,fast", "PyTorch implementations to time (peer.py --impl), comma-separated: mirror, idiomatic, fast")
	fs.BoolVar(&o.regroup, "regroup-query", true, "gdattn's Trained TF with tf.Config.RegroupQuery (the last layer's values at the query as (Σ_i w_i z_i)·(W_V P)), as the fast PyTorch peer computes them; false: the default order")
	fs.BoolVar(&o.fuse, "fuse-encoder", true, "gdattn's GD model with gd.Config.FuseEncoder (the first block's residuals (α/N)(w_{e,y_i} − w̄_e) and their gradients as one op); false: the default chain of ops")
	fs.BoolVar(&o.xent32, "xent32", true, "gdattn's language models with the loss's softmax computed in float32 arithmetic (losses.SparseOptions.Float32), as PyTorch computes its cross_entropy of float32 logits; false: gdattn's default float64 exponentials")
	fs.BoolVar(&o.noCheck, "nocheck", false, "skip the loss and gradient comparison (then -check-workloads and -keep do not apply)")
	fs.BoolVar(&o.keepExport, "keep", false, "keep the exported .npy directories of the check")
	fs.StringVar(&o.python, "python", "/usr/bin/python3", "Python interpreter with torch and numpy")
	fs.StringVar(&o.peer, "peer", "", "path of peer.py (default: next to this source file)")
	fs.StringVar(&o.out, "out", "", "also write the markdown report to this file")
	fs.IntVar(&o.warmup, "warmup", 3, "untimed steps per child, 0..1000000")
	fs.IntVar(&o.minSteps, "min-steps", 10, "timed steps per child, at least; 1..1000000")
	fs.DurationVar(&o.minTime, "min-time", 2*time.Second, "timed duration per child, at least (>= 0)")
	fs.StringVar(&o.worker, "worker", "", "internal: run as the gdattn child (train or infer); only -workload, -dtype, -warmup, -min-steps, -min-time, -regroup-query, -fuse-encoder and -xent32 apply")
	fs.StringVar(&o.workload, "workload", "", "internal: the worker's workload")
	err := cli.Parse(fs, args, func(w io.Writer) {
		fmt.Fprintf(w, "Usage: peer [flags]\n\nTimes gdattn against a PyTorch implementation of the same models (see the package documentation).\nExit status: 0 done, 2 bad command line (one line on stderr, before any work), 1 a failure during the run.\n\nFlags:\n")
		cli.PrintDefaults(fs, w)
	})
	if err != nil {
		return err
	}
	set := cli.Given(fs)
	err = cli.Validate(fs, cli.Rules{
		"reps": cli.IntIn(1, 1000), "threads": cli.IntIn(1, 1024), "dtype": cli.OneOf("float32", "float64"),
		"mode": cli.OneOf("train", "infer"), "workloads": cli.List(cli.NonEmpty), "check-workloads": cli.Optional(cli.List(cli.NonEmpty)),
		"lm-paper": cli.Any, "impl": cli.List(cli.OneOf("mirror", "idiomatic", "fast")), "nocheck": cli.Any, "keep": cli.Any,
		"python": cli.NonEmpty, "peer": cli.Any, "out": cli.Any, "warmup": cli.IntIn(0, 1000000),
		"min-steps": cli.IntIn(1, 1000000), "min-time": cli.NonNegative, "worker": cli.Optional(cli.OneOf("train", "infer")),
		"workload": cli.Any, "N": cli.Optional(cli.List(cli.IntIn(1, 100000))), "allow-slow-blas": cli.Any,
		"regroup-query": cli.Any,
		"fuse-encoder":  cli.Any,
		"xent32":        cli.Any,
	})
	if err != nil {
		return err
	}
	if o.worker != "" {
		if err := cli.First(cli.Only(set, true, "-worker", workerFlags...), cli.Required("workload", o.workload)); err != nil {
			return err
		}
		if o.workload != "none" {
			if _, err := findWorkload(o.workload, true); err != nil {
				return cli.Usagef("-workload: %w", err)
			}
		}
		return worker(o)
	}
	err = cli.First(
		cli.OutFile("out", o.out),
		cli.NotInputs([]cli.Path{{Flag: "out", Path: o.out}}, cli.Path{Flag: "python", Path: o.python}, cli.Path{Flag: "peer", Path: o.peer}),
		cli.Needs(set, false, "-worker", "workload"),
		cli.NotWith(set, o.noCheck, "-nocheck", "check-workloads", "keep"),
	)
	if err != nil {
		return err
	}
	if o.peer != "" {
		if err := cli.Exists("peer", o.peer, "file"); err != nil {
			return err
		}
	}
	lists := [][2]string{{"workloads", o.workloads}}
	if o.check != "auto" && o.check != "" {
		lists = append(lists, [2]string{"check-workloads", o.check})
	}
	for _, l := range lists {
		for _, name := range strings.Split(l[1], ",") {
			if _, err := findWorkload(strings.TrimSpace(name), o.lmPaper); err != nil {
				return cli.Usagef("-%s: %w", l[0], err)
			}
		}
	}
	return drive(o)
}

// result is what a child prints.
type result struct {
	MedianMS float64 `json:"median_ms"`
	MeanMS   float64 `json:"mean_ms"`
	MinMS    float64 `json:"min_ms"`
	// CPUMS is the median process CPU time (user + system) of a step.
	CPUMS float64 `json:"cpu_median_ms"`
	Steps int     `json:"steps"`
	// HWM is the child's peak RSS (VmHWM of /proc/self/status) in bytes.
	HWM uint64 `json:"vm_hwm_bytes"`
}

// worker is the gdattn child: it builds the workload, times it and prints a
// result. An empty workload ("none") only starts and exits: its RSS is the
// process baseline.
func worker(o options) error {
	if o.workload == "none" {
		hwm, _ := bench.ReadHWM()
		return json.NewEncoder(os.Stdout).Encode(result{HWM: hwm})
	}
	w, err := findWorkload(o.workload, true)
	if err != nil {
		return err
	}
	w = o.apply(w)
	dt, err := graph.ParseDtype(o.dtype)
	if err != nil {
		return err
	}
	mode, err := bench.ParseMode(o.worker)
	if err != nil {
		return err
	}
	r, err := bench.NewRunner(w, dt, mode, 1)
	if err != nil {
		return err
	}
	defer r.Close()
	t, err := bench.Measure(func() error { _, err := r.Step(); return err }, o.warmup, o.minSteps, 0, o.minTime)
	if err != nil {
		return err
	}
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	hwm, _ := bench.ReadHWM()
	return json.NewEncoder(os.Stdout).Encode(result{MedianMS: ms(t.Median), MeanMS: ms(t.Mean), MinMS: ms(t.Min), CPUMS: ms(t.CPUMedian), Steps: t.Steps, HWM: hwm})
}

// apply sets the options that change how gdattn builds w: -regroup-query
// for a Trained TF, -fuse-encoder for the GD model, -xent32 for the
// language models.
func (o options) apply(w bench.Workload) bench.Workload {
	if w.Language() {
		w.Float32CrossEntropy = o.xent32
	}
	if w.Model == bench.ModelTF {
		w.RegroupQuery = o.regroup
	}
	if w.Model == bench.ModelGD {
		w.FuseEncoder = o.fuse
	}
	return w
}

// run starts a child, parses the last line of its stdout as a result and
// returns it with the child's peak RSS in bytes: the VmHWM the child
// reports. (getrusage's ru_maxrss of a child is no good here: Linux carries
// the parent's high-water mark into a child that Go's os/exec starts with
// CLONE_VM, so every child would read at least the driver's own peak.)
func run(cmd *exec.Cmd) (result, uint64, error) {
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return result{}, 0, fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, tail(errb.String()))
	}
	var r result
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		return result{}, 0, fmt.Errorf("%s: output %q: %w", strings.Join(cmd.Args, " "), out.String(), err)
	}
	return r, r.HWM, nil
}

func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}

type side struct {
	name string
	cmd  func(w bench.Workload) *exec.Cmd
}

func drive(o options) error {
	if o.reps < 1 || o.threads < 1 {
		return errors.New("-reps and -threads must be at least 1")
	}
	if _, err := graph.ParseDtype(o.dtype); err != nil {
		return err
	}
	if _, err := bench.ParseMode(o.mode); err != nil {
		return err
	}
	if o.peer == "" {
		_, file, _, _ := runtime.Caller(0)
		o.peer = filepath.Join(filepath.Dir(file), "peer.py")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ws, err := sweepWorkloads(o.workloads, o.sweepN, o.lmPaper)
	if err != nil {
		return err
	}
	for i := range ws {
		ws[i] = o.apply(ws[i])
	}
	if o.check == "auto" {
		o.check = autoCheck(ws)
	}
	var impls []string
	for _, impl := range strings.Split(o.impl, ",") {
		if impl = strings.TrimSpace(impl); impl != "mirror" && impl != "idiomatic" && impl != "fast" {
			return fmt.Errorf("-impl %q: want mirror, idiomatic or fast (comma-separated)", impl)
		}
		impls = append(impls, impl)
	}
	var report bytes.Buffer
	out := io.MultiWriter(os.Stdout, &report)

	var verInfo map[string]any
	vout, err := exec.Command(o.python, o.peer, "version").Output()
	if err == nil {
		err = json.Unmarshal(vout, &verInfo)
	}
	if err != nil {
		return fmt.Errorf("PyTorch peer unavailable (apt-get install -y python3-torch): %s version: %w", o.peer, err)
	}
	thr := strconv.Itoa(o.threads)
	coreLine, err := chooseCoreType(o.python, o.peer)
	if err != nil {
		return err
	}
	blas, err := peerBLAS(o.python, o.peer, "1")
	if err != nil {
		return err
	}
	blasN := blas
	if o.threads != 1 {
		if blasN, err = peerBLAS(o.python, o.peer, thr); err != nil {
			return err
		}
	}
	slow := blas.GFLOPSCPU < minPeerGFLOPS
	if slow && !o.allowSlowBLAS {
		return fmt.Errorf("the PyTorch peer runs on %s (%s): a 1024x1024 sgemm at %.1f GFLOP/s per CPU-second, below %d: "+
			"timing against it would flatter gdattn (apt-get install libopenblas0-pthread; -allow-slow-blas to time anyway)",
			blas.BLAS, strings.Join(blas.Libraries, ", "), blas.GFLOPSCPU, minPeerGFLOPS)
	}

	fmt.Fprintf(out, "## gdattn vs PyTorch: %s, %s, %d thread(s)\n\n", o.mode, o.dtype, o.threads)
	fmt.Fprintf(out, "%s\n\n", bench.Describe())
	fmt.Fprintf(out, "PyTorch %v, Python %v, numpy %v. Command: `go run ./bench/peer %s`\n\n",
		verInfo["torch"], verInfo["python"], verInfo["numpy"], strings.Join(os.Args[1:], " "))
	fmt.Fprintf(out, "%s\n\n%s\n\n", blasLine(blas, blasN, o.threads), coreLine)
	if slow {
		fmt.Fprintf(out, "**Warning: the PyTorch peer's BLAS is not an optimised one (%.1f GFLOP/s < %d): every ratio below flatters gdattn.**\n\n",
			blas.GFLOPSCPU, minPeerGFLOPS)
	}
	fmt.Fprintf(out, "Thread variables of every timed child: %s=%s.\n\n", strings.Join(threadVars, "="+thr+", "), thr)

	if !o.noCheck && o.check != "" {
		if err := checkAll(o, out); err != nil {
			return err
		}
	}

	goSide := side{"gdattn", func(w bench.Workload) *exec.Cmd {
		name := "none"
		if w.Name != "" {
			name = w.Name
		}
		c := exec.Command(self, "-worker", o.mode, "-workload", name, "-dtype", o.dtype,
			"-warmup", strconv.Itoa(o.warmup), "-min-steps", strconv.Itoa(o.minSteps), "-min-time", o.minTime.String(),
			"-regroup-query="+strconv.FormatBool(o.regroup), "-fuse-encoder="+strconv.FormatBool(o.fuse), "-xent32="+strconv.FormatBool(o.xent32))
		c.Env = threadEnv(thr)
		return c
	}}
	pySide := func(impl string) side {
		return side{"PyTorch " + impl, func(w bench.Workload) *exec.Cmd {
			return pyCmd(o, w, impl, thr)
		}}
	}
	sides := []side{goSide}
	for _, impl := range impls {
		sides = append(sides, pySide(impl))
	}

	type stats struct {
		ms, cpu [][]float64 // per side, per repetition
		rss     []uint64    // per side
	}
	all := make([]stats, len(ws))
	for i := range all {
		all[i] = stats{ms: make([][]float64, len(sides)), cpu: make([][]float64, len(sides)), rss: make([]uint64, len(sides))}
	}
	base := make([]uint64, len(sides))
	for i, s := range sides {
		if _, rss, err := run(s.cmd(bench.Workload{})); err == nil {
			base[i] = rss
		}
	}
	start := bench.Uptime()
	for rep := 0; rep < o.reps; rep++ {
		for i, w := range ws {
			for j := range sides {
				k := (j + rep) % len(sides) // rotate the order: each side goes first in turn
				r, rss, err := run(sides[k].cmd(w))
				if err != nil {
					return err
				}
				all[i].ms[k] = append(all[i].ms[k], r.MedianMS)
				all[i].cpu[k] = append(all[i].cpu[k], r.CPUMS)
				all[i].rss[k] = max(all[i].rss[k], rss)
				fmt.Fprintf(os.Stderr, "rep %d/%d %-16s %-18s %8.2f ms/step, CPU %8.2f ms/step (%d steps), RSS %.0f MB\n",
					rep+1, o.reps, w.Name, sides[k].name, r.MedianMS, r.CPUMS, r.Steps, bench.MB(rss))
			}
		}
	}
	fmt.Fprintf(out, "Load before: `%s`; after: `%s`.\n\n", start, bench.Uptime())
	fmt.Fprintf(out, "| workload | sizes | PyTorch impl | gdattn ms | PyTorch ms | gdattn/PyTorch | per-rep range | gdattn CPU ms | PyTorch CPU ms | gdattn/PyTorch CPU | gdattn RSS MB | PyTorch RSS MB |\n")
	fmt.Fprintf(out, "|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|\n")
	for i, w := range ws {
		g, gc := bench.Median(all[i].ms[0]), bench.Median(all[i].cpu[0])
		for k := 1; k < len(sides); k++ {
			p, pc := bench.Median(all[i].ms[k]), bench.Median(all[i].cpu[k])
			lo, hi := ratioRange(all[i].ms[0], all[i].ms[k])
			fmt.Fprintf(out, "| %s | %s | %s | %.2f | %.2f | **%.2f** | %.2f–%.2f | %.2f | %.2f | **%.2f** | %.0f | %.0f |\n",
				w.Name, w, impls[k-1], g, p, g/p, lo, hi, gc, pc, gc/pc, bench.MB(all[i].rss[0]), bench.MB(all[i].rss[k]))
		}
	}
	fmt.Fprintf(out, "| (process baseline) | gdattn: start and exit; PyTorch: import torch, numpy | | | | | | | | | %.0f | %.0f |\n\n",
		bench.MB(base[0]), bench.MB(base[1]))
	fmt.Fprintf(out, "ms: wall time per step; CPU ms: process CPU time (user + system) per step. Each is the median over %d repetitions of each child's median step (%d warm-up steps, then at least %d steps and %v per child); per-rep range: the smallest and largest ratio of wall times within one repetition. PyTorch impl: mirror = the same operations as gdattn's graph, idiomatic = what a PyTorch user would write: slices and gathers; for the language models the heads fused as in nanoGPT; fast = the fastest formulation of the same functions found: products regrouped (TF: scores z·(g W_Q W_Kᵀ)·z_cᵀ, values z_c·(W_V W_O), at the query row (w·z_c)·(W_V W_O), as gdattn with -regroup-query; GD: the weights once for all blocks), additive masks, the last GD block and TF layer (with its cross-attention) at the query row only, as gdattn (see peer.py).\n",
		o.reps, o.warmup, o.minSteps, o.minTime)
	if o.out != "" {
		return os.WriteFile(o.out, report.Bytes(), 0o644)
	}
	return nil
}

// ratioRange returns the smallest and largest a[i]/b[i].
func ratioRange(a, b []float64) (lo, hi float64) {
	for i := range a {
		q := a[i] / b[i]
		if i == 0 || q < lo {
			lo = q
		}
		if i == 0 || q > hi {
			hi = q
		}
	}
	return lo, hi
}

// pyCmd is the PyTorch child timing w with implementation impl (or, for
// the empty workload, only importing torch: the process baseline).
func pyCmd(o options, w bench.Workload, impl, thr string) *exec.Cmd {
	if w.Name == "" {
		c := exec.Command(o.python, o.peer, "version")
		c.Env = threadEnv(thr)
		return c
	}
	args := []string{o.peer, "time", "--model", string(w.Model), "--depth", strconv.Itoa(max(w.Depth, 1)),
		"--batch", strconv.Itoa(w.Batch), "--dprime", strconv.Itoa(w.DPrime), "--dtype", o.dtype, "--mode", o.mode,
		"--impl", impl, "--threads", thr, "--warmup", strconv.Itoa(o.warmup), "--min-steps", strconv.Itoa(o.minSteps),
		"--min-time", strconv.FormatFloat(o.minTime.Seconds(), 'g', -1, 64)}
	if w.Language() {
		args = append(args, "--vocab", strconv.Itoa(w.Vocab), "--context", strconv.Itoa(w.Context), "--heads", strconv.Itoa(w.Heads))
	} else {
		args = append(args, "--n", strconv.Itoa(w.N), "--d", strconv.Itoa(w.D), "--c", strconv.Itoa(w.C))
	}
	if w.Cross {
		args = append(args, "--cross")
	}
	if w.FF {
		args = append(args, "--ff")
	}
	c := exec.Command(o.python, args...)
	c.Env = threadEnv(thr)
	return c
}

// checkResult is what peer.py check prints.
type checkResult struct {
	Impl     string  `json:"impl"`
	LossGo   float64 `json:"loss_gdattn"`
	LossPy   float64 `json:"loss_torch"`
	LossDiff float64 `json:"loss_abs_diff"`
	GradDiff float64 `json:"grad_max_abs_diff"`
	GradMax  float64 `json:"grad_max_abs"`
	OK       bool    `json:"ok"`
}

// checkAll exports every check workload and compares with peer.py.
func checkAll(o options, out io.Writer) error {
	fmt.Fprintf(out, "Same inputs and parameters, float64 (`peer.py check`): loss to 1e-6 absolute, gradients to 1e-6 relative.\n\n")
	fmt.Fprintf(out, "| workload | PyTorch impl | gdattn loss | PyTorch loss | |Δ loss| | max |Δ grad| | max |grad| | ok |\n|---|---|---:|---:|---:|---:|---:|---|\n")
	var ws []bench.Workload
	var dirs []string
	for _, name := range strings.Split(o.check, ",") {
		w, err := findWorkload(strings.TrimSpace(name), o.lmPaper)
		if err != nil {
			return err
		}
		w = o.apply(w)
		dir, err := os.MkdirTemp("", "gdattn-peer-")
		if err != nil {
			return err
		}
		if !o.keepExport {
			defer os.RemoveAll(dir)
		} else {
			fmt.Fprintf(os.Stderr, "check %s: exported to %s\n", w.Name, dir)
		}
		if err := export(w, dir); err != nil {
			return err
		}
		ws, dirs = append(ws, w), append(dirs, dir)
	}
	res, err := peerCheck(o.python, o.peer, dirs)
	if err != nil {
		return err
	}
	failed := false
	for i, r := range res {
		failed = failed || !r.OK
		fmt.Fprintf(out, "| %s | %s | %.12f | %.12f | %.1e | %.1e | %.2g | %v |\n", ws[i/numImpls].Name, r.Impl, r.LossGo, r.LossPy, r.LossDiff, r.GradDiff, r.GradMax, r.OK)
	}
	fmt.Fprintln(out)
	if failed {
		return errors.New("gdattn and PyTorch disagree: the timing would compare different models")
	}
	return nil
}

// numImpls is the number of implementations peer.py check compares with
// gdattn (mirror, idiomatic and fast), in that order, for each directory.
const numImpls = 3

// peerCheck runs peer.py check on dirs and returns one result per dir and
// implementation.
func peerCheck(python, peer string, dirs []string) ([]checkResult, error) {
	c := exec.Command(python, append([]string{peer, "check"}, dirs...)...)
	c.Env = threadEnv("1")
	out, err := c.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, tail(string(ee.Stderr)))
		}
		return nil, fmt.Errorf("peer.py check: %w", err)
	}
	var res []checkResult
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var r checkResult
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("peer.py check: output %q: %w", out, err)
		}
		res = append(res, r)
	}
	if len(res) != numImpls*len(dirs) {
		return nil, fmt.Errorf("peer.py check: %d results for %d directories and %d implementations", len(res), len(dirs), numImpls)
	}
	return res, nil
}

// findWorkload resolves a workload name: bench.FindWorkload's in-context
// names, and the language workloads language/<model>-<preset>, model gd
// (gd.LM), gdff (gd.LM with the feed-forward block) or gpt (tf.GPT), preset
// small (bench.LMSmall) or, with paper set, paper (bench.LMPaper).
func findWorkload(name string, paper bool) (bench.Workload, error) {
	if base, n, ok := strings.Cut(name, "/N="); ok {
		w, err := findWorkload(base, paper)
		if err != nil {
			return w, err
		}
		if w.Language() {
			return w, fmt.Errorf("workload %q: /N= applies to the in-context workloads only", name)
		}
		v, err := strconv.Atoi(n)
		if err != nil || v < 1 || v > 100000 {
			return w, fmt.Errorf("workload %q: N=%q is not an integer in [1, 100000]", name, n)
		}
		return withN(w, v), nil
	}
	rest, ok := strings.CutPrefix(name, "language/")
	if !ok {
		w, err := bench.FindWorkload(name)
		if err == nil && w.Language() {
			return w, fmt.Errorf("workload %q: name the language workloads language/<gd|gdff|gpt>-<small|paper>", name)
		}
		return w, err
	}
	model, preset, _ := strings.Cut(rest, "-")
	var p bench.LMPreset
	switch preset {
	case bench.LMSmall.Name:
		p = bench.LMSmall
	case bench.LMPaper.Name:
		if !paper {
			return bench.Workload{}, fmt.Errorf("workload %q: the paper preset needs -lm-paper (tens of seconds per step)", name)
		}
		p = bench.LMPaper
	default:
		return bench.Workload{}, fmt.Errorf("workload %q: unknown preset %q (want small or paper)", name, preset)
	}
	var w bench.Workload
	switch model {
	case "gd", "gdff":
		w = bench.LM(bench.ModelGDLM, p)
		w.FF = model == "gdff"
	case "gpt":
		w = bench.LM(bench.ModelGPT, p)
	default:
		return bench.Workload{}, fmt.Errorf("workload %q: unknown model %q (want gd, gdff or gpt)", name, model)
	}
	w.Name = name
	return w, nil
}

// withN is the in-context workload w at context size n, named
// "<name>/N=<n>".
func withN(w bench.Workload, n int) bench.Workload {
	w.N = n
	w.Name = fmt.Sprintf("%s/N=%d", w.Name, n)
	return w
}

// sweepWorkloads resolves the comma-separated workload names and, when ns
// (comma-separated context sizes) is not empty, replaces each in-context
// workload by one per size, in the order of ns; language workloads pass
// through.
func sweepWorkloads(names, ns string, paper bool) ([]bench.Workload, error) {
	var sizes []int
	if strings.TrimSpace(ns) != "" {
		for _, f := range strings.Split(ns, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return nil, fmt.Errorf("-N: %q is not a positive integer", f)
			}
			sizes = append(sizes, n)
		}
	}
	var ws []bench.Workload
	for _, name := range strings.Split(names, ",") {
		w, err := findWorkload(strings.TrimSpace(name), paper)
		if err != nil {
			return nil, err
		}
		if len(sizes) == 0 || w.Language() || strings.Contains(w.Name, "/N=") {
			ws = append(ws, w)
			continue
		}
		for _, n := range sizes {
			ws = append(ws, withN(w, n))
		}
	}
	return ws, nil
}

// blasInfo is what peer.py blas prints.
type blasInfo struct {
	BLAS       string   `json:"blas"`
	Libraries  []string `json:"libraries"`
	Config     string   `json:"config"`
	BuildInfo  string   `json:"build_blas_info"`
	Size       int      `json:"size"`
	Threads    int      `json:"threads"`
	GFLOPSWall float64  `json:"gflops_wall"`
	GFLOPSCPU  float64  `json:"gflops_cpu"`
}

// peerBLAS runs peer.py blas with every thread variable set to threads:
// the BLAS library the PyTorch peer runs on and its sgemm speed.
func peerBLAS(python, peer, threads string) (blasInfo, error) {
	c := exec.Command(python, peer, "blas", "--threads", threads)
	c.Env = threadEnv(threads)
	out, err := c.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, tail(string(ee.Stderr)))
		}
		return blasInfo{}, fmt.Errorf("peer.py blas: %w", err)
	}
	var b blasInfo
	if err := json.Unmarshal(bytes.TrimSpace(out), &b); err != nil {
		return blasInfo{}, fmt.Errorf("peer.py blas: output %q: %w", out, err)
	}
	return b, nil
}

// coreTypes are the OpenBLAS core types chooseCoreType tries besides
// OpenBLAS's own choice: the AVX-512 ones first (OpenBLAS 0.3.21 does not
// recognise some AVX-512 CPUs and falls back to its SSE3 Prescott kernels),
// then AVX2 and AVX. A type the CPU cannot run fails or falls back by
// itself; either way it is measured as it runs.
var coreTypes = []string{"Cooperlake", "SkylakeX", "Haswell", "Zen", "Sandybridge"}

// chooseCoreType sets OPENBLAS_CORETYPE for every PyTorch child to the core
// type whose short sgemm (512³, one thread, best of two) runs fastest (a
// candidate replaces OpenBLAS's own choice, or the candidate chosen before
// it, only when over 3% faster: the rates move by a few percent between
// calls), and returns the report's line saying which and at what rates; an
// OPENBLAS_CORETYPE already set in the environment is kept (and said so).
// On a peer that is not OpenBLAS the variable does nothing: it is left
// unset.
func chooseCoreType(python, peer string) (string, error) {
	if v, ok := os.LookupEnv("OPENBLAS_CORETYPE"); ok {
		return fmt.Sprintf("OpenBLAS core type: **%s** (OPENBLAS_CORETYPE set in the environment).", v), nil
	}
	rate := func(core string) (float64, string, error) {
		best, got := 0.0, ""
		for try := 0; try < 2; try++ {
			c := exec.Command(python, peer, "blas", "--threads", "1", "--size", "512", "--min-time", "0.2")
			c.Env = threadEnv("1")
			if core != "" {
				c.Env = append(c.Env, "OPENBLAS_CORETYPE="+core)
			}
			out, err := c.Output()
			if err != nil {
				return 0, "", err
			}
			var b blasInfo
			if err := json.Unmarshal(bytes.TrimSpace(out), &b); err != nil {
				return 0, "", err
			}
			if b.BLAS != "OpenBLAS" {
				return 0, "", errNotOpenBLAS
			}
			best, got = max(best, b.GFLOPSCPU), coreOf(b.Config)
		}
		return best, got, nil
	}
	def, defCore, err := rate("")
	if errors.Is(err, errNotOpenBLAS) {
		return "OpenBLAS core type: not applicable (the peer's BLAS is not OpenBLAS).", nil
	}
	if err != nil {
		return "", fmt.Errorf("peer.py blas: %w", err)
	}
	best, bestRate := "", def
	parts := []string{fmt.Sprintf("OpenBLAS's own choice (%s) %.0f", defCore, def)}
	for _, core := range coreTypes {
		r, got, err := rate(core)
		if err != nil {
			parts = append(parts, core+" fails")
			continue
		}
		name := core
		if got != "" && !strings.EqualFold(got, core) {
			name += " (runs as " + got + ")"
		}
		parts = append(parts, fmt.Sprintf("%s %.0f", name, r))
		if r > bestRate*1.03 { // a clear gain over the default only
			best, bestRate = core, r
		}
	}
	line := "OpenBLAS core type: **%s**, chosen by bench/peer by a short 512³ sgemm on one thread (a type replaces the one before it only when over 3%% faster), GFLOP/s per CPU-second (best of 2): " + strings.Join(parts, ", ") + "."
	if best == "" {
		return fmt.Sprintf(line, "OpenBLAS's own choice, "+defCore), nil
	}
	if err := os.Setenv("OPENBLAS_CORETYPE", best); err != nil {
		return "", err
	}
	return fmt.Sprintf(line, best), nil
}

var errNotOpenBLAS = errors.New("not OpenBLAS")

// coreOf is the core name in OpenBLAS's configuration string ("OpenBLAS
// 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64"): the
// word before MAX_THREADS, or "".
func coreOf(config string) string {
	f := strings.Fields(config)
	for i := 1; i < len(f); i++ {
		if strings.HasPrefix(f[i], "MAX_THREADS") {
			return f[i-1]
		}
	}
	return ""
}

// blasLine is the report header's line on the peer's BLAS: the library,
// its configuration and the sgemm rate on one thread (and on threads when
// more).
func blasLine(one, n blasInfo, threads int) string {
	lib := one.BLAS
	if one.Config != "" {
		lib += " (" + one.Config + ")"
	}
	s := fmt.Sprintf("PyTorch's BLAS: **%s**, %s (torch build BLAS_INFO=%s). sgemm %dx%dx%d, float32: %.1f GFLOP/s per CPU-second on 1 thread (%.1f per wall second)",
		lib, strings.Join(one.Libraries, ", "), one.BuildInfo, one.Size, one.Size, one.Size, one.GFLOPSCPU, one.GFLOPSWall)
	if threads != 1 {
		s += fmt.Sprintf("; on %d threads %.1f per wall second (%.1f per CPU-second)", threads, n.GFLOPSWall, n.GFLOPSCPU)
	}
	return s + " (`peer.py blas`)."
}

// autoCheck lists the workloads -check-workloads auto compares: the four
// synthetic ones when ws has an in-context workload, and ws's language
// workloads of the small preset.
func autoCheck(ws []bench.Workload) string {
	var names []string
	for _, w := range ws {
		if !w.Language() {
			names = []string{"synthetic/gd-1", "synthetic/gd-2", "synthetic/tf-1", "synthetic/tf-2"}
			break
		}
	}
	for _, w := range ws {
		if w.Language() && w.Context == bench.LMSmall.Context && w.DPrime == bench.LMSmall.DPrime {
			names = append(names, w.Name)
		}
	}
	return strings.Join(names, ",")
}

// export builds w in float64, runs its forward and backward pass once on
// its minibatch, and writes to dir the minibatch, p_<name>.npy and
// g_<name>.npy for every parameter (value and gradient; "/" in names
// becomes "__") and meta.json with the sizes, the parameter names and the
// loss. The minibatch of an in-context workload is x.npy (B, T, d) and
// y.npy (B, T) int64, that of a language workload ids.npy (B, T) and
// targets.npy (B·T) int64.
func export(w bench.Workload, dir string) error {
	r, err := bench.NewRunner(w, tensor.Float64, bench.Train, 1)
	if err != nil {
		return err
	}
	defer r.Close()
	loss, err := r.LossValue()
	if err != nil {
		return err
	}
	int64s := func(v []int) []int64 {
		out := make([]int64, len(v))
		for i, x := range v {
			out[i] = int64(x)
		}
		return out
	}
	var files map[string]*npy.Array
	var sizes map[string]any
	if w.Language() {
		files = map[string]*npy.Array{
			"ids.npy":     {Shape: []int{w.Batch, w.Context}, Dtype: npy.Int64, I64: int64s(r.IDs)},
			"targets.npy": {Shape: []int{w.Batch * w.Context}, Dtype: npy.Int64, I64: int64s(r.Targets)},
		}
		sizes = map[string]any{"model": w.Model, "depth": max(w.Depth, 1), "ff": w.FF, "batch": w.Batch,
			"vocab": w.Vocab, "context": w.Context, "dprime": w.DPrime, "heads": w.Heads}
	} else {
		T := w.N + 1
		files = map[string]*npy.Array{
			"x.npy": {Shape: []int{w.Batch, T, w.D}, Dtype: npy.Float64, F64: r.X},
			"y.npy": {Shape: []int{w.Batch, T}, Dtype: npy.Int64, I64: int64s(r.Y)},
		}
		sizes = map[string]any{"model": w.Model, "depth": max(w.Depth, 1), "cross": w.Cross, "batch": w.Batch,
			"n": w.N, "d": w.D, "dprime": w.DPrime, "c": w.C}
	}
	var names []string
	for _, p := range r.Scope.Params() {
		v, err := graph.Values(p)
		if err != nil {
			return err
		}
		g, err := graph.GradValues(p)
		if err != nil {
			return err
		}
		shape := []int(p.Shape())
		file := strings.ReplaceAll(p.Name(), "/", "__") + ".npy"
		files["p_"+file] = &npy.Array{Shape: shape, Dtype: npy.Float64, F64: v}
		files["g_"+file] = &npy.Array{Shape: shape, Dtype: npy.Float64, F64: g}
		names = append(names, p.Name())
	}
	for f, a := range files {
		if err := npy.WriteFile(filepath.Join(dir, f), a); err != nil {
			return err
		}
	}
	meta := map[string]any{
		"workload": sizes,
		"params":   names,
		"loss":     loss,
	}
	b, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "meta.json"), b, 0o644)
}
