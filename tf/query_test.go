package tf

import (
	"fmt"
	"math"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/losses"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// queryRun builds a TF of cfg, feeds a fixed random batch and runs a
// gradient machine on the cross-entropy of the model's logits (full false:
// QueryToken, the query-only last layer) or of logits read from the last
// row of Tokens[L] (full true: every position's attention computed). It
// returns the loss and every parameter's gradient.
func queryRun(t *testing.T, cfg Config, dt tensor.Dtype, full bool) (float64, [][]float64) {
	return queryRunB(t, cfg, dt, full, 5)
}

// queryRunB is queryRun with B contexts in the batch.
func queryRunB(t *testing.T, cfg Config, dt tensor.Dtype, full bool, B int) (float64, [][]float64) {
	t.Helper()
	x, y := randomBatch(3, B, cfg.N+1, cfg.D, cfg.C)
	s, err := graph.NewScope(dt, 7)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(s, cfg, B)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Feed(x, y); err != nil {
		t.Fatal(err)
	}
	logits := m.Logits
	if full {
		T, D := cfg.N+1, cfg.TokenDim()
		zL := m.Tokens[len(m.Tokens)-1]
		q := G.Must(ops.Reshape(G.Must(ops.Slice(zL, 1, T-1, T)), tensor.Shape{B, D}))
		head, err := layers.NewSoftmaxHead(m.We)
		if err != nil {
			t.Fatal(err)
		}
		if logits, err = head.Forward(G.Must(ops.MatMul(q, m.R, false, false))); err != nil {
			t.Fatal(err)
		}
	}
	loss, err := losses.CrossEntropy(logits, m.Target)
	if err != nil {
		t.Fatal(err)
	}
	vm, err := graph.NewMachine(s, loss, graph.MachineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	if err := vm.Run(); err != nil {
		t.Fatal(err)
	}
	l, err := graph.Scalar(loss)
	if err != nil {
		t.Fatal(err)
	}
	var grads [][]float64
	for _, p := range s.Params() {
		g, err := graph.GradValues(p)
		if err != nil {
			t.Fatal(err)
		}
		grads = append(grads, g)
	}
	return l, grads
}

// TestQueryTokenExact checks that the model's loss and gradients, which
// read the last layer at the query only (QueryToken), are those of the
// full last layer's query row: the same bits, with one head per layer or
// two, with and without cross-attention (the gradient terms of the last
// layer's input are added in the same order: at the context rows the
// residual's term is an exact zero on both paths), also checked within
// 1e-12 (float64) and 1e-5 (float32) relative to the largest gradient
// element.
func TestQueryTokenExact(t *testing.T) {
	for _, k := range []string{layers.KernelSoftmax, layers.KernelExp, layers.KernelLinear, layers.KernelRBF} {
		for _, c := range []struct {
			layers, heads int
			cross         bool
			batch         int // 5 if 0
		}{{1, 1, false, 0}, {2, 1, false, 0}, {1, 2, false, 0}, {2, 1, true, 0}, {1, 1, true, 0},
			// B·T = 2000 rows: the deep products of the parameters' gradients
			{2, 1, true, 200},
			// the synthetic example's TF: two layers of two heads, cross-attention
			{2, 2, true, 0}, {2, 2, true, 200}} {
			cfg := Config{D: 3, DPrime: 2, C: 4, N: 9, Layers: c.layers, Heads: c.heads, Cross: c.cross, Kernel: layers.Builtin(k, 0.7)}
			if k == layers.KernelExp {
				cfg.Kernel, cfg.WInit = layers.Exp(0.1), graph.Uniform(-0.5, 0.5)
			}
			if c.batch == 0 {
				c.batch = 5
			}
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				t.Run(fmt.Sprintf("%s/L=%d/heads=%d/cross=%v/B=%d/%v", k, c.layers, c.heads, c.cross, c.batch, dt), func(t *testing.T) {
					wantL, want := queryRunB(t, cfg, dt, true, c.batch)
					gotL, got := queryRunB(t, cfg, dt, false, c.batch)
					tol := 1e-12
					if dt == tensor.Float32 {
						tol = 1e-5
					}
					check := func(what string, g, w []float64) {
						t.Helper()
						var scale float64
						for _, v := range w {
							scale = math.Max(scale, math.Abs(v))
						}
						for i := range w {
							if math.Float64bits(g[i]) != math.Float64bits(w[i]) && !(g[i] == 0 && w[i] == 0) {
								t.Fatalf("%s[%d] = %v, want %v bit for bit (the full last layer's)", what, i, g[i], w[i])
							}
							if math.Abs(g[i]-w[i]) > tol*math.Max(scale, 1e-300) {
								t.Fatalf("%s[%d] = %v, want %v (the full last layer's)", what, i, g[i], w[i])
							}
						}
					}
					check("loss", []float64{gotL}, []float64{wantL})
					for i := range want {
						check(fmt.Sprintf("gradient %d", i), got[i], want[i])
					}
				})
			}
		}
	}
}

// TestRegroupQuery checks that Config.RegroupQuery puts the regrouped query
// head (ops.AttentionHeadQueryRegrouped) in the last layer, and that the
// model's loss and gradients are the default's within 1e-12 (float64) and
// 2e-5 (float32) relative to the largest gradient element.
func TestRegroupQuery(t *testing.T) {
	for _, c := range []struct {
		layers, heads int
		cross         bool
	}{{1, 1, false}, {2, 2, false}, {2, 1, true}} {
		cfg := Config{D: 3, DPrime: 2, C: 4, N: 9, Layers: c.layers, Heads: c.heads, Cross: c.cross, Kernel: layers.Softmax(0.7)}
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(fmt.Sprintf("L=%d/heads=%d/cross=%v/%v", c.layers, c.heads, c.cross, dt), func(t *testing.T) {
				rc := cfg
				rc.RegroupQuery = true
				s, err := graph.NewScope(dt, 7)
				if err != nil {
					t.Fatal(err)
				}
				m, err := NewModel(s, rc, 5)
				if err != nil {
					t.Fatal(err)
				}
				regrouped := 0
				for _, n := range s.Graph().AllNodes() {
					if op, ok := n.Op().(*ops.HeadOp); ok && op.Regrouped() {
						regrouped++
					}
				}
				want := c.heads // the last layer's heads
				if regrouped != want || m.QueryToken == nil {
					t.Fatalf("%d regrouped heads, want %d", regrouped, want)
				}
				wantL, wantG := queryRun(t, cfg, dt, false)
				gotL, got := queryRun(t, rc, dt, false)
				tol := 1e-12
				if dt == tensor.Float32 {
					tol = 2e-5
				}
				check := func(what string, g, w []float64) {
					t.Helper()
					var scale float64
					for _, v := range w {
						scale = math.Max(scale, math.Abs(v))
					}
					for i := range w {
						if math.Abs(g[i]-w[i]) > tol*math.Max(scale, 1e-300) {
							t.Fatalf("%s[%d] = %v, want %v (the default last layer's)", what, i, g[i], w[i])
						}
					}
				}
				check("loss", []float64{gotL}, []float64{wantL})
				for i := range wantG {
					check(fmt.Sprintf("gradient %d", i), got[i], wantG[i])
				}
			})
		}
	}
}
