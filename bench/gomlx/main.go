// Command gomlx times gdattn against GoMLX (github.com/gomlx/gomlx v0.26.0)
// on its pure-Go backend (backends/simplego, configured
// "parallelism=1,ops_sequential": one thread), on the synthetic training
// steps of bench/peer: GD with 1 block and the Trained TF with 1 layer
// (batch 512, d = 10, d' = 5, C = 25), at the context sizes of -N.
//
// The GoMLX models are written as a GoMLX user would: one graph function
// from the minibatch and the parameters to the mean cross-entropy,
// graph.Gradient for the gradients, Adam (lr 1e-3, as gdattn's bench) as
// graph operations in the same function, Einsum for the products, Softmax,
// Gather for the label embedding. Slices of tensors that depend on trained
// parameters (the context keys and values, the query row) are Gathers along
// the position axis: the gradient of Slice needs Pad, which simplego lacks.
//
// Before timing, each workload is checked: gdattn builds it in float64 with
// bench.NewRunner, and GoMLX computes the loss and the gradients from the
// same minibatch and parameters in float64; they must agree to 1e-6
// (absolute for the loss, relative to the largest gradient entry).
//
// Timing: one process, GOMAXPROCS=1; per workload, -reps rounds alternating
// which side goes first; in each round each side warms up and then times
// steps for at least -min-time; the table gives the median over the rounds
// of each side's CPU time (getrusage, user + system) per step and wall time
// per step, float32 on both sides.
//
//	cd bench/gomlx && go run . -reps 3 -N 10,125
//
// This is a module of its own, so that gdattn's go.mod does not grow.
package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gdattn/gdattn/bench"
	gg "github.com/gdattn/gdattn/graph"
	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"gorgonia.org/tensor"
)

const gomlxVersion = "v0.26.0"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gomlx:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("gomlx", flag.ContinueOnError)
	reps := fs.Int("reps", 3, "rounds per workload (alternating which side goes first)")
	ns := fs.String("N", "10,125", "comma-separated context sizes")
	minTime := fs.Duration("min-time", time.Second, "time each side steps for at least this long per round")
	warmup := fs.Int("warmup", 2, "untimed steps per side and round")
	out := fs.String("out", "", "also write the report to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *reps < 1 || *reps > 100 {
		return fmt.Errorf("-reps %d: want 1..100", *reps)
	}
	if *warmup < 0 {
		return fmt.Errorf("-warmup %d: want >= 0", *warmup)
	}
	var sizes []int
	for _, f := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 10000 {
			return fmt.Errorf("-N: %q is not a context size in 1..10000", f)
		}
		sizes = append(sizes, n)
	}
	runtime.GOMAXPROCS(1)
	backend, err := simplego.New("parallelism=1,ops_sequential")
	if err != nil {
		return err
	}
	var rep strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&rep, format, a...); fmt.Printf(format, a...) }
	p("## gdattn vs GoMLX %s (backend %s, \"parallelism=1,ops_sequential\"): training step, float32, one thread\n\n", gomlxVersion, backend.Name())
	p("%s\n\n", bench.Describe())
	p("Command: `cd bench/gomlx && go run . %s`. Load before: `%s`.\n\n", strings.Join(args, " "), bench.Uptime())
	p("| workload | check: |Δ loss| | check: max |Δ grad| / max |grad| | gdattn CPU ms | GoMLX CPU ms | gdattn/GoMLX CPU | gdattn ms | GoMLX ms | per-round CPU ratios |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, base := range []bench.Workload{bench.SyntheticGD(1), bench.SyntheticTF(1)} {
		for _, n := range sizes {
			w := base
			w.N = n
			w.Name = fmt.Sprintf("%s/N=%d", base.Name, n)
			dl, dg, err := check(backend, w)
			if err != nil {
				return fmt.Errorf("%s: check: %w", w.Name, err)
			}
			if dl > 1e-6 || dg > 1e-6 {
				return fmt.Errorf("%s: gdattn and GoMLX disagree: |Δ loss| %.2g, max |Δ grad| / max |grad| %.2g", w.Name, dl, dg)
			}
			gs, err := newGoSide(w)
			if err != nil {
				return err
			}
			ms, err := newGoMLXSide(backend, w)
			if err != nil {
				return err
			}
			var cpuG, cpuM, wallG, wallM, ratios []float64
			for r := 0; r < *reps; r++ {
				order := []stepper{gs, ms}
				if r%2 == 1 {
					order = []stepper{ms, gs}
				}
				for _, s := range order {
					c, wl, err := timeSteps(s, *warmup, *minTime)
					if err != nil {
						return fmt.Errorf("%s: %w", w.Name, err)
					}
					if s == stepper(gs) {
						cpuG, wallG = append(cpuG, c), append(wallG, wl)
					} else {
						cpuM, wallM = append(cpuM, c), append(wallM, wl)
					}
				}
				ratios = append(ratios, cpuG[r]/cpuM[r])
				fmt.Fprintf(os.Stderr, "round %d %s: gdattn %.2f CPU ms/step, GoMLX %.2f\n", r+1, w.Name, cpuG[r], cpuM[r])
			}
			gs.close()
			var rs []string
			for _, r := range ratios {
				rs = append(rs, fmt.Sprintf("%.3f", r))
			}
			p("| %s | %.1e | %.1e | %.2f | %.1f | **%.3f** | %.2f | %.1f | %s |\n", w.Name, dl, dg,
				median(cpuG), median(cpuM), median(cpuG)/median(cpuM), median(wallG), median(wallM), strings.Join(rs, ", "))
		}
	}
	p("\nLoad after: `%s`. CPU ms: process CPU time (user + system, getrusage) per step; ms: wall time per step; medians over %d rounds, each side stepping for at least %v per round after %d warm-up steps, the side going first alternating. Check: float64, the same minibatch and parameters on both sides.\n", bench.Uptime(), *reps, *minTime, *warmup)
	if *out != "" {
		return os.WriteFile(*out, []byte(rep.String()), 0o644)
	}
	return nil
}

type stepper interface{ step() error }

// timeSteps runs warmup steps, then steps until minTime has passed, and
// returns the CPU and wall milliseconds per timed step.
func timeSteps(s stepper, warmup int, minTime time.Duration) (cpu, wall float64, err error) {
	for i := 0; i < warmup; i++ {
		if err := s.step(); err != nil {
			return 0, 0, err
		}
	}
	c0, t0 := cpuTime(), time.Now()
	steps := 0
	for steps < 3 || time.Since(t0) < minTime {
		if err := s.step(); err != nil {
			return 0, 0, err
		}
		steps++
	}
	wall = float64(time.Since(t0).Microseconds()) / 1e3 / float64(steps)
	cpu = float64((cpuTime() - c0).Microseconds()) / 1e3 / float64(steps)
	return cpu, wall, nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// goSide is gdattn's training step (bench.Runner, float32).
type goSide struct{ r *bench.Runner }

func newGoSide(w bench.Workload) (*goSide, error) {
	r, err := bench.NewRunner(w, tensor.Float32, bench.Train, 1)
	if err != nil {
		return nil, err
	}
	return &goSide{r}, nil
}

func (s *goSide) step() error { _, err := s.r.Step(); return err }
func (s *goSide) close()      { s.r.Close() }

// paramNames are gdattn's parameter names of the model, in the order the
// GoMLX graph takes them.
func paramNames(w bench.Workload) []string {
	if w.Model == bench.ModelGD {
		return []string{"we", "log_alpha", "kernel/log_gamma"}
	}
	h := "layer0/head0/"
	return []string{"we", h + "log_gamma", h + "wq", h + "wk", h + "wv", h + "wo", "readout/r"}
}

// batch is a minibatch as GoMLX inputs: x (B, T, d), the label ids (B, T,
// 1), ctx (B, T, 1) 1 at the context rows and 0 at the query, the query's
// one-hot label (B, C).
type batch struct{ x, ids, ctx, target *tensors.Tensor }

func newBatch[F float32 | float64](w bench.Workload, x []float64, y []int) batch {
	B, T := w.Batch, w.N+1
	xf := make([]F, len(x))
	for i, v := range x {
		xf[i] = F(v)
	}
	ids := make([]int32, B*T)
	ctx := make([]F, B*T)
	tgt := make([]F, B*w.C)
	for b := 0; b < B; b++ {
		for t := 0; t < T; t++ {
			ids[b*T+t] = int32(y[b*T+t])
			if t < w.N {
				ctx[b*T+t] = 1
			}
		}
		tgt[b*w.C+y[b*T+w.N]] = 1
	}
	return batch{
		x:      tensors.FromFlatDataAndDimensions(xf, B, T, w.D),
		ids:    tensors.FromFlatDataAndDimensions(ids, B, T, 1),
		ctx:    tensors.FromFlatDataAndDimensions(ctx, B, T, 1),
		target: tensors.FromFlatDataAndDimensions(tgt, B, w.C),
	}
}

// rows gathers positions idx of z (B, T, D) along its position axis:
// (B, len(idx), D). A Gather, so that its gradient is a scatter (simplego
// has no Pad for Slice's).
func rows(z *Node, idx []int32) *Node {
	ix := make([][]int32, len(idx))
	for i, v := range idx {
		ix[i] = []int32{v}
	}
	g := Gather(Transpose(z, 0, 1), Const(z.Graph(), ix)) // (n, B, D)
	return Transpose(g, 0, 1)
}

func iota32(n int) []int32 {
	v := make([]int32, n)
	for i := range v {
		v[i] = int32(i)
	}
	return v
}

// loss is the model's mean cross-entropy on the batch inputs
// (x, ids, ctx, target) and parameters ps (paramNames' order).
func loss(w bench.Workload, x, ids, ctx, target *Node, ps []*Node) *Node {
	B, T, N, dp := w.Batch, w.N+1, w.N, w.DPrime
	we := ps[0]
	weT := Transpose(we, 0, 1)                                              // (C, d')
	wy := Mul(Gather(weT, ids), ctx)                                        // (B, T, d'), 0 at the query
	wbar := BroadcastToDims(Reshape(ReduceMean(we, 1), 1, 1, dp), B, T, dp) // w̄ at every row
	ctxIdx, query := iota32(N), []int32{int32(N)}
	var logits *Node
	if w.Model == bench.ModelGD {
		step := DivScalar(Exp(ps[1]), float64(N))
		g := Exp(ps[2])
		xc := rows(x, ctxIdx)
		a := Softmax(Mul(Einsum("btd,bnd->btn", x, xc), g), -1) // (B, T, N)
		f := Mul(step, Einsum("btn,bnd->btd", a, rows(Sub(wy, wbar), ctxIdx)))
		logits = Einsum("bd,dc->bc", Reshape(rows(f, query), B, dp), we)
	} else {
		g, wq, wk, wv, wo, r := Exp(ps[1]), ps[2], ps[3], ps[4], ps[5], ps[6]
		z := Concatenate([]*Node{x, Sub(wy, Mul(wbar, ctx)), ZerosLike(wy)}, -1) // (B, T, D)
		q := Einsum("btd,de->bte", z, wq)
		k := rows(Einsum("btd,de->bte", z, wk), ctxIdx)
		v := rows(Einsum("btd,de->bte", z, wv), ctxIdx)
		a := Softmax(Mul(Einsum("bte,bne->btn", q, k), g), -1)
		z = Add(z, Einsum("bte,ef->btf", Einsum("btn,bne->bte", a, v), wo))
		zq := Reshape(rows(z, query), B, -1)
		logits = Einsum("be,ec->bc", Einsum("bd,de->be", zq, r), we)
	}
	return Neg(ReduceAllMean(ReduceSum(Mul(LogSoftmax(logits, -1), target), -1)))
}

// gomlxSide is GoMLX's training step: loss, gradients and Adam in one
// graph, its state (parameters, moments) carried from step to step.
type gomlxSide struct {
	exec  *Exec
	in    batch
	state []*tensors.Tensor // parameters, m, v
	t     int
}

func newGoMLXSide(backend backends.Backend, w bench.Workload) (*gomlxSide, error) {
	r, err := bench.NewRunner(w, tensor.Float32, bench.Train, 1)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	np := len(paramNames(w))
	state := make([]*tensors.Tensor, 0, 3*np)
	for _, name := range paramNames(w) {
		v, shape, err := paramValue(r, name)
		if err != nil {
			return nil, err
		}
		state = append(state, tensorOf[float32](v, shape))
	}
	for range 2 {
		for i := 0; i < np; i++ {
			st := state[i].Shape()
			state = append(state, tensorOf[float32](make([]float64, st.Size()), st.Dimensions))
		}
	}
	exec, err := NewExec(backend, func(in []*Node) []*Node {
		x, ids, ctx, target, t := in[0], in[1], in[2], in[3], in[4]
		ps, m, v := in[5:5+np], in[5+np:5+2*np], in[5+2*np:5+3*np]
		l := loss(w, x, ids, ctx, target, ps)
		grads := Gradient(l, ps...)
		const lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8
		c1 := OneMinus(Pow(ConstAs(t, b1), t)) // 1 − β1ᵗ
		c2 := OneMinus(Pow(ConstAs(t, b2), t))
		out := []*Node{l}
		var ms, vs []*Node
		for i, p := range ps {
			g := grads[i]
			mi := Add(MulScalar(m[i], b1), MulScalar(g, 1-b1))
			vi := Add(MulScalar(v[i], b2), MulScalar(Square(g), 1-b2))
			upd := Div(Div(mi, c1), AddScalar(Sqrt(Div(vi, c2)), eps))
			out = append(out, Sub(p, MulScalar(upd, lr)))
			ms, vs = append(ms, mi), append(vs, vi)
		}
		return append(append(out, ms...), vs...)
	})
	if err != nil {
		return nil, err
	}
	return &gomlxSide{exec: exec, in: newBatch[float32](w, r.X, r.Y), state: state}, nil
}

func (s *gomlxSide) step() error {
	s.t++
	args := []any{s.in.x, s.in.ids, s.in.ctx, s.in.target, tensors.FromValue(float32(s.t))}
	for _, t := range s.state {
		args = append(args, t)
	}
	out, err := s.exec.Exec(args...)
	if err != nil {
		return err
	}
	l := tensors.MustCopyFlatData[float32](out[0])
	if len(l) != 1 || math.IsNaN(float64(l[0])) {
		return errors.New("GoMLX step: loss is not a finite scalar")
	}
	s.state = out[1:]
	return nil
}

func tensorOf[F float32 | float64](v []float64, shape []int) *tensors.Tensor {
	f := make([]F, len(v))
	for i, x := range v {
		f[i] = F(x)
	}
	return tensors.FromFlatDataAndDimensions(f, shape...)
}

// paramValue is the value and shape of gdattn's parameter name in r.
func paramValue(r *bench.Runner, name string) ([]float64, []int, error) {
	for _, p := range r.Scope.Params() {
		if p.Name() == name {
			v, err := gg.Values(p)
			return v, []int(p.Shape()), err
		}
	}
	return nil, nil, fmt.Errorf("gdattn has no parameter %q", name)
}

// check computes the loss and gradients of w on gdattn's float64 minibatch
// and parameters on both sides and returns |Δ loss| and the largest
// gradient difference relative to the largest gradient entry.
func check(backend backends.Backend, w bench.Workload) (dLoss, dGrad float64, err error) {
	r, err := bench.NewRunner(w, tensor.Float64, bench.Train, 1)
	if err != nil {
		return 0, 0, err
	}
	defer r.Close()
	want, err := r.LossValue()
	if err != nil {
		return 0, 0, err
	}
	in := newBatch[float64](w, r.X, r.Y)
	args := []any{in.x, in.ids, in.ctx, in.target}
	var wantGrads [][]float64
	for _, name := range paramNames(w) {
		v, shape, err := paramValue(r, name)
		if err != nil {
			return 0, 0, err
		}
		args = append(args, tensorOf[float64](v, shape))
		for _, p := range r.Scope.Params() {
			if p.Name() == name {
				g, err := gg.GradValues(p)
				if err != nil {
					return 0, 0, err
				}
				wantGrads = append(wantGrads, g)
			}
		}
	}
	np := len(paramNames(w))
	exec, err := NewExec(backend, func(in []*Node) []*Node {
		l := loss(w, in[0], in[1], in[2], in[3], in[4:4+np])
		return append([]*Node{l}, Gradient(l, in[4:4+np]...)...)
	})
	if err != nil {
		return 0, 0, err
	}
	defer exec.Finalize()
	out, err := exec.Exec(args...)
	if err != nil {
		return 0, 0, err
	}
	got := tensors.MustCopyFlatData[float64](out[0])[0]
	var diff, scale float64
	for i, wg := range wantGrads {
		g := tensors.MustCopyFlatData[float64](out[1+i])
		if len(g) != len(wg) {
			return 0, 0, fmt.Errorf("gradient of %s: %d values, want %d", paramNames(w)[i], len(g), len(wg))
		}
		for j := range g {
			diff = max(diff, math.Abs(g[j]-wg[j]))
			scale = max(scale, math.Abs(wg[j]))
		}
	}
	return math.Abs(got - want), diff / max(scale, 1e-300), nil
}
