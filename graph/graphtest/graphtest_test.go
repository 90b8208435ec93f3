package graphtest

import (
	"fmt"
	"hash"
	"hash/fnv"
	"math"
	"strings"
	"testing"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
)

// recorder is a testing.TB double that records failures instead of failing,
// so the harness itself can be shown to fail.
type recorder struct {
	testing.TB
	errs  []string
	fatal bool
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
	r.fatal = true
}
func (r *recorder) Logf(string, ...any) {}

// smooth builds loss = a * sum(tanh(x W)^2) + sum(W*W)/2 with x a fixed (4, 3)
// input, W a (3, 2) parameter and a a scalar parameter.
func smooth(s *graph.Scope) (*G.Node, error) {
	w, err := s.Sub("lin").Param("w", tensor.Shape{3, 2}, graph.Normal(0.7))
	if err != nil {
		return nil, err
	}
	a, err := s.Param("a", tensor.Shape{}, graph.Constant(1.3))
	if err != nil {
		return nil, err
	}
	x, err := s.Input("x", tensor.Shape{4, 3})
	if err != nil {
		return nil, err
	}
	if err := graph.SetValue(x, RandValues(s, 12)); err != nil {
		return nil, err
	}
	h := G.Must(G.Tanh(G.Must(G.Mul(x, w))))
	fit := G.Must(G.Sum(G.Must(G.Square(h))))
	reg := G.Must(G.Sum(G.Must(G.HadamardProd(w, w))))
	half := G.NewConstant(half(s.Dtype()))
	return G.Add(G.Must(G.Mul(a, fit)), G.Must(G.Mul(half, reg)))
}

func half(dt tensor.Dtype) any {
	if dt == tensor.Float32 {
		return float32(0.5)
	}
	return 0.5
}

func TestCheckGradPasses(t *testing.T) {
	for _, tc := range []struct {
		name string
		dt   tensor.Dtype
		opts Options
		tol  float64
	}{
		{"float64/auto", tensor.Float64, Options{Seed: 1}, 1e-6},
		{"float64/central", tensor.Float64, Options{Seed: 1, Formula: Central}, 1e-6},
		{"float64/central5", tensor.Float64, Options{Seed: 2, Formula: Central5, Step5: 1e-3}, 1e-6},
		{"float64/wrt", tensor.Float64, Options{Seed: 3, Wrt: []string{"lin/w"}}, 1e-6},
		{"float64/subset", tensor.Float64, Options{Seed: 4, MaxElems: 3}, 1e-6},
		{"float32", tensor.Float32, Options{Seed: 1}, 1e-3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckGradDtype(t, tc.dt, smooth, tc.opts)
			t.Logf("max error %.3g", got)
			if !(got < tc.tol) {
				t.Errorf("max error %.3g, want < %.3g", got, tc.tol)
			}
		})
	}
	// The wrappers pick the dtype.
	if e := CheckGrad(t, smooth, Options{Seed: 5}); e >= 1e-6 {
		t.Errorf("CheckGrad: max error %.3g", e)
	}
	if e := CheckGrad32(t, smooth, Options{Seed: 5}); e >= 1e-3 {
		t.Errorf("CheckGrad32: max error %.3g", e)
	}
}

// scaleOp computes y = k*x elementwise but claims the gradient dk*grad, so a
// dk different from k is a deliberately wrong symbolic gradient.
type scaleOp struct{ k, dk float64 }

func (op scaleOp) Arity() int { return 1 }
func (op scaleOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}
func (op scaleOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return in[0].(tensor.Shape).Clone(), nil
}
func (op scaleOp) Do(vs ...G.Value) (G.Value, error) {
	x := vs[0].(tensor.Tensor)
	if x.Dtype() == tensor.Float32 {
		return tensor.Mul(x, float32(op.k))
	}
	return tensor.Mul(x, op.k)
}
func (op scaleOp) ReturnsPtr() bool      { return false }
func (op scaleOp) CallsExtern() bool     { return false }
func (op scaleOp) OverwritesInput() int  { return -1 }
func (op scaleOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op scaleOp) String() string        { return fmt.Sprintf("scale(%v,%v)", op.k, op.dk) }
func (op scaleOp) DiffWRT(int) []bool    { return []bool{true} }
func (op scaleOp) Hashcode() uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}
func (op scaleOp) SymDiff(_ G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	var dk any = op.dk
	if grad.Dtype() == tensor.Float32 {
		dk = float32(op.dk)
	}
	g, err := G.Mul(grad, G.NewConstant(dk))
	return G.Nodes{g}, err
}

// scaled builds loss = sum(scale(w)^2) for a (2, 3) parameter w.
func scaled(op scaleOp) BuildFunc {
	return func(s *graph.Scope) (*G.Node, error) {
		w, err := s.Sub("bad").Param("w", tensor.Shape{2, 3}, graph.Normal(1))
		if err != nil {
			return nil, err
		}
		y, err := G.ApplyOp(op, w)
		if err != nil {
			return nil, err
		}
		return G.Sum(G.Must(G.Square(y)))
	}
}

func TestCheckGradCatchesWrongGradient(t *testing.T) {
	for _, tc := range []struct {
		name    string
		op      scaleOp
		dt      tensor.Dtype
		wantErr bool
	}{
		{"right/float64", scaleOp{k: 2, dk: 2}, tensor.Float64, false},
		{"right/float32", scaleOp{k: 2, dk: 2}, tensor.Float32, false},
		// A 1% error in the gradient: far above both tolerances.
		{"wrong1pct/float64", scaleOp{k: 2, dk: 2.02}, tensor.Float64, true},
		{"wrong1pct/float32", scaleOp{k: 2, dk: 2.02}, tensor.Float32, true},
		// 1e-5 relative: caught in float64 only.
		{"wrong1e-5/float64", scaleOp{k: 2, dk: 2 * (1 + 1e-5)}, tensor.Float64, true},
		{"wrong1e-5/float32", scaleOp{k: 2, dk: 2 * (1 + 1e-5)}, tensor.Float32, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			got := CheckGradDtype(r, tc.dt, scaled(tc.op), Options{Seed: 7})
			if r.fatal {
				t.Fatalf("unexpected fatal failure: %v", r.errs)
			}
			if gotErr := len(r.errs) > 0; gotErr != tc.wantErr {
				t.Fatalf("reported %d mismatches (%v), want failure %v; max error %.3g", len(r.errs), r.errs, tc.wantErr, got)
			}
			if tc.wantErr {
				// Every element is wrong; each message names the parameter
				// and shows both values.
				if len(r.errs) != 6 {
					t.Errorf("got %d messages, want 6: %v", len(r.errs), r.errs)
				}
				for _, msg := range r.errs {
					if !strings.Contains(msg, "bad/w[") || !strings.Contains(msg, "symbolic") || !strings.Contains(msg, "finite difference") {
						t.Errorf("message %q lacks the parameter or the values", msg)
					}
				}
			}
		})
	}
}

// TestCheckGradKink checks sum(relu(w)) with w[0] = 5e-4 next to the kink:
// the five-point stencil with h = 1e-3 straddles it (estimate 0.79 instead
// of 1), the central difference with h = 1e-6 does not, and Auto falls back
// to it.
func TestCheckGradKink(t *testing.T) {
	build := func(s *graph.Scope) (*G.Node, error) {
		w, err := s.Param("w", tensor.Shape{3}, graph.FromValues([]float64{5e-4, 0.7, -0.4}))
		if err != nil {
			return nil, err
		}
		return G.Sum(G.Must(G.Rectify(w)))
	}
	for _, tc := range []struct {
		formula Formula
		wantErr bool
	}{
		{Auto, false},
		{Central, false},
		{Central5, true},
	} {
		r := &recorder{TB: t}
		CheckGrad(r, build, Options{Formula: tc.formula})
		if r.fatal || (len(r.errs) > 0) != tc.wantErr {
			t.Errorf("formula %d: messages %v, want failure %v", tc.formula, r.errs, tc.wantErr)
		}
		if tc.wantErr && (len(r.errs) != 1 || !strings.Contains(r.errs[0], "w[0]") || !strings.Contains(r.errs[0], "0.79")) {
			t.Errorf("formula %d: messages %v, want one about w[0] with the estimate 0.79", tc.formula, r.errs)
		}
	}
}

func TestCheckGradMaxReports(t *testing.T) {
	r := &recorder{TB: t}
	CheckGrad(r, scaled(scaleOp{k: 1, dk: 3}), Options{Seed: 1, MaxReports: 2})
	// 2 element reports plus one summary line for the other 4.
	if len(r.errs) != 3 || !strings.Contains(r.errs[2], "4 more") {
		t.Errorf("got %v, want 2 reports and a '4 more' line", r.errs)
	}
}

func TestCheckGradFatal(t *testing.T) {
	calls := 0
	for _, tc := range []struct {
		name  string
		build BuildFunc
		opts  Options
		want  string
	}{
		{"build error", func(*graph.Scope) (*G.Node, error) { return nil, fmt.Errorf("boom") }, Options{}, "boom"},
		{"nil node", func(*graph.Scope) (*G.Node, error) { return nil, nil }, Options{}, "nil node"},
		{"must panic", func(s *graph.Scope) (*G.Node, error) {
			w, _ := s.Param("w", tensor.Shape{2, 3}, nil)
			v, _ := s.Param("v", tensor.Shape{2, 3}, nil)
			return G.Must(G.Mul(w, v)), nil // (2,3)x(2,3) matmul: shape error
		}, Options{}, "build"},
		{"not scalar", func(s *graph.Scope) (*G.Node, error) {
			return s.Param("w", tensor.Shape{2}, nil)
		}, Options{}, "want a scalar"},
		{"no params", func(s *graph.Scope) (*G.Node, error) {
			x, _ := s.Input("x", tensor.Shape{2})
			return G.Sum(x)
		}, Options{}, "no parameters"},
		{"unknown wrt", smooth, Options{Wrt: []string{"lin/q"}}, `"lin/q"`},
		{"bad step", smooth, Options{Step: -1}, "Options.Step"},
		{"bad step5", smooth, Options{Step5: math.Inf(1)}, "Options.Step5"},
		{"bad formula", smooth, Options{Formula: 7}, "Options.Formula"},
		{"nondeterministic", func(s *graph.Scope) (*G.Node, error) {
			calls++ // a different initial value on every build
			w, err := s.Param("w", tensor.Shape{2}, graph.Constant(float64(calls)))
			if err != nil {
				return nil, err
			}
			return G.Sum(G.Must(G.Square(w)))
		}, Options{}, "not deterministic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			got := CheckGrad(r, tc.build, tc.opts)
			if !r.fatal || !math.IsInf(got, 1) {
				t.Fatalf("fatal = %v, result %v; want a fatal failure and +Inf", r.fatal, got)
			}
			if !strings.Contains(strings.Join(r.errs, "\n"), tc.want) {
				t.Errorf("messages %q do not mention %q", r.errs, tc.want)
			}
		})
	}
}

func TestRelErrAndCompare(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		name        string
		a, b, floor float64
		want        float64
	}{
		{"equal", 3, 3, 1e-4, 0},
		{"relative", 1, 1.1, 1e-4, 0.1 / 1.1},
		{"sign", 1, -1, 1e-4, 2},
		{"floor", 1e-6, 2e-6, 1e-4, 1e-6 / 1e-4},
		{"zeros", 0, 0, 0, 0},
		{"nan", math.NaN(), 1, 1e-4, inf},
		{"inf vs finite", inf, 1, 1e-4, inf},
		{"same inf", inf, inf, 1e-4, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := relErr(tc.a, tc.b, tc.floor); math.Abs(got-tc.want) > 1e-15 && got != tc.want {
				t.Errorf("relErr(%v, %v, %v) = %v, want %v", tc.a, tc.b, tc.floor, got, tc.want)
			}
		})
	}

	sym := []float64{1, 2, 3, 1e-9, 5}
	fd := []float64{1, 2.001, 3, 0, math.NaN()}
	m, bad := compare(sym, fd, 1e-4, 1e-6)
	if !math.IsInf(m, 1) {
		t.Errorf("max error %v, want +Inf (NaN element)", m)
	}
	var pos []int
	for _, b := range bad {
		pos = append(pos, b.pos)
	}
	// Element 1 differs relatively by 5e-4, element 3 by 1e-9 absolute, which
	// the floor turns into 1e-9/1e-4 = 1e-5 > 1e-6, and element 4 is NaN.
	if fmt.Sprint(pos) != "[1 3 4]" {
		t.Errorf("flagged positions %v, want [1 3 4]", pos)
	}
}

func TestElems(t *testing.T) {
	if got := elems(4, 0, 1, 0); fmt.Sprint(got) != "[0 1 2 3]" {
		t.Errorf("all elements: got %v", got)
	}
	if got := elems(4, 9, 1, 0); len(got) != 4 {
		t.Errorf("MaxElems above size: got %v", got)
	}
	a, b := elems(100, 10, 3, 2), elems(100, 10, 3, 2)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("subset not reproducible: %v vs %v", a, b)
	}
	seen := map[int]bool{}
	for i, v := range a {
		if v < 0 || v >= 100 || seen[v] || (i > 0 && v <= a[i-1]) {
			t.Fatalf("subset %v is not a sorted set of distinct indices in [0,100)", a)
		}
		seen[v] = true
	}
	if len(a) != 10 {
		t.Errorf("subset has %d elements, want 10", len(a))
	}
	if c := elems(100, 10, 3, 3); fmt.Sprint(c) == fmt.Sprint(a) {
		t.Errorf("two parameters got the same subset %v", c)
	}
}

func TestUnravel(t *testing.T) {
	if got := unravel(23, tensor.Shape{2, 3, 4}); fmt.Sprint(got) != "[1 2 3]" {
		t.Errorf("unravel(23, (2,3,4)) = %v, want [1 2 3]", got)
	}
	if got := unravel(0, tensor.Shape{}); len(got) != 0 {
		t.Errorf("unravel of a scalar = %v, want []", got)
	}
}

// affine builds y = x W + c for hand-set x (2, 2) and W (2, 2), c a (2, 2)
// constant.
func affine(s *graph.Scope) (*G.Node, error) {
	w, err := s.Param("w", tensor.Shape{2, 2}, graph.FromValues([]float64{1, 2, 3, 4}))
	if err != nil {
		return nil, err
	}
	x, err := s.Const("x", tensor.Shape{2, 2}, []float64{1, 0.1, -1, 0.5})
	if err != nil {
		return nil, err
	}
	c, err := s.Const("c", tensor.Shape{2, 2}, []float64{0.25, 0, 0, 1e-3})
	if err != nil {
		return nil, err
	}
	return G.Add(G.Must(G.Mul(x, w)), c)
}

func TestForward(t *testing.T) {
	// x W = [[1+0.3, 2+0.4], [-1+1.5, -2+2]] = [[1.3, 2.4], [0.5, 0]].
	want := []float64{1.3 + 0.25, 2.4, 0.5, 1e-3}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			got := Forward(t, affine, dt, 1)
			tol := 1e-15
			if dt == tensor.Float32 {
				tol = 1e-6
			}
			AllClose(t, "x W + c", got, want, tol)
		})
	}
	f64 := Forward(t, smoothOut, tensor.Float64, 9)
	f32 := Forward(t, smoothOut, tensor.Float32, 9)
	if e := AllClose(t, "float32 vs float64", f32, f64, 1e-5); e == 0 {
		t.Errorf("float32 and float64 outputs are identical: float32 was not used")
	}
}

// smoothOut is smooth's (4, 2) hidden layer, for Forward.
func smoothOut(s *graph.Scope) (*G.Node, error) {
	w, err := s.Param("w", tensor.Shape{3, 2}, graph.Normal(0.7))
	if err != nil {
		return nil, err
	}
	x, err := s.Input("x", tensor.Shape{4, 3})
	if err != nil {
		return nil, err
	}
	if err := graph.SetValue(x, RandValues(s, 12)); err != nil {
		return nil, err
	}
	return G.Tanh(G.Must(G.Mul(x, w)))
}

func TestForwardFatal(t *testing.T) {
	r := &recorder{TB: t}
	if got := Forward(r, func(*graph.Scope) (*G.Node, error) { return nil, fmt.Errorf("boom") }, tensor.Float64, 1); got != nil || !r.fatal {
		t.Errorf("got %v, fatal %v; want nil and a fatal failure", got, r.fatal)
	}
}

func TestGradients(t *testing.T) {
	// loss = sum(W∘W) + a^2 with W = [1 2 3], a = -1.5:
	// dL/dW = 2W, dL/da = 2a, L = 14 + 2.25.
	build := func(s *graph.Scope) (*G.Node, error) {
		w, err := s.Param("w", tensor.Shape{3}, graph.FromValues([]float64{1, 2, 3}))
		if err != nil {
			return nil, err
		}
		a, err := s.Param("a", tensor.Shape{}, graph.Constant(-1.5))
		if err != nil {
			return nil, err
		}
		return G.Add(G.Must(G.Sum(G.Must(G.HadamardProd(w, w)))), G.Must(G.Mul(a, a)))
	}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			loss, grads := Gradients(t, build, dt, 1)
			AllClose(t, "loss", []float64{loss}, []float64{16.25}, 1e-7)
			AllClose(t, "dL/dw", grads["w"], []float64{2, 4, 6}, 1e-7)
			AllClose(t, "dL/da", grads["a"], []float64{-3}, 1e-7)
			if len(grads) != 2 {
				t.Errorf("got gradients for %d parameters, want 2", len(grads))
			}
		})
	}
}

func TestAllClose(t *testing.T) {
	r := &recorder{TB: t}
	// tol 1e-3 relative to max(|.|, 1): 1000 vs 1000.5 passes (5e-4),
	// 0.01 vs 0.0125 fails (2.5e-3 absolute).
	m := AllClose(r, "v", []float64{1000.5, 0.01}, []float64{1000, 0.0125}, 1e-3)
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "v[1]") {
		t.Errorf("got messages %v, want one about v[1]", r.errs)
	}
	if math.Abs(m-2.5e-3) > 1e-12 {
		t.Errorf("max error %v, want 2.5e-3", m)
	}
	r = &recorder{TB: t}
	AllClose(r, "v", []float64{1}, []float64{1, 2}, 1)
	if !r.fatal {
		t.Errorf("length mismatch was not fatal")
	}
}
