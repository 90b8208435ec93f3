// Command generate times text generation (tokens per second) of gdattn's
// language models on the key/value cache (train.Generator) against the full
// recompute (train.GeneratorOptions.Recompute) and, with -peer, against a
// PyTorch decoder with a KV cache (bench/peer/generate.py) on the same
// parameters, after checking that the peer's logits equal gdattn's.
//
// The models are randomly initialised at the sizes of examples/language's
// presets (small: V = 3,237, d' = 64, 4 heads, context 64; paper: V =
// 50,258, d' = 512, 8 heads, context 256): the timing does not depend on
// the weights. Every prompt has -prompt random ids; each generates -new ids
// (the full recompute -full-new, which can be fewer: it is slow), greedy or
// beam search of width -beams, for -batch prompts at once, on GOMAXPROCS =
// -threads. Tokens per second count the generated ids of every prompt
// (beam search: of the returned sequence) per second of wall time;
// cpu-ms/token is the process CPU time per generated id.
//
//	go run ./bench/generate -preset paper -model gd,gpt -batch 1,8 -strategy greedy,beam -threads 1 -peer
//
// The output is a markdown table (bench/results/generate.md).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/gdattn/gdattn/bench"
	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/npy"
	"github.com/gdattn/gdattn/tf"
	"github.com/gdattn/gdattn/train"
)

type preset struct{ V, D, T, H int }

var presets = map[string]preset{
	"small": {V: 3237, D: 64, T: 64, H: 4},
	"paper": {V: 50258, D: 512, T: 256, H: 8},
	"tiny":  {V: 50, D: 8, T: 16, H: 2},
}

type options struct {
	preset, dtype, python, peerScript string
	models, strategies                []string
	batches                           []int
	prompt, newIDs, fullNew, beams    int
	threads                           int
	seed                              uint64
	peer, noFull                      bool
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	var o options
	var models, strategies, batches string
	fs.StringVar(&o.preset, "preset", "small", "model sizes: small, paper or tiny")
	fs.StringVar(&models, "model", "gd,gpt", "comma-separated models: gd, gdff, gpt")
	fs.StringVar(&strategies, "strategy", "greedy,beam", "comma-separated strategies: greedy, beam")
	fs.StringVar(&batches, "batch", "1,8", "comma-separated numbers of prompts decoded together")
	fs.IntVar(&o.prompt, "prompt", 32, "ids per prompt")
	fs.IntVar(&o.newIDs, "new", 256, "ids generated per prompt on the cache")
	fs.IntVar(&o.fullNew, "full-new", 0, "ids generated per prompt by the full recompute (0: -new)")
	fs.IntVar(&o.beams, "beams", 4, "beam width of beam search")
	fs.IntVar(&o.threads, "threads", 1, "GOMAXPROCS (and the peer's torch threads)")
	fs.StringVar(&o.dtype, "dtype", "float32", "float32 or float64")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the parameters and prompts")
	fs.BoolVar(&o.peer, "peer", false, "also time the PyTorch KV-cache decoder (bench/peer/generate.py) on the same parameters")
	fs.BoolVar(&o.noFull, "no-full", false, "skip the full recompute")
	fs.StringVar(&o.python, "python", "/usr/bin/python3", "python with torch, for -peer")
	fs.StringVar(&o.peerScript, "peer-script", "bench/peer/generate.py", "the peer script, for -peer")
	prof := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *prof != "" {
		f, err := os.Create(*prof)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	if _, ok := presets[o.preset]; !ok {
		return fmt.Errorf("-preset %q: want small, paper or tiny", o.preset)
	}
	if o.dtype != "float32" && o.dtype != "float64" {
		return fmt.Errorf("-dtype %q: want float32 or float64", o.dtype)
	}
	o.models = strings.Split(models, ",")
	for _, m := range o.models {
		if m != "gd" && m != "gdff" && m != "gpt" {
			return fmt.Errorf("-model %q: want gd, gdff or gpt", m)
		}
	}
	o.strategies = strings.Split(strategies, ",")
	for _, s := range o.strategies {
		if s != data.DecodeGreedy && s != data.DecodeBeam {
			return fmt.Errorf("-strategy %q: want greedy or beam", s)
		}
	}
	for _, b := range strings.Split(batches, ",") {
		n, err := strconv.Atoi(b)
		if err != nil || n < 1 || n > 64 {
			return fmt.Errorf("-batch %q: want numbers in [1, 64]", b)
		}
		o.batches = append(o.batches, n)
	}
	if o.prompt < 1 || o.newIDs < 1 || o.fullNew < 0 || o.beams < 1 || o.beams > 16 || o.threads < 1 {
		return fmt.Errorf("-prompt, -new, -beams (at most 16) and -threads must be positive, -full-new >= 0")
	}
	if o.fullNew == 0 {
		o.fullNew = o.newIDs
	}
	runtime.GOMAXPROCS(o.threads)
	p := presets[o.preset]
	fmt.Printf("preset %s (V=%d, d'=%d, %d heads, context %d), %s, prompt %d ids, %d new ids (full recompute: %d), beams %d, GOMAXPROCS=%d, %s\n\n",
		o.preset, p.V, p.D, p.H, p.T, o.dtype, o.prompt, o.newIDs, o.fullNew, o.beams, o.threads, bench.Describe())
	fmt.Println("| model | batch | strategy | threads | cached tok/s | cached cpu-ms/tok | full tok/s | full cpu-ms/tok | cached/full | torch tok/s | torch cpu-ms/tok | cached/torch | peer check |")
	fmt.Println("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, model := range o.models {
		for _, strat := range o.strategies {
			for _, b := range o.batches {
				if err := row(o, p, model, strat, b); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// build returns a random model of the preset sizes with generation batch
// contexts (the full recompute's batch).
func build(o options, p preset, model string, batch int) (train.LM, error) {
	dt, err := graph.ParseDtype(o.dtype)
	if err != nil {
		return nil, err
	}
	s, err := graph.NewScope(dt, o.seed)
	if err != nil {
		return nil, err
	}
	if model == "gpt" {
		return tf.NewGPT(s, tf.GPTConfig{Vocab: p.V, Context: p.T, DModel: p.D, Heads: p.H}, tf.GPTOptions{Batch: batch, Next: true})
	}
	return gd.NewLM(s, gd.LMConfig{Vocab: p.V, DPrime: p.D, Context: p.T, Heads: p.H, FF: model == "gdff"}, gd.LMOptions{Batch: batch, Next: true})
}

type timing struct{ tokPerS, cpuMSPerTok float64 }

func timeGen(g *train.Generator, prompts [][]int, cfg data.DecodeConfig) (timing, [][]int, error) {
	runtime.GC()
	c0, t0 := bench.CPUTime(), time.Now()
	out, err := g.Generate(prompts, cfg)
	wall, cpu := time.Since(t0), bench.CPUTime()-c0
	if err != nil {
		return timing{}, nil, err
	}
	n := 0
	for _, s := range out {
		n += len(s)
	}
	return timing{float64(n) / wall.Seconds(), float64(cpu.Milliseconds()) / float64(n)}, out, nil
}

func row(o options, p preset, model, strat string, batch int) error {
	contexts := batch
	if strat == data.DecodeBeam {
		contexts *= o.beams
	}
	m, err := build(o, p, model, contexts)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(o.seed, 77))
	prompts := make([][]int, batch)
	for i := range prompts {
		prompts[i] = make([]int, o.prompt)
		for j := range prompts[i] {
			prompts[i][j] = rng.IntN(p.V)
		}
	}
	cfg := data.DecodeConfig{Strategy: strat, MaxNew: o.newIDs, Beams: o.beams, Stop: data.StopNever()}
	g, err := train.NewGenerator(m)
	if err != nil {
		return err
	}
	cached, _, err := timeGen(g, prompts, cfg)
	if err != nil {
		return err
	}
	full := timing{math.NaN(), math.NaN()}
	if !o.noFull {
		fg, err := train.NewGeneratorOptions(m, train.GeneratorOptions{Recompute: true})
		if err != nil {
			return err
		}
		fcfg := cfg
		fcfg.MaxNew = o.fullNew
		full, _, err = timeGen(fg, prompts, fcfg)
		if err != nil {
			return err
		}
		if err := fg.Close(); err != nil {
			return err
		}
	}
	peer := peerResult{TokPerS: math.NaN(), CPUMSPerTok: math.NaN(), Check: "-"}
	if o.peer {
		if peer, err = runPeer(o, m, model, strat, prompts, g); err != nil {
			return err
		}
	}
	fmt.Printf("| %s | %d | %s | %d | %.1f | %.3f | %s | %s | %s | %s | %s | %s | %s |\n", model, batch, strat, o.threads,
		cached.tokPerS, cached.cpuMSPerTok, num(full.tokPerS, 2), num(full.cpuMSPerTok, 2), num(cached.tokPerS/full.tokPerS, 1),
		num(peer.TokPerS, 1), num(peer.CPUMSPerTok, 2), num(cached.tokPerS/peer.TokPerS, 2), peer.Check)
	return g.Close()
}

func num(v float64, prec int) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

type peerResult struct {
	TokPerS     float64 `json:"tok_per_s"`
	CPUMSPerTok float64 `json:"cpu_ms_per_tok"`
	MaxRelDiff  float64 `json:"max_rel_diff"`
	SameGreedy  bool    `json:"same_greedy"`
	Check       string  `json:"-"`
}

// runPeer exports m's parameters, the prompts, gdattn's logits after the
// first prompt and its first greedy ids to a temporary directory, and runs
// the peer on it: it checks its logits and greedy ids against gdattn's,
// then times the same generation.
func runPeer(o options, m train.LM, model, strat string, prompts [][]int, g *train.Generator) (peerResult, error) {
	dir, err := os.MkdirTemp("", "gdattn-generate-")
	if err != nil {
		return peerResult{}, err
	}
	defer os.RemoveAll(dir)
	var names []string
	for _, prm := range m.Scope().Params() {
		v, err := graph.Values(prm)
		if err != nil {
			return peerResult{}, err
		}
		a := &npy.Array{Shape: []int(prm.Shape()), Dtype: npy.Float64, F64: v}
		if o.dtype == "float32" {
			a = &npy.Array{Shape: a.Shape, Dtype: npy.Float32, F32: make([]float32, len(v))}
			for i, x := range v {
				a.F32[i] = float32(x)
			}
		}
		if err := npy.WriteFile(filepath.Join(dir, "p_"+strings.ReplaceAll(prm.Name(), "/", "__")+".npy"), a); err != nil {
			return peerResult{}, err
		}
		names = append(names, prm.Name())
	}
	var ids []int64
	for _, pr := range prompts {
		for _, id := range pr {
			ids = append(ids, int64(id))
		}
	}
	if err := npy.WriteFile(filepath.Join(dir, "prompts.npy"), &npy.Array{Shape: []int{len(prompts), len(prompts[0])}, Dtype: npy.Int64, I64: ids}); err != nil {
		return peerResult{}, err
	}
	// gdattn's logits along its first greedy ids of prompt 0: the check.
	const checkSteps = 8
	greedy, err := g.Generate(prompts[:1], data.DecodeConfig{MaxNew: checkSteps, Stop: data.StopNever()})
	if err != nil {
		return peerResult{}, err
	}
	ctx := append([]int(nil), prompts[0]...)
	var logits []float64
	for i := 0; i <= checkSteps; i++ {
		l, err := g.Next([][]int{ctx})
		if err != nil {
			return peerResult{}, err
		}
		logits = append(logits, l[0]...)
		if i < checkSteps {
			ctx = append(ctx, greedy[0][i])
		}
	}
	g64 := make([]int64, checkSteps)
	for i, id := range greedy[0] {
		g64[i] = int64(id)
	}
	if err := npy.WriteFile(filepath.Join(dir, "check_logits.npy"), &npy.Array{Shape: []int{checkSteps + 1, m.VocabSize()}, Dtype: npy.Float64, F64: logits}); err != nil {
		return peerResult{}, err
	}
	if err := npy.WriteFile(filepath.Join(dir, "check_greedy.npy"), &npy.Array{Shape: []int{checkSteps}, Dtype: npy.Int64, I64: g64}); err != nil {
		return peerResult{}, err
	}
	p := presets[o.preset]
	meta := map[string]any{"model": model, "vocab": p.V, "dprime": p.D, "context": p.T, "heads": p.H, "dtype": o.dtype,
		"params": names, "strategy": strat, "new": o.newIDs, "beams": o.beams, "threads": o.threads}
	mb, _ := json.Marshal(meta)
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), mb, 0o644); err != nil {
		return peerResult{}, err
	}
	cmd := exec.Command(o.python, o.peerScript, dir)
	cmd.Env = append(os.Environ(), fmt.Sprintf("OMP_NUM_THREADS=%d", o.threads), fmt.Sprintf("OPENBLAS_NUM_THREADS=%d", o.threads))
	// OpenBLAS 0.3.21 misses some CPUs and falls back to its slow SSE3 kernels;
	// a core type set by the caller (e.g. the one bench/peer measures fastest)
	// is kept, else Cooperlake, which OpenBLAS downgrades on CPUs without AVX-512.
	if _, ok := os.LookupEnv("OPENBLAS_CORETYPE"); !ok {
		cmd.Env = append(cmd.Env, "OPENBLAS_CORETYPE=Cooperlake")
	}
	cmd.Stderr = os.Stderr
	res, err := cmd.Output()
	if err != nil {
		return peerResult{}, fmt.Errorf("peer: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(res)), "\n")
	var r peerResult
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		return peerResult{}, fmt.Errorf("peer: %w (output %q)", err, res)
	}
	tol := 1e-4
	if o.dtype == "float64" {
		tol = 1e-10
	}
	r.Check = fmt.Sprintf("logits %.1e, greedy same: %v", r.MaxRelDiff, r.SameGreedy)
	if !(r.MaxRelDiff <= tol) || !r.SameGreedy {
		return r, fmt.Errorf("peer check failed: %s (tolerance %g)", r.Check, tol)
	}
	return r, nil
}
