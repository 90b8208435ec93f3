package graph_test

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// hostModel is a small graph through the op kinds the host executor
// treats differently: gdattn ops that write into their previous buffer
// (MatMul, Slice, SoftMax and their gradients), a reshape bound as a view,
// Gorgonia's elementwise ops (UsePreallocDo), sums, constants, and an
// output that is a view of an intermediate node.
type hostModel struct {
	s             *graph.Scope
	x, w, v, loss *G.Node
	out           *G.Node // (4, 3, 6): a reshape of an intermediate product
}

func newHostModel(t *testing.T, dt tensor.Dtype) *hostModel {
	t.Helper()
	s, err := graph.NewScope(dt, 7)
	if err != nil {
		t.Fatal(err)
	}
	m := &hostModel{s: s}
	if m.x, err = s.Input("x", tensor.Shape{4, 3, 5}); err != nil {
		t.Fatal(err)
	}
	if m.w, err = s.Param("w", tensor.Shape{5, 6}, graph.Normal(0.5)); err != nil {
		t.Fatal(err)
	}
	if m.v, err = s.Param("v", tensor.Shape{6, 6}, graph.Normal(0.5)); err != nil {
		t.Fatal(err)
	}
	x2 := G.Must(ops.Reshape(m.x, tensor.Shape{12, 5}))
	h := G.Must(ops.MatMul(x2, m.w, false, false))              // (12, 6)
	m.out = G.Must(ops.Reshape(h, tensor.Shape{4, 3, 6}))       // a view of h
	a := G.Must(G.Tanh(m.out))                                  // (4, 3, 6)
	b := G.Must(ops.Slice(a, 1, 0, 2))                          // (4, 2, 6)
	b2 := G.Must(ops.Reshape(b, tensor.Shape{8, 6}))            // view
	c := G.Must(ops.MatMul(b2, m.v, false, true))               // (8, 6)
	p := G.Must(ops.LogSoftMax(c))                              // (8, 6)
	q := G.Must(G.HadamardProd(p, G.Must(G.Square(c))))         // (8, 6)
	m.loss = G.Must(G.Mean(G.Must(G.Add(q, G.Must(G.Neg(c)))))) // scalar
	return m
}

func (m *hostModel) feed(t *testing.T, rng *rand.Rand) {
	t.Helper()
	xs := make([]float64, 60)
	for i := range xs {
		xs[i] = rng.NormFloat64()
	}
	if err := graph.SetValue(m.x, xs); err != nil {
		t.Fatal(err)
	}
}

// TestHostExecutorMatchesTapeMachine runs the same graph on the host
// executor (the default) and on Gorgonia's TapeMachine, with new inputs and
// updated parameters each run: the loss, the output and the gradients agree
// bit for bit, in float64 and float32.
func TestHostExecutorMatchesTapeMachine(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			host, tape := newHostModel(t, dt), newHostModel(t, dt)
			mh, err := graph.NewMachine(host.s, host.loss, graph.MachineOptions{Outputs: G.Nodes{host.out}})
			if err != nil {
				t.Fatal(err)
			}
			defer mh.Close()
			mt, err := graph.NewMachine(tape.s, tape.loss, graph.MachineOptions{Outputs: G.Nodes{tape.out}, TapeMachine: true})
			if err != nil {
				t.Fatal(err)
			}
			defer mt.Close()
			rh, rt := rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))
			for run := 0; run < 4; run++ {
				host.feed(t, rh)
				tape.feed(t, rt)
				if err := mh.Run(); err != nil {
					t.Fatal(err)
				}
				if err := mt.Run(); err != nil {
					t.Fatal(err)
				}
				same(t, run, "loss", host.loss, tape.loss, graph.Values)
				same(t, run, "out", host.out, tape.out, graph.Values)
				for i, p := range host.s.Params() {
					q := tape.s.Params()[i]
					same(t, run, "gradient of "+p.Name(), p, q, graph.GradValues)
					// A plain gradient step on both, so the next run sees
					// new parameters.
					for _, n := range []*G.Node{p, q} {
						vals := must(graph.Values(n))
						g := must(graph.GradValues(n))
						for j := range vals {
							vals[j] -= 0.5 * g[j]
						}
						if err := graph.SetValue(n, vals); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		})
	}
}

func same(t *testing.T, run int, what string, a, b *G.Node, read func(*G.Node) ([]float64, error)) {
	t.Helper()
	va, vb := must(read(a)), must(read(b))
	if len(va) != len(vb) {
		t.Fatalf("run %d: %s: %d values against %d", run, what, len(va), len(vb))
	}
	for i := range va {
		if math.Float64bits(va[i]) != math.Float64bits(vb[i]) {
			t.Fatalf("run %d: %s[%d]: host %v, TapeMachine %v", run, what, i, va[i], vb[i])
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestHostExecutorReusesBuffers checks that intermediate nodes keep their
// memory across runs while the values callers read after Run (the loss,
// Outputs, the gradients) are new each run, so a value kept from an
// earlier run is never overwritten; and that a step allocates far less
// than the first run.
func TestHostExecutorReusesBuffers(t *testing.T) {
	m := newHostModel(t, tensor.Float64)
	mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Outputs: G.Nodes{m.out}})
	if err != nil {
		t.Fatal(err)
	}
	defer mach.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	m.feed(t, rng)
	if err := mach.Run(); err != nil {
		t.Fatal(err)
	}
	out1 := m.out.Value()
	kept := must(graph.Values(m.out))
	grad1, err := m.w.Grad()
	if err != nil {
		t.Fatal(err)
	}
	keptGrad := must(graph.GradValues(m.w))
	m.feed(t, rng)
	if err := mach.Run(); err != nil {
		t.Fatal(err)
	}
	if m.out.Value() == out1 {
		t.Error("the output is the same value as in the first run: a kept output would be overwritten")
	}
	if got := must(valuesOf(out1)); !equalBits(got, kept) {
		t.Error("the first run's output changed during the second run")
	}
	if got := must(valuesOf(grad1)); !equalBits(got, keptGrad) {
		t.Error("the first run's gradient changed during the second run")
	}
	if got := must(graph.Values(m.out)); equalBits(got, kept) {
		t.Error("the output did not change with new inputs")
	}
	// The intermediate tensors allocate nothing: a run allocates less than
	// half the bytes the same run allocates on the TapeMachine.
	tape := newHostModel(t, tensor.Float64)
	mt, err := graph.NewMachine(tape.s, tape.loss, graph.MachineOptions{Outputs: G.Nodes{tape.out}, TapeMachine: true})
	if err != nil {
		t.Fatal(err)
	}
	defer mt.Close()
	tape.feed(t, rng)
	hostBytes, tapeBytes := runBytes(t, mach), runBytes(t, mt)
	t.Logf("bytes per run: host executor %d, TapeMachine %d", hostBytes, tapeBytes)
	if hostBytes*2 > tapeBytes {
		t.Errorf("a run allocates %d bytes on the host executor, %d on the TapeMachine: want less than half", hostBytes, tapeBytes)
	}
}

// TestHostExecutorReuseGrads runs the host model with ReuseGrads beside
// one on the TapeMachine: the gradients agree bit for bit over several runs
// with changing inputs and parameters, and from the second run on each
// gradient is written into the value of the run before.
func TestHostExecutorReuseGrads(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			host, tape := newHostModel(t, dt), newHostModel(t, dt)
			mh, err := graph.NewMachine(host.s, host.loss, graph.MachineOptions{Outputs: G.Nodes{host.out}, ReuseGrads: true})
			if err != nil {
				t.Fatal(err)
			}
			defer mh.Close()
			mt, err := graph.NewMachine(tape.s, tape.loss, graph.MachineOptions{Outputs: G.Nodes{tape.out}, TapeMachine: true})
			if err != nil {
				t.Fatal(err)
			}
			defer mt.Close()
			rh, rt := rand.New(rand.NewPCG(5, 6)), rand.New(rand.NewPCG(5, 6))
			prev := map[string]G.Value{}
			reused := 0
			for run := 0; run < 4; run++ {
				host.feed(t, rh)
				tape.feed(t, rt)
				if err := mh.Run(); err != nil {
					t.Fatal(err)
				}
				if err := mt.Run(); err != nil {
					t.Fatal(err)
				}
				same(t, run, "loss", host.loss, tape.loss, graph.Values)
				for i, p := range host.s.Params() {
					q := tape.s.Params()[i]
					same(t, run, "gradient of "+p.Name(), p, q, graph.GradValues)
					g := must(p.Grad())
					if run >= 2 && g == prev[p.Name()] {
						reused++
					}
					prev[p.Name()] = g
					for _, n := range []*G.Node{p, q} {
						vals := must(graph.Values(n))
						g := must(graph.GradValues(n))
						for j := range vals {
							vals[j] -= 0.5 * g[j]
						}
						if err := graph.SetValue(n, vals); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			if reused == 0 {
				t.Error("no gradient was written into its previous value")
			}
		})
	}
}

// runBytes is the heap bytes one Run of m allocates (the median of 5).
func runBytes(t *testing.T, m *graph.Machine) uint64 {
	t.Helper()
	var bytes []uint64
	for i := 0; i < 5; i++ {
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		if err := m.Run(); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&b)
		bytes = append(bytes, b.TotalAlloc-a.TotalAlloc)
	}
	slices.Sort(bytes)
	return bytes[2]
}

func valuesOf(v G.Value) ([]float64, error) {
	switch x := v.(type) {
	case tensor.Tensor:
		d := x.Data().([]float64)
		return append([]float64(nil), d...), nil
	}
	return nil, nil
}

func equalBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// TestHostExecutorGorgoniaOps runs Gorgonia ops with UsePreallocDo methods
// of their own — a convolution (im2col, col2im), max-pooling and its
// gradient, and G.Slice, whose gradient (sliceIncr) adds into the value it
// is given — on the host executor for several runs: the loss and the
// gradients stay those of the TapeMachine, bit for bit.
func TestHostExecutorGorgoniaOps(t *testing.T) {
	build := func(tape bool) (*graph.Machine, *graph.Scope, *G.Node) {
		s, err := graph.NewScope(tensor.Float64, 11)
		if err != nil {
			t.Fatal(err)
		}
		x, _ := s.Param("x", tensor.Shape{1, 1, 4, 4}, graph.Normal(1))
		k, _ := s.Param("k", tensor.Shape{2, 1, 3, 3}, graph.Normal(1))
		// Through tanh, so that the gradients of the convolution's and the
		// slice's inputs are intermediate nodes (a parameter's gradient is
		// a fresh value every run).
		c := G.Must(G.Conv2d(G.Must(G.Tanh(x)), k, tensor.Shape{3, 3}, []int{1, 1}, []int{1, 1}, []int{1, 1}))
		p := G.Must(G.MaxPool2D(c, tensor.Shape{2, 2}, []int{0, 0}, []int{2, 2}))
		v, _ := s.Param("v", tensor.Shape{4, 3}, graph.Normal(1))
		sl := G.Must(G.Slice(G.Must(G.Tanh(v)), G.S(1, 3))) // its gradient is a sliceIncr
		loss := G.Must(G.Add(G.Must(G.Sum(G.Must(G.Square(p)))), G.Must(G.Sum(G.Must(G.Square(sl))))))
		m, err := graph.NewMachine(s, loss, graph.MachineOptions{TapeMachine: tape})
		if err != nil {
			t.Fatal(err)
		}
		return m, s, loss
	}
	mh, sh, lh := build(false)
	defer mh.Close()
	mt, st, lt := build(true)
	defer mt.Close()
	for run := 0; run < 3; run++ {
		if err := mh.Run(); err != nil {
			t.Fatal(err)
		}
		if err := mt.Run(); err != nil {
			t.Fatal(err)
		}
		same(t, run, "loss", lh, lt, graph.Values)
		for i, p := range sh.Params() {
			same(t, run, "gradient of "+p.Name(), p, st.Params()[i], graph.GradValues)
		}
	}
}

// TestHostExecutorTwoMachines alternates a gradient machine and a
// forward-only machine on one graph: after each Run the nodes read that
// machine's values, intermediate nodes included.
func TestHostExecutorTwoMachines(t *testing.T) {
	m := newHostModel(t, tensor.Float64)
	train, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer train.Close()
	eval, err := graph.NewMachine(m.s, nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{m.loss}})
	if err != nil {
		t.Fatal(err)
	}
	defer eval.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	xs := [2][]float64{make([]float64, 60), make([]float64, 60)}
	for _, x := range xs {
		for i := range x {
			x[i] = rng.NormFloat64()
		}
	}
	var want [2][]float64 // m.out (an intermediate node of both) for each input
	for round := 0; round < 2; round++ {
		for k, mach := range []*graph.Machine{train, eval} {
			if err := graph.SetValue(m.x, xs[k]); err != nil {
				t.Fatal(err)
			}
			if err := mach.Run(); err != nil {
				t.Fatal(err)
			}
			got := must(graph.Values(m.out))
			if round == 0 {
				want[k] = got
				continue
			}
			if !equalBits(got, want[k]) {
				t.Fatalf("round %d, machine %d: the intermediate node does not hold this run's values", round, k)
			}
		}
	}
	if equalBits(want[0], want[1]) {
		t.Fatal("the two inputs gave the same values")
	}
}
