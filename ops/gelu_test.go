package ops_test

import (
	"math"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// geluChain builds GELU from Gorgonia's ops as the feed-forward layers
// did before ops.GELU: x ⊙ σ((x + x³·c)·k), with c and k the scalar
// constant nodes of the two coefficients (0.044715 and 2√(2/π) in x's
// dtype). It is the reference the fused op is tested against.
func geluChain(x, c, k *G.Node) (y *G.Node, err error) {
	defer graph.Recover(&err)
	inner := G.Must(G.Add(x, G.Must(G.Mul(G.Must(G.Cube(x)), c))))
	return G.Must(G.HadamardProd(x, G.Must(G.Sigmoid(G.Must(G.Mul(inner, k)))))), nil
}

// geluBuild returns a build function: the sum of GELU(x)⊙w over a
// parameter x of the given shape drawn with standard deviation sd (large
// enough to reach both saturated ends of the sigmoid), fused or as
// Gorgonia's chain.
func geluBuild(shape tensor.Shape, sd float64, fused bool) graphtest.BuildFunc {
	return func(s *graph.Scope) (*G.Node, error) {
		x, err := s.Param("x", shape, graph.Normal(sd))
		if err != nil {
			return nil, err
		}
		var y *G.Node
		if fused {
			y, err = ops.GELU(x)
		} else {
			c, _ := s.Const("c", tensor.Shape{}, []float64{ops.GELUC})
			k, _ := s.Const("k", tensor.Shape{}, []float64{ops.GELUK})
			y, err = geluChain(x, c, k)
		}
		if err != nil {
			return nil, err
		}
		w, _ := s.Const("w", shape, graphtest.RandValues(s, shape.TotalSize()))
		return G.Sum(G.Must(G.HadamardProd(y, w)))
	}
}

// TestGELUBitIdentical checks that the fused GELU gives the values and
// gradients of Gorgonia's chain bit for bit, in float32 and float64, on
// values that reach both saturated ends of the sigmoid.
func TestGELUBitIdentical(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		for _, tc := range []struct {
			shape tensor.Shape
			sd    float64
		}{{tensor.Shape{7, 13}, 1}, {tensor.Shape{3, 5, 64}, 4}, {tensor.Shape{300, 300}, 12}, {tensor.Shape{1}, 1}} {
			for seed := uint64(1); seed <= 3; seed++ {
				want := graphtest.Forward(t, geluBuild(tc.shape, tc.sd, false), dt, seed)
				got := graphtest.Forward(t, geluBuild(tc.shape, tc.sd, true), dt, seed)
				same(t, dt, "loss", got, want)
				wl, wg := graphtest.Gradients(t, geluBuild(tc.shape, tc.sd, false), dt, seed)
				gl, gg := graphtest.Gradients(t, geluBuild(tc.shape, tc.sd, true), dt, seed)
				same(t, dt, "loss", []float64{gl}, []float64{wl})
				same(t, dt, "dx", gg["x"], wg["x"])
			}
		}
	}
}

func same(t *testing.T, dt tensor.Dtype, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%v %s: %d values, want %d", dt, what, len(got), len(want))
	}
	bad := 0
	for i := range got {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
			if bad < 5 {
				t.Errorf("%v %s[%d] = %.17g, want %.17g", dt, what, i, got[i], want[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%v %s: %d of %d values differ", dt, what, bad, len(got))
	}
}

// TestGELUGrad checks the fused GELU's gradient against finite
// differences in float64 and float32.
func TestGELUGrad(t *testing.T) {
	build := geluBuild(tensor.Shape{4, 6}, 1.5, true)
	graphtest.CheckGrad(t, build, graphtest.Options{Seed: 3})
	graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 3})
}

// TestGELUValues checks a few values against the formula in float64.
func TestGELUValues(t *testing.T) {
	xs := []float64{-30, -3, -1, -0.5, 0, 0.25, 1, 2, 40}
	build := func(s *graph.Scope) (*G.Node, error) {
		x, err := s.Const("x", tensor.Shape{len(xs)}, xs)
		if err != nil {
			return nil, err
		}
		return ops.GELU(x)
	}
	got := graphtest.Forward(t, build, tensor.Float64, 1)
	for i, x := range xs {
		want := 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
		if math.Abs(got[i]-want) > 1e-15*math.Max(1, math.Abs(want)) {
			t.Errorf("gelu(%v) = %.17g, want %.17g", x, got[i], want)
		}
	}
}

// TestGELUBadInput checks that bad nodes and values are errors.
func TestGELUBadInput(t *testing.T) {
	if _, err := ops.GELU(nil); err == nil {
		t.Error("GELU(nil): no error")
	}
	s, err := graph.NewScope(graph.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := s.Const("sc", tensor.Shape{}, []float64{1})
	if _, err := ops.GELU(sc); err == nil {
		t.Error("GELU(scalar): no error")
	}
	g := G.NewGraph()
	xi := G.NewMatrix(g, tensor.Int, G.WithShape(2, 2), G.WithName("xi"))
	if _, err := ops.GELU(xi); err == nil {
		t.Error("GELU(int matrix): no error")
	}
	a := tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{1, 2, 3, 4}))
	b := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{1, 2, 3}))
	c := tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float32{1, 2, 3, 4}))
	if _, err := (&ops.GELUOp{}).Do(a, b); err == nil {
		t.Error("GELUOp.Do with two inputs: no error")
	}
	if _, err := (&ops.GELUGradOp{}).Do(a, b); err == nil {
		t.Error("GELUGradOp.Do with mismatched sizes: no error")
	}
	if _, err := (&ops.GELUGradOp{}).Do(a, c); err == nil {
		t.Error("GELUGradOp.Do with mixed dtypes: no error")
	}
	if _, err := (&ops.GELUGradOp{}).Do(a); err == nil {
		t.Error("GELUGradOp.Do with one input: no error")
	}
}

// BenchmarkGELU times a forward and backward pass of GELU over the
// hidden layer of the language `paper` preset's feed-forward block (1024
// rows of 2048), float32, fused and as Gorgonia's chain of ops, on
// graph.NewMachine's default (host) executor.
func BenchmarkGELU(b *testing.B) {
	for _, fused := range []bool{true, false} {
		name := "chain"
		if fused {
			name = "fused"
		}
		b.Run(name, func(b *testing.B) {
			s, err := graph.NewScope(graph.Float32, 1)
			if err != nil {
				b.Fatal(err)
			}
			loss, err := geluBuild(tensor.Shape{1024, 2048}, 1, fused)(s)
			if err != nil {
				b.Fatal(err)
			}
			m, err := graph.NewMachine(s, loss, graph.MachineOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			if err := m.Run(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if err := m.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
