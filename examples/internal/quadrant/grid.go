package quadrant

import (
	"fmt"
	"math"

	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/ops"
	"github.com/gdattn/gdattn/tf"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// head holds one attention head's matrices in gdattn's row convention
// (out_j = Σ_i κ(z_j W_Q, z_i W_K) z_i W_V P) and its kernel parameter g.
type head struct {
	WQ, WK, WV, P gd.Matrix
	Gamma         float64
}

// oneLayer is a trained single-layer model on the gd.OneStep tokens
// (x, w_{e,y} − w̄_e, 0): its heads, the readout R (D×d') and W_e (d'×C).
// A GD model is the special case with the construction's matrices
// (gd.OneStepMatrices), R selecting the f block.
type oneLayer struct {
	Kernel       string
	D, DPrime, C int
	Heads        []head
	R, We        gd.Matrix
}

// values reads node n as a matrix.
func values(n *G.Node) (gd.Matrix, error) {
	v, err := graph.Values(n)
	if err != nil {
		return gd.Matrix{}, err
	}
	sh := n.Shape()
	if len(sh) != 2 {
		return gd.Matrix{}, fmt.Errorf("node %q has shape %v, want a matrix", n.Name(), sh)
	}
	return gd.Matrix{Rows: sh[0], Cols: sh[1], Data: v}, nil
}

// gammaOf returns exp(v) for the log-parameter v stored at path in s (the
// kernel parameter g = exp(log_gamma), the GD step α = exp(log_alpha)), or
// def when there is no such parameter (a fixed g or α, the linear kernel).
func gammaOf(s *graph.Scope, path string, def float64) (float64, error) {
	n, ok := s.Lookup(path)
	if !ok {
		return def, nil
	}
	lg, err := graph.Scalar(n)
	return math.Exp(lg), err
}

// fromTF extracts the single layer of a Trained TF without cross-attention.
func fromTF(m *tf.Model) (oneLayer, error) {
	cfg := m.Cfg
	if cfg.Layers != 1 || cfg.Cross {
		return oneLayer{}, fmt.Errorf("fromTF: want one layer without cross-attention, have %d layers, Cross %v", cfg.Layers, cfg.Cross)
	}
	o := oneLayer{Kernel: cfg.Kernel.Name(), D: cfg.D, DPrime: cfg.DPrime, C: cfg.C}
	for h, a := range m.Blocks[0].Heads {
		var hd head
		ns := [4]*G.Node{}
		ns[0], ns[1], ns[2], ns[3] = a.Matrices()
		for i, dst := range []*gd.Matrix{&hd.WQ, &hd.WK, &hd.WV, &hd.P} {
			var err error
			if *dst, err = values(ns[i]); err != nil {
				return oneLayer{}, err
			}
		}
		var err error
		if hd.Gamma, err = gammaOf(m.Scope(), m.Scope().Sub("layer0").Sub(fmt.Sprintf("head%d", h)).Name("log_gamma"), cfg.Kernel.(layers.BuiltinSpec).Gamma()); err != nil {
			return oneLayer{}, err
		}
		o.Heads = append(o.Heads, hd)
	}
	var err error
	if o.R, err = values(m.R); err != nil {
		return oneLayer{}, err
	}
	o.We, err = values(m.We)
	return o, err
}

// fromGD expresses a single-head gd.OneStep model as the construction's
// matrices with its learned α, g and W_e.
func fromGD(m *gd.Model) (oneLayer, error) {
	cfg := m.Cfg
	if cfg.Form != gd.OneStep || cfg.Heads != 1 || cfg.Bias {
		return oneLayer{}, fmt.Errorf("fromGD: want a single-head OneStep model without bias")
	}
	// α = exp(log_alpha), read from the parameter (m.Alpha has a value only
	// after a run).
	alpha, err := gammaOf(m.Scope(), m.Scope().Name("log_alpha"), cfg.Alpha)
	if err != nil {
		return oneLayer{}, err
	}
	h, err := gd.OneStepMatrices(cfg.D, cfg.DPrime, cfg.N, alpha)
	if err != nil {
		return oneLayer{}, err
	}
	g, err := gammaOf(m.Scope(), m.Scope().Sub("kernel").Name("log_gamma"), cfg.Kernel.(layers.BuiltinSpec).Gamma())
	if err != nil {
		return oneLayer{}, err
	}
	o := oneLayer{Kernel: cfg.Kernel.Name(), D: cfg.D, DPrime: cfg.DPrime, C: cfg.C,
		Heads: []head{{WQ: h.WQ, WK: h.WK, WV: h.WV, P: h.P, Gamma: g}}}
	D := cfg.TokenDim()
	o.R = gd.Matrix{Rows: D, Cols: cfg.DPrime, Data: make([]float64, D*cfg.DPrime)}
	for i := 0; i < cfg.DPrime; i++ {
		o.R.Data[(cfg.D+cfg.DPrime+i)*cfg.DPrime+i] = 1 // read the f block
	}
	o.We, err = values(m.We)
	return o, err
}

// gridProbs returns p(y = c | x_g) (G×C, row-major) at the G query points
// grid (G×d) for one context of N pairs (ctxX N×d, ctxY N), computed in ONE
// forward pass of the model over a single sequence of T = N + G tokens:
// the N context tokens (x_i, w_{e,y_i} − w̄_e, 0) followed by the G query
// tokens (x_g, 0, 0). Every position is a query and the keys and values are
// the N context positions only, so each grid query sees exactly what the
// query of an ordinary (N+1)-token sequence sees (layers.ContextKeys with
// the keys cut at N instead of T−1); the outputs at the context positions
// are computed and discarded.
func gridProbs(o oneLayer, ctxX []float64, ctxY []int, grid []float64) (probs []float64, err error) {
	defer graph.Recover(&err)
	d, dp, C := o.D, o.DPrime, o.C
	D := d + 2*dp
	N, Gn := len(ctxY), len(grid)/d
	if N == 0 || len(ctxX) != N*d || Gn == 0 || len(grid) != Gn*d {
		return nil, fmt.Errorf("gridProbs: %d context covariates for %d labels and %d grid values, want N·d and G·d (d = %d)", len(ctxX), N, len(grid), d)
	}
	if o.We.Rows != dp || o.We.Cols != C || o.R.Rows != D || o.R.Cols != dp {
		return nil, fmt.Errorf("gridProbs: W_e is %dx%d and R %dx%d, want %dx%d and %dx%d", o.We.Rows, o.We.Cols, o.R.Rows, o.R.Cols, dp, C, D, dp)
	}
	T := N + Gn
	// Tokens, built in plain Go: (T, D).
	z := make([]float64, T*D)
	for i := 0; i < T; i++ {
		row := z[i*D : (i+1)*D]
		if i < N {
			copy(row, ctxX[i*d:(i+1)*d])
			y := ctxY[i]
			if y < 0 || y >= C {
				return nil, fmt.Errorf("gridProbs: label %d of context position %d, want 0..%d", y, i, C-1)
			}
			for r := 0; r < dp; r++ {
				mean := 0.0
				for c := 0; c < C; c++ {
					mean += o.We.At(r, c) / float64(C)
				}
				row[d+r] = o.We.At(r, y) - mean // w_{e,y} − w̄_e
			}
		} else {
			copy(row, grid[(i-N)*d:(i-N+1)*d]) // (x, 0, 0)
		}
	}
	s, err := graph.NewScope(graph.Float64, 0)
	if err != nil {
		return nil, err
	}
	cst := func(name string, m gd.Matrix) *G.Node {
		n, err := s.Const(name, tensor.Shape{m.Rows, m.Cols}, m.Data)
		if err != nil {
			panic(err)
		}
		return n
	}
	zAll := cst("tokens", gd.Matrix{Rows: T, Cols: D, Data: z}) // (T, D)
	zCtx := G.Must(ops.Slice(zAll, 0, 0, N))                    // (N, D): keys and values
	var sum *G.Node
	for h, hd := range o.Heads {
		dk, dv := hd.WQ.Cols, hd.WV.Cols
		kern, err := layers.NewKernel(s.Sub(fmt.Sprintf("head%d", h)), o.Kernel, layers.KernelConfig{Gamma: hd.Gamma})
		if err != nil {
			return nil, err
		}
		q := G.Must(ops.Reshape(G.Must(G.Mul(zAll, cst(fmt.Sprintf("wq%d", h), hd.WQ))), tensor.Shape{1, T, dk})) // (1, T, DK)
		k := G.Must(ops.Reshape(G.Must(G.Mul(zCtx, cst(fmt.Sprintf("wk%d", h), hd.WK))), tensor.Shape{1, N, dk})) // (1, N, DK)
		v := G.Must(ops.Reshape(G.Must(G.Mul(zCtx, cst(fmt.Sprintf("wv%d", h), hd.WV))), tensor.Shape{1, N, dv})) // (1, N, DV)
		w, err := kern(q, k, nil)                                                                                 // (1, T, N)
		if err != nil {
			return nil, err
		}
		att := G.Must(ops.Reshape(G.Must(G.BatchedMatMul(w, v, false, false)), tensor.Shape{T, dv})) // (T, DV)
		out := G.Must(G.Mul(att, cst(fmt.Sprintf("p%d", h), hd.P)))                                  // (T, D)
		if sum == nil {
			sum = out
		} else {
			sum = G.Must(G.Add(sum, out))
		}
	}
	z1 := G.Must(G.Add(zAll, sum))                                    // (T, D): skip connection
	f := G.Must(G.Mul(G.Must(ops.Slice(z1, 0, N, T)), cst("r", o.R))) // (G, d')
	p := G.Must(ops.SoftMax(G.Must(G.Mul(f, cst("we", o.We)))))       // (G, C)
	vm, err := graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true})
	if err != nil {
		return nil, err
	}
	defer vm.Close()
	if err := vm.Run(); err != nil {
		return nil, err
	}
	return graph.Values(p)
}
