package graph

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// float is the set of element types a Scope supports.
type float interface{ float32 | float64 }

// dtypeOf returns the tensor dtype of T.
func dtypeOf[T float]() tensor.Dtype {
	var z T
	if _, ok := any(z).(float32); ok {
		return Float32
	}
	return Float64
}

// tolOf is the comparison tolerance for T.
func tolOf[T float]() float64 {
	if dtypeOf[T]() == Float32 {
		return 1e-5
	}
	return 1e-12
}

func approx(tol float64) cmp.Option { return cmpopts.EquateApprox(tol, tol) }

// linModel builds loss = a * sum((x W - y)^2) with x (2, 3) and y (2, 2)
// inputs, W (3, 2) and a scalar a parameters.
type linModel struct {
	s          *Scope
	w, a, x, y *G.Node
	loss       *G.Node
}

func newLinModel(t *testing.T, dt tensor.Dtype) *linModel {
	t.Helper()
	s, err := NewScope(dt, 1)
	if err != nil {
		t.Fatal(err)
	}
	m := &linModel{s: s}
	// W = [[1, 0], [0, 1], [1, -1]]; a = 0.5.
	m.w = must(s.Param("w", tensor.Shape{3, 2}, FromValues([]float64{1, 0, 0, 1, 1, -1})))
	m.a = must(s.Param("a", tensor.Shape{}, Constant(0.5)))
	m.x = must(s.Input("x", tensor.Shape{2, 3}))
	m.y = must(s.Input("y", tensor.Shape{2, 2}))
	d := G.Must(G.Sub(G.Must(G.Mul(m.x, m.w)), m.y))
	m.loss = G.Must(G.Mul(m.a, G.Must(G.Sum(G.Must(G.Square(d))))))
	return m
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// linRef computes the loss and gradients of linModel in plain Go.
func linRef(w []float64, a float64, x, y []float64) (loss float64, gw []float64, ga float64) {
	gw = make([]float64, 6)
	sum := 0.0
	for i := 0; i < 2; i++ {
		for j := 0; j < 2; j++ {
			r := -y[2*i+j]
			for k := 0; k < 3; k++ {
				r += x[3*i+k] * w[2*k+j]
			}
			sum += r * r
			for k := 0; k < 3; k++ {
				gw[2*k+j] += 2 * a * r * x[3*i+k]
			}
		}
	}
	return a * sum, gw, sum
}

func TestMachineGradients(t *testing.T) {
	t.Run("float32", testMachineGradients[float32])
	t.Run("float64", testMachineGradients[float64])
}

func testMachineGradients[T float](t *testing.T) {
	m := newLinModel(t, dtypeOf[T]())
	mach, err := NewMachine(m.s, m.loss, MachineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer mach.Close()
	if diff := cmp.Diff([]string{"w", "a"}, nodeNames(mach.Params())); diff != "" {
		t.Errorf("Params (-want +got):\n%s", diff)
	}
	w0 := []float64{1, 0, 0, 1, 1, -1}
	// Two different minibatches: gradients must be per batch, not
	// accumulated across runs.
	batches := []struct{ x, y []float64 }{
		{[]float64{1, 2, 3, -1, 0.5, 2}, []float64{0, 1, 2, -3}},
		{[]float64{0.5, -1, 2, 1, 1, 1}, []float64{1, 1, -1, 0.25}},
		{[]float64{1, 2, 3, -1, 0.5, 2}, []float64{0, 1, 2, -3}},
	}
	for i, b := range batches {
		if err := SetValue(m.x, b.x); err != nil {
			t.Fatal(err)
		}
		if err := SetValue(m.y, b.y); err != nil {
			t.Fatal(err)
		}
		if err := mach.Run(); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		wantLoss, wantGW, wantGA := linRef(w0, 0.5, b.x, b.y)
		loss := must(Scalar(m.loss))
		gw := must(GradValues(m.w))
		ga := must(GradValues(m.a))
		tol := tolOf[T]()
		if !cmp.Equal(loss, wantLoss, approx(tol)) {
			t.Errorf("batch %d: loss got %v, want %v", i, loss, wantLoss)
		}
		if diff := cmp.Diff(wantGW, gw, approx(tol)); diff != "" {
			t.Errorf("batch %d: dL/dw (-want +got):\n%s", i, diff)
		}
		if diff := cmp.Diff([]float64{wantGA}, ga, approx(tol)); diff != "" {
			t.Errorf("batch %d: dL/da (-want +got):\n%s", i, diff)
		}
		// Running never changes the parameters.
		if diff := cmp.Diff(w0, must(Values(m.w))); diff != "" {
			t.Errorf("batch %d: w changed by Run (-want +got):\n%s", i, diff)
		}
	}
}

func nodeNames(ns G.Nodes) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Name()
	}
	return out
}

func TestMachineValuesStayReadable(t *testing.T) {
	m := newLinModel(t, Float64)
	mach, err := NewMachine(m.s, m.loss, MachineOptions{NoGrad: true})
	if err != nil {
		t.Fatal(err)
	}
	if mach.HasGrad() || mach.Params() != nil {
		t.Errorf("NoGrad machine: HasGrad %v, Params %v", mach.HasGrad(), mach.Params())
	}
	must(0, SetValue(m.x, []float64{1, 2, 3, -1, 0.5, 2}))
	must(0, SetValue(m.y, []float64{0, 1, 2, -3}))
	if err := mach.Run(); err != nil {
		t.Fatal(err)
	}
	first := must(Scalar(m.loss))
	// Feeding new inputs does not disturb the values of the last run.
	must(0, SetValue(m.y, []float64{10, 10, 10, 10}))
	if got := must(Scalar(m.loss)); got != first {
		t.Errorf("loss changed before Run: got %v, want %v", got, first)
	}
	if err := mach.Run(); err != nil {
		t.Fatal(err)
	}
	want, _, _ := linRef([]float64{1, 0, 0, 1, 1, -1}, 0.5, []float64{1, 2, 3, -1, 0.5, 2}, []float64{10, 10, 10, 10})
	if got := must(Scalar(m.loss)); !cmp.Equal(got, want, approx(1e-12)) {
		t.Errorf("second run: loss got %v, want %v", got, want)
	}
	if err := mach.Close(); err != nil {
		t.Fatal(err)
	}
	if err := mach.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := mach.Run(); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Run after Close: got %v, want a closed error", err)
	}
	if got := must(Scalar(m.loss)); !cmp.Equal(got, want, approx(1e-12)) {
		t.Errorf("after Close: loss got %v, want %v", got, want)
	}
}

func TestMachineReusesGradients(t *testing.T) {
	m := newLinModel(t, Float64)
	x, y := []float64{1, 2, 3, -1, 0.5, 2}, []float64{0, 1, 2, -3}
	must(0, SetValue(m.x, x))
	must(0, SetValue(m.y, y))
	_, wantGW, _ := linRef([]float64{1, 0, 0, 1, 1, -1}, 0.5, x, y)
	for i := 0; i < 2; i++ {
		mach, err := NewMachine(m.s, m.loss, MachineOptions{})
		if err != nil {
			t.Fatalf("machine %d: %v", i, err)
		}
		if err := mach.Run(); err != nil {
			t.Fatalf("machine %d: %v", i, err)
		}
		if diff := cmp.Diff(wantGW, must(GradValues(m.w)), approx(1e-12)); diff != "" {
			t.Errorf("machine %d: dL/dw (-want +got):\n%s", i, diff)
		}
		mach.Close()
	}
	// An evaluation machine restricted to the loss computes no gradients.
	eval, err := NewMachine(m.s, m.loss, MachineOptions{NoGrad: true, Outputs: G.Nodes{m.loss}})
	if err != nil {
		t.Fatal(err)
	}
	must(0, SetValue(m.y, []float64{1, 1, 1, 1}))
	if err := eval.Run(); err != nil {
		t.Fatal(err)
	}
	want, _, _ := linRef([]float64{1, 0, 0, 1, 1, -1}, 0.5, x, []float64{1, 1, 1, 1})
	if got := must(Scalar(m.loss)); !cmp.Equal(got, want, approx(1e-12)) {
		t.Errorf("eval loss got %v, want %v", got, want)
	}
	if diff := cmp.Diff(wantGW, must(GradValues(m.w)), approx(1e-12)); diff != "" {
		t.Errorf("eval machine touched the gradients (-want +got):\n%s", diff)
	}
}

func TestMachineErrors(t *testing.T) {
	tests := []struct {
		name  string
		build func(t *testing.T) (*Scope, *G.Node, MachineOptions)
		want  string
	}{
		{
			name: "nil scope",
			build: func(t *testing.T) (*Scope, *G.Node, MachineOptions) {
				return nil, nil, MachineOptions{}
			},
			want: "scope is nil",
		},
		{
			name: "non-scalar loss",
			build: func(t *testing.T) (*Scope, *G.Node, MachineOptions) {
				m := newLinModel(t, Float64)
				return m.s, G.Must(G.Mul(m.x, m.w)), MachineOptions{}
			},
			want: "has shape (2, 2), want a scalar",
		},
		{
			name: "unused parameter",
			build: func(t *testing.T) (*Scope, *G.Node, MachineOptions) {
				m := newLinModel(t, Float64)
				must(m.s.Sub("head").Param("b", tensor.Shape{2}, nil))
				return m.s, m.loss, MachineOptions{}
			},
			want: `does not depend on parameter(s) ["head/b"]`,
		},
		{
			name: "parameter of another graph",
			build: func(t *testing.T) (*Scope, *G.Node, MachineOptions) {
				m := newLinModel(t, Float64)
				other := newLinModel(t, Float64)
				return m.s, m.loss, MachineOptions{Params: G.Nodes{other.w}}
			},
			want: "belongs to another graph",
		},
		{
			name: "loss of another graph",
			build: func(t *testing.T) (*Scope, *G.Node, MachineOptions) {
				return newLinModel(t, Float64).s, newLinModel(t, Float64).loss, MachineOptions{}
			},
			want: "loss",
		},
		{
			name: "computed node as parameter",
			build: func(t *testing.T) (*Scope, *G.Node, MachineOptions) {
				m := newLinModel(t, Float64)
				sq := G.Must(G.Square(m.w))
				loss := G.Must(G.Sum(sq))
				return m.s, loss, MachineOptions{Params: G.Nodes{sq}}
			},
			want: "is not a parameter",
		},
		{
			name: "second loss on the same graph",
			build: func(t *testing.T) (*Scope, *G.Node, MachineOptions) {
				m := newLinModel(t, Float64)
				if _, err := NewMachine(m.s, m.loss, MachineOptions{}); err != nil {
					t.Fatal(err)
				}
				return m.s, G.Must(G.Sum(G.Must(G.Square(m.w)))), MachineOptions{Params: G.Nodes{m.w}}
			},
			want: `parameter "w" already has a gradient for another loss`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, loss, opts := tc.build(t)
			_, err := NewMachine(s, loss, opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestMachineRunErrorNamesOp(t *testing.T) {
	m := newLinModel(t, Float64)
	mach, err := NewMachine(m.s, m.loss, MachineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Give x a (3, 2) shape behind Gorgonia's back: the matrix product
	// fails at run time.
	if err := m.x.Value().(*tensor.Dense).Reshape(3, 2); err != nil {
		t.Fatal(err)
	}
	err = mach.Run()
	if err == nil || !strings.Contains(err.Error(), "graph: run: op A × B") || !strings.Contains(err.Error(), "Shape mismatch") {
		t.Errorf("got %v, want an error naming the op A × B", err)
	}
}

// TestMachineForwardThenGrad runs a forward-only machine over a graph that
// already holds gradient nodes (so they run as ordinary nodes, without dual
// values), then the gradient machine: its gradients must be exact.
func TestMachineForwardThenGrad(t *testing.T) {
	m := newLinModel(t, Float64)
	x, y := []float64{1, 2, 3, -1, 0.5, 2}, []float64{0, 1, 2, -3}
	must(0, SetValue(m.x, x))
	must(0, SetValue(m.y, y))
	train, err := NewMachine(m.s, m.loss, MachineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fwd, err := NewMachine(m.s, m.loss, MachineOptions{NoGrad: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := fwd.Run(); err != nil {
			t.Fatal(err)
		}
	}
	_, wantGW, wantGA := linRef([]float64{1, 0, 0, 1, 1, -1}, 0.5, x, y)
	for i := 0; i < 3; i++ {
		if err := train.Run(); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantGW, must(GradValues(m.w)), approx(1e-12)); diff != "" {
			t.Errorf("run %d: dL/dw (-want +got):\n%s", i, diff)
		}
		if diff := cmp.Diff([]float64{wantGA}, must(GradValues(m.a)), approx(1e-12)); diff != "" {
			t.Errorf("run %d: dL/da (-want +got):\n%s", i, diff)
		}
	}
	if diff := cmp.Diff([]float64{1, 2, 3, -1, 0.5, 2}, must(Values(m.x))); diff != "" {
		t.Errorf("input x changed (-want +got):\n%s", diff)
	}
}
