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

// ffnCase is one feed-forward configuration; the data come from ffnDraw.
type ffnCase struct {
	name         string
	act          string
	shape        tensor.Shape // input shape (..., DIn)
	hidden, dOut int
	wantShape    tensor.Shape // output shape (..., DOut)
}

var ffnCases = []ffnCase{
	{name: "relu_BTD", act: "relu", shape: tensor.Shape{2, 3, 4}, hidden: 5, dOut: 3, wantShape: tensor.Shape{2, 3, 3}},
	{name: "relu_BT_D", act: "relu", shape: tensor.Shape{6, 4}, hidden: 5, dOut: 3, wantShape: tensor.Shape{6, 3}},
	{name: "gelu_BTD", act: "gelu", shape: tensor.Shape{2, 3, 4}, hidden: 5, dOut: 3, wantShape: tensor.Shape{2, 3, 3}},
	{name: "gelu_BT_D", act: "gelu", shape: tensor.Shape{6, 4}, hidden: 5, dOut: 3, wantShape: tensor.Shape{6, 3}},
	{name: "one_row", act: "gelu", shape: tensor.Shape{1, 4}, hidden: 5, dOut: 3, wantShape: tensor.Shape{1, 3}},
	{name: "one_token", act: "relu", shape: tensor.Shape{1, 1, 4}, hidden: 5, dOut: 3, wantShape: tensor.Shape{1, 1, 3}},
	{name: "identity_BTD", act: "identity", shape: tensor.Shape{2, 3, 4}, hidden: 5, dOut: 3, wantShape: tensor.Shape{2, 3, 3}},
	{name: "default_act_square", act: "", shape: tensor.Shape{2, 2, 4}, hidden: 0, dOut: 0, wantShape: tensor.Shape{2, 2, 4}},
}

// ffnData holds the input, parameters and loss weights of a case.
type ffnData struct {
	dIn, hidden, dOut int
	x, w1, b1, w2, b2 []float64
	r                 []float64 // loss weights, one per output element
}

// ffnDraw draws the data of c from a PCG generator seeded (1, 1): x ~ N(0, 1)
// and every parameter ~ N(0, 0.5²), so that hidden units fall on both sides
// of the ReLU kink.
func ffnDraw(c ffnCase) ffnData {
	rng := rand.New(rand.NewPCG(1, 1))
	draw := func(n int, std float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = std * rng.NormFloat64()
		}
		return out
	}
	d := ffnData{dIn: c.shape[len(c.shape)-1], hidden: c.hidden, dOut: c.dOut}
	if d.hidden == 0 {
		d.hidden = 4 * d.dIn
	}
	if d.dOut == 0 {
		d.dOut = d.dIn
	}
	n := c.shape.TotalSize() / d.dIn
	d.x = draw(n*d.dIn, 1)
	d.w1, d.b1 = draw(d.dIn*d.hidden, 0.5), draw(d.hidden, 0.5)
	d.w2, d.b2 = draw(d.hidden*d.dOut, 0.5), draw(d.dOut, 0.5)
	d.r = draw(n*d.dOut, 1)
	return d
}

// ffnGELU is the tanh-approximate GELU in its textbook (tanh) form.
func ffnGELU(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

// ffnReference computes act(x W1 + b1) W2 + b2 in plain Go and returns the
// output and the smallest |pre-activation|.
func ffnReference(d ffnData, act string) (y []float64, minAbsPre float64) {
	n := len(d.x) / d.dIn
	y = make([]float64, n*d.dOut)
	minAbsPre = math.Inf(1)
	h := make([]float64, d.hidden)
	for row := range n {
		for j := range d.hidden {
			a := d.b1[j]
			for i := range d.dIn {
				a += d.x[row*d.dIn+i] * d.w1[i*d.hidden+j]
			}
			minAbsPre = math.Min(minAbsPre, math.Abs(a))
			switch act {
			case "relu":
				h[j] = math.Max(a, 0)
			case "gelu", "":
				h[j] = ffnGELU(a)
			default:
				h[j] = a
			}
		}
		for k := range d.dOut {
			v := d.b2[k]
			for j := range d.hidden {
				v += h[j] * d.w2[j*d.dOut+k]
			}
			y[row*d.dOut+k] = v
		}
	}
	return y, minAbsPre
}

// ffnNew builds the layer of c under "blk/ffn" with the parameters of d.
func ffnNew(s *graph.Scope, c ffnCase, d ffnData) (*layers.FeedForward, error) {
	f, err := layers.NewFeedForward(s.Sub("blk").Sub("ffn"), layers.FeedForwardConfig{
		DIn: d.dIn, Hidden: c.hidden, DOut: c.dOut, Activation: c.act,
	})
	if err != nil {
		return nil, err
	}
	for i, v := range [][]float64{d.w1, d.b1, d.w2, d.b2} {
		if err := graph.SetValue(f.Params()[i], v); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// ffnBuild returns the output of the layer (asParam false; the input is an
// Input node) or the loss Σ y ⊙ r with the input a parameter "x".
func ffnBuild(c ffnCase, asParam bool) graphtest.BuildFunc {
	d := ffnDraw(c)
	return func(s *graph.Scope) (*G.Node, error) {
		f, err := ffnNew(s, c, d)
		if err != nil {
			return nil, err
		}
		var x *G.Node
		if asParam {
			x, err = s.Param("x", c.shape, graph.FromValues(d.x))
		} else if x, err = s.Input("x", c.shape); err == nil {
			err = graph.SetValue(x, d.x)
		}
		if err != nil {
			return nil, err
		}
		y, err := f.Forward(x)
		if err != nil {
			return nil, err
		}
		if !y.Shape().Eq(c.wantShape) {
			return nil, fmt.Errorf("output shape %v, want %v", y.Shape(), c.wantShape)
		}
		if !asParam {
			return y, nil
		}
		r, err := s.Const("r", c.wantShape, d.r)
		if err != nil {
			return nil, err
		}
		return G.Sum(G.Must(G.HadamardProd(y, r)))
	}
}

func TestFeedForwardForward(t *testing.T) {
	for _, c := range ffnCases {
		t.Run(c.name, func(t *testing.T) {
			want, _ := ffnReference(ffnDraw(c), c.act)
			got := map[string][]float64{}
			for _, tc := range []struct {
				dt  tensor.Dtype
				tol float64
			}{
				{tensor.Float64, 1e-12},
				{tensor.Float32, 1e-5},
			} {
				got[tc.dt.String()] = graphtest.Forward(t, ffnBuild(c, false), tc.dt, 1)
				if diff := cmp.Diff(want, got[tc.dt.String()], cmpopts.EquateApprox(tc.tol, tc.tol)); diff != "" {
					t.Errorf("%v: feed-forward mismatch against plain Go (-want +got):\n%s", tc.dt, diff)
				}
			}
			if diff := cmp.Diff(got["float64"], got["float32"], cmpopts.EquateApprox(1e-5, 1e-5)); diff != "" {
				t.Errorf("float32 disagrees with float64 (-f64 +f32):\n%s", diff)
			}
		})
	}
}

func TestFeedForwardGrad(t *testing.T) {
	for _, c := range ffnCases {
		t.Run(c.name, func(t *testing.T) {
			if c.act == "relu" {
				// Finite differences across the ReLU kink are meaningless: the
				// perturbations (1e-6 on x or W1, and float32 rounding) move
				// pre-activations by far less than this margin.
				if _, m := ffnReference(ffnDraw(c), c.act); m < 1e-3 {
					t.Fatalf("a pre-activation is %.3g from the ReLU kink; change the data", m)
				}
			}
			m64 := graphtest.CheckGrad(t, ffnBuild(c, true), graphtest.Options{Seed: 1})
			m32 := graphtest.CheckGrad32(t, ffnBuild(c, true), graphtest.Options{Seed: 1})
			t.Logf("max error: float64 %.3g, float32 %.3g", m64, m32)
		})
	}
}

// TestFeedForwardInputUntouched checks that the layer leaves the memory of
// its input alone when the input is an intermediate node read again later:
// a residual h + ffn(h), and ffn of a reshape (which shares memory) of h.
func TestFeedForwardInputUntouched(t *testing.T) {
	c := ffnCase{act: "gelu", shape: tensor.Shape{2, 3, 4}, hidden: 5, dOut: 4}
	d := ffnDraw(c)
	h := make([]float64, len(d.x))
	for i, v := range d.x {
		h[i] = math.Tanh(v)
	}
	dh := d
	dh.x = h
	y, _ := ffnReference(dh, c.act)
	for _, tc := range []struct {
		name string
		loss func(f *layers.FeedForward, h, r *G.Node) *G.Node
		want float64
	}{
		{
			name: "residual", // Σ (h + ffn(h)) ⊙ r
			loss: func(f *layers.FeedForward, h, r *G.Node) *G.Node {
				return G.Must(G.Sum(G.Must(G.HadamardProd(G.Must(G.Add(h, G.Must(f.Forward(h)))), r))))
			},
			want: func() (sum float64) {
				for i := range h {
					sum += (h[i] + y[i]) * d.r[i]
				}
				return sum
			}(),
		},
		{
			name: "reshaped", // Σ ffn(reshape(h)) ⊙ r + Σ h ⊙ h
			loss: func(f *layers.FeedForward, h, r *G.Node) *G.Node {
				a := G.Must(G.Reshape(h, tensor.Shape{6, 4})) // (B*T, D), shares h's memory
				out := G.Must(G.Reshape(G.Must(f.Forward(a)), c.shape))
				l1 := G.Must(G.Sum(G.Must(G.HadamardProd(out, r))))
				return G.Must(G.Add(l1, G.Must(G.Sum(G.Must(G.Square(h))))))
			},
			want: func() (sum float64) {
				for i := range h {
					sum += y[i]*d.r[i] + h[i]*h[i]
				}
				return sum
			}(),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			build := func(s *graph.Scope) (*G.Node, error) {
				f, err := ffnNew(s, c, d)
				if err != nil {
					return nil, err
				}
				p, err := s.Param("p", c.shape, graph.FromValues(d.x))
				if err != nil {
					return nil, err
				}
				r, err := s.Const("r", c.shape, d.r)
				if err != nil {
					return nil, err
				}
				return tc.loss(f, G.Must(G.Tanh(p)), r), nil
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

// TestFeedForwardGELU checks the activation alone (a 1-1-1 network with unit
// weights and zero biases, so y = gelu(x)) over a wide range, including
// arguments where the sigmoid saturates, and that its gradient stays finite.
func TestFeedForwardGELU(t *testing.T) {
	xs := []float64{-60, -8, -2.5, -1, -0.1, 0, 0.1, 1, 2.5, 8, 60}
	want := make([]float64, len(xs))
	for i, x := range xs {
		want[i] = ffnGELU(x)
	}
	build := func(s *graph.Scope) (*G.Node, error) {
		f, err := layers.NewFeedForward(s.Sub("ffn"), layers.FeedForwardConfig{
			DIn: 1, Hidden: 1, DOut: 1, Activation: layers.ActivationGELU, WInit: graph.Ones(),
		})
		if err != nil {
			return nil, err
		}
		x, err := s.Param("x", tensor.Shape{len(xs), 1}, graph.FromValues(xs))
		if err != nil {
			return nil, err
		}
		return f.Forward(x)
	}
	for _, tc := range []struct {
		dt  tensor.Dtype
		tol float64
	}{
		{tensor.Float64, 1e-12},
		{tensor.Float32, 1e-6},
	} {
		got := graphtest.Forward(t, build, tc.dt, 1)
		if diff := cmp.Diff(want, got, cmpopts.EquateApprox(tc.tol, tc.tol)); diff != "" {
			t.Errorf("%v gelu (-want +got):\n%s", tc.dt, diff)
		}
		loss := func(s *graph.Scope) (*G.Node, error) {
			y, err := build(s)
			if err != nil {
				return nil, err
			}
			return G.Sum(y)
		}
		_, grads := graphtest.Gradients(t, loss, tc.dt, 1)
		if !graph.AllFinite(grads["x"]) {
			t.Errorf("%v: dgelu/dx = %v, want finite", tc.dt, grads["x"])
		}
	}
}

func TestFeedForwardDefaults(t *testing.T) {
	s, _ := graph.NewScope(tensor.Float64, 1)
	f, err := layers.NewFeedForward(s.Sub("ffn"), layers.FeedForwardConfig{DIn: 3})
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.Config()
	if cfg.Hidden != 12 || cfg.DOut != 3 || cfg.Activation != layers.ActivationGELU || cfg.WInit == nil || cfg.BInit == nil {
		t.Errorf("Config() = %+v, want Hidden 12, DOut 3, Activation gelu and initialisers filled in", cfg)
	}
	var names []string
	var shapes []string
	for _, p := range f.Params() {
		names = append(names, p.Name())
		shapes = append(shapes, fmt.Sprint(p.Shape()))
	}
	if diff := cmp.Diff([]string{"ffn/w1", "ffn/b1", "ffn/w2", "ffn/b2"}, names); diff != "" {
		t.Errorf("Params names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"(3, 12)", "(12)", "(12, 3)", "(3)"}, shapes); diff != "" {
		t.Errorf("Params shapes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(names, s.ParamNames()); diff != "" {
		t.Errorf("scope ParamNames (-Params +scope):\n%s", diff)
	}
	b1, err := graph.Values(f.Params()[1])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(make([]float64, 12), b1); diff != "" {
		t.Errorf("initial b1 (-want +got):\n%s", diff)
	}
	def := layers.DefaultFeedForwardConfig(3)
	if def.Hidden != cfg.Hidden || def.DOut != cfg.DOut || def.Activation != cfg.Activation {
		t.Errorf("DefaultFeedForwardConfig(3) = %+v, disagrees with the zero-value defaults %+v", def, cfg)
	}
}

func TestFeedForwardConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  layers.FeedForwardConfig
		want string
	}{
		{"zero_din", layers.FeedForwardConfig{Hidden: 4, DOut: 2}, "DIn = 0"},
		{"negative_din", layers.FeedForwardConfig{DIn: -3}, "DIn = -3"},
		{"negative_hidden", layers.FeedForwardConfig{DIn: 3, Hidden: -1}, "Hidden = -1"},
		{"negative_dout", layers.FeedForwardConfig{DIn: 3, DOut: -2}, "DOut = -2"},
		{"unknown_activation", layers.FeedForwardConfig{DIn: 3, Activation: "tanh"}, `Activation = "tanh"`},
		{"activation_case", layers.FeedForwardConfig{DIn: 3, Activation: "ReLU"}, `Activation = "ReLU"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := graph.NewScope(tensor.Float64, 1)
			_, err := layers.NewFeedForward(s.Sub("blk").Sub("ffn"), tc.cfg)
			if err == nil {
				t.Fatalf("NewFeedForward(%+v) = nil error", tc.cfg)
			}
			for _, want := range []string{tc.want, `feed-forward "blk/ffn"`} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestFeedForwardForwardErrors(t *testing.T) {
	s, _ := graph.NewScope(tensor.Float64, 1)
	f, err := layers.NewFeedForward(s.Sub("blk").Sub("ffn"), layers.FeedForwardConfig{DIn: 4, Hidden: 8, DOut: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		x    *G.Node
		want string
	}{
		{"nil", nil, "input is nil"},
		{"last_dim", G.NewTensor(s.Graph(), tensor.Float64, 3, G.WithShape(2, 3, 5), G.WithName("x1")), "want (..., 4)"},
		{"transposed", G.NewMatrix(s.Graph(), tensor.Float64, G.WithShape(4, 6), G.WithName("x2")), "want (..., 4)"},
		{"scalar", G.NewScalar(s.Graph(), tensor.Float64, G.WithName("x3")), "want (..., 4)"},
		{"vector", G.NewVector(s.Graph(), tensor.Float64, G.WithShape(4), G.WithName("x5")), "of rank >= 2"},
		{"dtype", G.NewMatrix(s.Graph(), tensor.Float32, G.WithShape(6, 4), G.WithName("x4")), "dtype float32, want float64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.Forward(tc.x)
			if err == nil {
				t.Fatal("Forward = nil error")
			}
			for _, want := range []string{tc.want, `feed-forward "blk/ffn"`} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func ExampleFeedForward() {
	s, err := graph.NewScope(graph.Float32, 1)
	if err != nil {
		panic(err)
	}
	ffn, err := layers.NewFeedForward(s.Sub("block0").Sub("mlp"), layers.DefaultFeedForwardConfig(8))
	if err != nil {
		panic(err)
	}
	x, err := s.Input("x", tensor.Shape{2, 5, 8}) // (B, T, D)
	if err != nil {
		panic(err)
	}
	y, err := ffn.Forward(x)
	if err != nil {
		panic(err)
	}
	for _, p := range ffn.Params() {
		fmt.Println(p.Name(), p.Shape())
	}
	fmt.Println(y.Shape())
	// Output:
	// block0/mlp/w1 (8, 32)
	// block0/mlp/b1 (32)
	// block0/mlp/w2 (32, 8)
	// block0/mlp/b2 (8)
	// (2, 5, 8)
}
