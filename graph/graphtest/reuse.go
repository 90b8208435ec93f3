package graphtest

import (
	"math"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/gdattn/gdattn/graph"
)

// Fresh is one freshly built graph for [CheckReusedMachine]: its gradient
// machine, loss node, parameters (in a fixed order) and the function that
// feeds it a minibatch.
type Fresh struct {
	Machine *graph.Machine
	Loss    *G.Node
	Params  G.Nodes
	Feed    func(x []float64, y []int) error
}

// Batch is one minibatch for [CheckReusedMachine].
type Batch struct {
	X []float64
	Y []int
}

// CheckReusedMachine checks the state ops keep between runs (intermediate
// values, gradients, reused output memory): a machine built by build that
// has run on batches[0] and batches[1] and whose parameters then moved (as
// after an optimiser step) gives on batches[2] the same loss and gradients
// as a fresh machine from a second call of build with the same parameter
// values, within tol·(1+|want|), and a second run on the same inputs gives
// exactly the same numbers. It closes both machines.
func CheckReusedMachine(t testing.TB, build func() Fresh, batches [3]Batch, tol float64) {
	t.Helper()
	run := func(f Fresh, b Batch) []float64 {
		t.Helper()
		if err := f.Feed(b.X, b.Y); err != nil {
			t.Fatal(err)
		}
		if err := f.Machine.Run(); err != nil {
			t.Fatal(err)
		}
		l, err := graph.Scalar(f.Loss)
		if err != nil {
			t.Fatal(err)
		}
		out := []float64{l}
		for _, p := range f.Params {
			g, err := graph.GradValues(p)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, g...)
		}
		return out
	}
	f1 := build()
	defer f1.Machine.Close()
	run(f1, batches[0])
	run(f1, batches[1])
	for _, p := range f1.Params { // move every parameter, as an optimiser step would
		v, err := graph.Values(p)
		if err != nil {
			t.Fatal(err)
		}
		for i := range v {
			v[i] += 0.01 * float64(i%7-3)
		}
		if err := graph.SetValue(p, v); err != nil {
			t.Fatal(err)
		}
	}
	got := run(f1, batches[2])
	again := run(f1, batches[2])
	f2 := build()
	defer f2.Machine.Close()
	if len(f2.Params) != len(f1.Params) {
		t.Fatalf("build gives %d parameters, then %d", len(f1.Params), len(f2.Params))
	}
	for i, p := range f2.Params {
		v, err := graph.Values(f1.Params[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := graph.SetValue(p, v); err != nil {
			t.Fatal(err)
		}
	}
	want := run(f2, batches[2])
	for i := range want {
		if math.Abs(got[i]-want[i]) > tol*(1+math.Abs(want[i])) || math.IsNaN(got[i]) != math.IsNaN(want[i]) {
			t.Fatalf("value %d (0: loss, then gradients): reused machine %v, fresh machine %v", i, got[i], want[i])
		}
		if again[i] != got[i] && !(math.IsNaN(again[i]) && math.IsNaN(got[i])) {
			t.Fatalf("value %d: second run on the same inputs gives %v, first %v", i, again[i], got[i])
		}
	}
}
