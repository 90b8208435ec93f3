package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/cuda"
	"github.com/gdattn/gdattn/internal/cli"
	"github.com/gdattn/gdattn/layers"
	"gorgonia.org/tensor"
)

// exactResult is one line of "gpu exact".
type exactResult struct {
	Kind    string  `json:"kind"` // "exact"
	Device  string  `json:"device"`
	Literal bool    `json:"literal"`
	Kernel  string  `json:"kernel"`
	K       int     `json:"K"`
	MaxErr  float64 `json:"max_abs_err"`
	Tol     float64 `json:"tol"`
	OK      bool    `json:"ok"`
}

// cmdExact runs gd's exactness check through the executor on a device: the
// GD model (structured and Literal construction) with every kernel and K =
// 1..kmax blocks, float64, f at every position after every block against
// the plain-Go functional-GD reference (gd.Reference), within 1e-10
// absolute (graph/cuda's TestExecutorGDMatchesReference, to a deeper K).
func cmdExact(args []string, out *jsonLines) error {
	fs := cli.NewFlagSet("exact")
	dev := fs.String("device", "cuda", "where the GD model runs: cuda, emulator or cpu")
	kmax := fs.Int("kmax", 6, "blocks K = 1..kmax, 1..12")
	tol := fs.Float64("tol", 1e-10, "largest absolute difference of f allowed, > 0")
	if err := parseFlags(fs, args, "GD model vs the functional-GD reference on a device.", cli.Rules{
		"device": cli.OneOf(deviceNames...), "kmax": cli.IntIn(1, 12), "tol": cli.Positive,
	}); err != nil {
		return err
	}
	be, name, closeDevice, err := useDevice(*dev)
	if err != nil {
		return err
	}
	defer closeDevice()
	out.logf("exact: device %s", name)
	bad := 0
	for _, literal := range []bool{false, true} {
		for _, kern := range layers.KernelNames() {
			for K := 1; K <= *kmax; K++ {
				worst, err := exactOne(be, literal, kern, K)
				if err != nil {
					return fmt.Errorf("literal=%v %s K=%d: %w", literal, kern, K, err)
				}
				r := exactResult{Kind: "exact", Device: name, Literal: literal, Kernel: kern, K: K, MaxErr: worst, Tol: *tol, OK: worst <= *tol}
				if !r.OK {
					bad++
				}
				if err := out.emit(r, fmt.Sprintf("exact literal=%-5v %-9s K=%d  max |f - reference| %.3g  %s", literal, kern, K, worst, okWord(r.OK))); err != nil {
					return err
				}
			}
		}
	}
	if bad > 0 {
		return errOutOfTolerance
	}
	return nil
}

// exactOne builds the GD model with K blocks of kernel kern, runs it on be
// (the Go VM for nil) and returns the largest absolute difference between
// its f after each block and the reference's.
func exactOne(be cuda.Backend, literal bool, kern string, K int) (float64, error) {
	// The sizes of graph/cuda's TestExecutorGDMatchesReference.
	const B, N, d, dp, C = 3, 8, 5, 4, 7
	const alpha, gamma = 2, 0.7
	T := N + 1
	rng := rand.New(rand.NewPCG(uint64(K), 7))
	x := make([]float64, B*T*d)
	for i := range x {
		x[i] = 2*rng.Float64() - 1
	}
	y := make([]int, B*T)
	for i := range y {
		y[i] = rng.IntN(C)
	}
	s, err := graph.NewScope(tensor.Float64, 3)
	if err != nil {
		return 0, err
	}
	cfg := gd.Config{D: d, DPrime: dp, C: C, N: N, Blocks: K, Kernel: layers.Builtin(kern, gamma), Alpha: alpha, Literal: literal}
	m, err := gd.NewModel(s, cfg, B)
	if err != nil {
		return 0, err
	}
	if err := m.Feed(x, y); err != nil {
		return 0, err
	}
	opts := graph.MachineOptions{NoGrad: true, Trace: true}
	if be != nil {
		opts.Executor = cuda.NewExecutorWith(be, cuda.ExecOptions{Logf: discardf})
	}
	mach, err := graph.NewMachine(s, nil, opts)
	if err != nil {
		return 0, err
	}
	defer mach.Close()
	if err := mach.Run(); err != nil {
		return 0, err
	}
	we, err := graph.Values(m.We)
	if err != nil {
		return 0, err
	}
	ref, err := gd.Reference(x, y, B, T, d, we, dp, C, gd.ReferenceConfig{Steps: K, Alpha: alpha, Kernel: kern, Gamma: gamma})
	if err != nil {
		return 0, err
	}
	worst := 0.0
	for k := 0; k <= K; k++ {
		got, err := graph.Values(m.F[k])
		if err != nil {
			return 0, err
		}
		if len(got) != len(ref.F[k]) {
			return 0, fmt.Errorf("f after block %d has %d values, the reference %d", k, len(got), len(ref.F[k]))
		}
		for i := range got {
			e := math.Abs(got[i] - ref.F[k][i])
			if math.IsNaN(e) {
				return math.Inf(1), nil
			}
			worst = math.Max(worst, e)
		}
	}
	return worst, nil
}

func discardf(string, ...any) {}

func okWord(ok bool) string {
	if ok {
		return "ok"
	}
	return "OUT OF TOLERANCE"
}

// parseFlags parses a subcommand's flags and checks them against rules; -h
// prints what (one paragraph) and the flags.
func parseFlags(fs *flag.FlagSet, args []string, what string, rules cli.Rules) error {
	err := cli.Parse(fs, args, func(w io.Writer) {
		fmt.Fprintf(w, "Usage: gpu %s [flags]\n\n%s\n\nFlags:\n", fs.Name(), what)
		cli.PrintDefaults(fs, w)
	})
	if err != nil {
		return err
	}
	return cli.Validate(fs, rules)
}
