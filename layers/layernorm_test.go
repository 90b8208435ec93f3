package layers_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/layers"
)

// lnCase is one layer-norm configuration with its (seeded) data.
type lnCase struct {
	name   string
	shape  tensor.Shape // input shape (..., Dim)
	eps    float64      // 0 means the default 1e-5
	noBias bool
	// constRow makes the first row constant, so its variance is 0 and the
	// output is bias (checks that eps, not a NaN, takes over).
	constRow bool
}

var lnCases = []lnCase{
	{name: "BTD", shape: tensor.Shape{2, 3, 4}},
	{name: "BT_D", shape: tensor.Shape{6, 4}},

	{name: "one_row", shape: tensor.Shape{1, 3}},
	{name: "eps", shape: tensor.Shape{2, 2, 3}, eps: 0.5}, // large eps changes every value
	{name: "no_bias", shape: tensor.Shape{2, 3, 4}, noBias: true},
	{name: "const_row", shape: tensor.Shape{3, 4}, constRow: true},
}

// lnData draws the input x, scale, bias and loss weights r for c from a PCG
// generator seeded (1, 1): x ~ 1 + 2 N(0,1) (an offset mean and a non-unit
// variance, so both are really removed), scale ~ 1 + 0.5 N(0,1), bias ~ N(0,1).
func lnData(c lnCase) (x, scale, bias, r []float64) {
	rng := rand.New(rand.NewPCG(1, 1))
	d := c.shape[len(c.shape)-1]
	n := c.shape.TotalSize()
	x, r = make([]float64, n), make([]float64, n)
	scale, bias = make([]float64, d), make([]float64, d)
	for i := range x {
		x[i] = 1 + 2*rng.NormFloat64()
		r[i] = rng.NormFloat64()
	}
	if c.constRow {
		for i := range d {
			x[i] = 0.7
		}
	}
	for i := range scale {
		scale[i] = 1 + 0.5*rng.NormFloat64()
		bias[i] = rng.NormFloat64()
	}
	if c.noBias {
		bias = make([]float64, d)
	}
	return x, scale, bias, r
}

// lnReference is layer norm in plain Go (biased variance, as PyTorch).
func lnReference(x, scale, bias []float64, eps float64) []float64 {
	d := len(scale)
	y := make([]float64, len(x))
	for row := 0; row < len(x)/d; row++ {
		xs := x[row*d : (row+1)*d]
		var mean, v float64
		for _, xi := range xs {
			mean += xi
		}
		mean /= float64(d)
		for _, xi := range xs {
			v += (xi - mean) * (xi - mean)
		}
		v /= float64(d)
		for i, xi := range xs {
			y[row*d+i] = (xi-mean)/math.Sqrt(v+eps)*scale[i] + bias[i]
		}
	}
	return y
}

// lnBuild returns a build function for c: the layer under "blk/ln" with the
// scale and bias of lnData. With asParam the input is a parameter "x" (so the
// gradient check covers it) and the output is the scalar Σ y ⊙ r; otherwise
// the input is an Input node and the output is y.
func lnBuild(c lnCase, asParam bool) graphtest.BuildFunc {
	x, scale, bias, r := lnData(c)
	return func(s *graph.Scope) (*G.Node, error) {
		ln, err := layers.NewLayerNorm(s.Sub("blk").Sub("ln"), layers.LayerNormConfig{Dim: len(scale), Eps: c.eps, NoBias: c.noBias})
		if err != nil {
			return nil, err
		}
		ps := ln.Params()
		if err := graph.SetValue(ps[0], scale); err != nil {
			return nil, err
		}
		if !c.noBias {
			if err := graph.SetValue(ps[1], bias); err != nil {
				return nil, err
			}
		}
		var xn *G.Node
		if asParam {
			xn, err = s.Param("x", c.shape, graph.FromValues(x))
		} else {
			xn, err = s.Input("x", c.shape)
			if err == nil {
				err = graph.SetValue(xn, x)
			}
		}
		if err != nil {
			return nil, err
		}
		y, err := ln.Forward(xn)
		if err != nil || !asParam {
			return y, err
		}
		if !y.Shape().Eq(c.shape) {
			return nil, fmt.Errorf("output shape %v, want %v", y.Shape(), c.shape)
		}
		rn, err := s.Const("r", c.shape, r)
		if err != nil {
			return nil, err
		}
		return G.Sum(G.Must(G.HadamardProd(y, rn)))
	}
}

func TestLayerNormForward(t *testing.T) {
	for _, c := range lnCases {
		t.Run(c.name, func(t *testing.T) {
			x, scale, bias, _ := lnData(c)
			eps := c.eps
			if eps == 0 {
				eps = 1e-5
			}
			want := lnReference(x, scale, bias, eps)
			got := map[string][]float64{}
			for _, tc := range []struct {
				dt  tensor.Dtype
				tol float64
			}{
				{tensor.Float64, 1e-12},
				{tensor.Float32, 1e-5},
			} {
				got[tc.dt.String()] = graphtest.Forward(t, lnBuild(c, false), tc.dt, 1)
				if diff := cmp.Diff(want, got[tc.dt.String()], cmpopts.EquateApprox(tc.tol, tc.tol)); diff != "" {
					t.Errorf("%v: layer norm mismatch against plain Go (-want +got):\n%s", tc.dt, diff)
				}
			}
			if diff := cmp.Diff(got["float64"], got["float32"], cmpopts.EquateApprox(1e-5, 1e-5)); diff != "" {
				t.Errorf("float32 disagrees with float64 (-f64 +f32):\n%s", diff)
			}
		})
	}
}

func TestLayerNormGrad(t *testing.T) {
	for _, c := range lnCases {
		t.Run(c.name, func(t *testing.T) {
			m64 := graphtest.CheckGrad(t, lnBuild(c, true), graphtest.Options{Seed: 1})
			opts32 := graphtest.Options{Seed: 1}
			if c.constRow {
				// At zero variance dy/dx is scale/sqrt(eps) ≈ 316·scale, and the
				// float32 mean of a constant row is off by an ulp, so the float32
				// gradient carries errors near 5e-4 (measured); allow 5e-3.
				opts32.Tol = 5e-3
			}
			m32 := graphtest.CheckGrad32(t, lnBuild(c, true), opts32)
			t.Logf("max error: float64 %.3g, float32 %.3g", m64, m32)
		})
	}
}

// TestLayerNormInputUntouched checks that the layer never writes into its
// input's memory: Gorgonia runs elementwise ops in place and a Reshape shares
// memory with its input, so a careless layer norm would clobber a value the
// graph reads again later. The input is h = tanh(p) (an intermediate node),
// read again after the layer either directly (a residual h + ln(h)) or
// through a reshape alias of it.
func TestLayerNormInputUntouched(t *testing.T) {
	c := lnCases[0] // (2, 3, 4)
	p, scale, bias, r := lnData(c)
	h := make([]float64, len(p))
	for i, v := range p {
		h[i] = math.Tanh(v)
	}
	y := lnReference(h, scale, bias, 1e-5)
	for _, tc := range []struct {
		name string
		// loss builds the scalar from h and the layer (under "blk/ln").
		loss func(s *graph.Scope, ln *layers.LayerNorm, h, r *G.Node) *G.Node
		want float64
	}{
		{
			name: "residual", // Σ (h + ln(h)) ⊙ r
			loss: func(s *graph.Scope, ln *layers.LayerNorm, h, r *G.Node) *G.Node {
				y := G.Must(ln.Forward(h))
				return G.Must(G.Sum(G.Must(G.HadamardProd(G.Must(G.Add(h, y)), r))))
			},
			want: func() (sum float64) {
				for i := range h {
					sum += (h[i] + y[i]) * r[i]
				}
				return sum
			}(),
		},
		{
			name: "reshaped", // Σ ln(reshape(h)) ⊙ r + Σ h ⊙ h
			loss: func(s *graph.Scope, ln *layers.LayerNorm, h, r *G.Node) *G.Node {
				a := G.Must(G.Reshape(h, tensor.Shape{6, 4})) // (B*T, D), shares h's memory
				y := G.Must(G.Reshape(G.Must(ln.Forward(a)), c.shape))
				l1 := G.Must(G.Sum(G.Must(G.HadamardProd(y, r))))
				return G.Must(G.Add(l1, G.Must(G.Sum(G.Must(G.Square(h))))))
			},
			want: func() (sum float64) {
				for i := range h {
					sum += y[i]*r[i] + h[i]*h[i]
				}
				return sum
			}(),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			build := func(s *graph.Scope) (*G.Node, error) {
				ln, err := layers.NewLayerNorm(s.Sub("blk").Sub("ln"), layers.DefaultLayerNormConfig(4))
				if err != nil {
					return nil, err
				}
				if err := graph.SetValue(ln.Params()[0], scale); err != nil {
					return nil, err
				}
				if err := graph.SetValue(ln.Params()[1], bias); err != nil {
					return nil, err
				}
				pn, err := s.Param("p", c.shape, graph.FromValues(p))
				if err != nil {
					return nil, err
				}
				rn, err := s.Const("r", c.shape, r)
				if err != nil {
					return nil, err
				}
				return tc.loss(s, ln, G.Must(G.Tanh(pn)), rn), nil
			}
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				got := graphtest.Forward(t, build, dt, 1)
				if diff := cmp.Diff([]float64{tc.want}, got, cmpopts.EquateApprox(1e-5, 1e-5)); diff != "" {
					t.Errorf("%v loss (-want +got):\n%s", dt, diff)
				}
			}
			graphtest.CheckGrad(t, build, graphtest.Options{Seed: 1})
			graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 1})
		})
	}
}

func TestLayerNormParams(t *testing.T) {
	for _, tc := range []struct {
		name   string
		noBias bool
		want   []string
	}{
		{"bias", false, []string{"ln/scale", "ln/bias"}},
		{"no_bias", true, []string{"ln/scale"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := graph.NewScope(tensor.Float64, 1)
			if err != nil {
				t.Fatal(err)
			}
			ln, err := layers.NewLayerNorm(s.Sub("ln"), layers.LayerNormConfig{Dim: 3, NoBias: tc.noBias})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range ln.Params() {
				got = append(got, p.Name())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Params names (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, s.ParamNames()); diff != "" {
				t.Errorf("scope ParamNames (-want +got):\n%s", diff)
			}
			if got, want := ln.Config().Eps, 1e-5; got != want {
				t.Errorf("default Eps = %g, want %g", got, want)
			}
			scale, err := graph.Values(ln.Params()[0])
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]float64{1, 1, 1}, scale); diff != "" {
				t.Errorf("initial scale (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLayerNormConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  layers.LayerNormConfig
		want string // substring of the error
	}{
		{"zero_dim", layers.LayerNormConfig{}, "Dim = 0"},
		{"negative_dim", layers.LayerNormConfig{Dim: -2}, "Dim = -2"},
		{"negative_eps", layers.LayerNormConfig{Dim: 3, Eps: -1e-5}, "Eps = -1e-05"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := graph.NewScope(tensor.Float64, 1)
			if err != nil {
				t.Fatal(err)
			}
			_, err = layers.NewLayerNorm(s.Sub("blk").Sub("ln"), tc.cfg)
			if err == nil {
				t.Fatalf("NewLayerNorm(%+v) = nil error, want one containing %q", tc.cfg, tc.want)
			}
			for _, want := range []string{tc.want, `"blk/ln"`} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestLayerNormForwardErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dt    tensor.Dtype // dtype of the input
		shape tensor.Shape
		want  string
	}{
		{"last_dim", tensor.Float64, tensor.Shape{2, 3, 5}, "want (..., 4)"},
		{"transposed", tensor.Float64, tensor.Shape{4, 3}, "want (..., 4)"},
		{"vector", tensor.Float64, tensor.Shape{4}, "of rank >= 2"},
		{"dtype", tensor.Float32, tensor.Shape{2, 4}, "dtype float32, want float64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := graph.NewScope(tensor.Float64, 1)
			if err != nil {
				t.Fatal(err)
			}
			ln, err := layers.NewLayerNorm(s.Sub("blk").Sub("ln"), layers.DefaultLayerNormConfig(4))
			if err != nil {
				t.Fatal(err)
			}
			x := G.NewTensor(s.Graph(), tc.dt, len(tc.shape), G.WithShape(tc.shape...), G.WithName("x"))
			_, err = ln.Forward(x)
			if err == nil {
				t.Fatalf("Forward(%v %v) = nil error", tc.dt, tc.shape)
			}
			for _, want := range []string{tc.want, `layernorm "blk/ln"`} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
	t.Run("nil", func(t *testing.T) {
		s, _ := graph.NewScope(tensor.Float64, 1)
		ln, err := layers.NewLayerNorm(s.Sub("ln"), layers.DefaultLayerNormConfig(4))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ln.Forward(nil); err == nil {
			t.Error("Forward(nil) = nil error")
		}
	})
}

func ExampleLayerNorm() {
	s, err := graph.NewScope(graph.Float64, 1)
	if err != nil {
		panic(err)
	}
	ln, err := layers.NewLayerNorm(s.Sub("block0").Sub("ln1"), layers.DefaultLayerNormConfig(4))
	if err != nil {
		panic(err)
	}
	x, err := s.Input("x", tensor.Shape{2, 3, 4}) // (B, T, D)
	if err != nil {
		panic(err)
	}
	y, err := ln.Forward(x)
	if err != nil {
		panic(err)
	}
	fmt.Println(s.ParamNames())
	fmt.Println(y.Shape())
	// Output:
	// [block0/ln1/scale block0/ln1/bias]
	// (2, 3, 4)
}
