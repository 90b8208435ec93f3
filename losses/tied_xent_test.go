package losses

import (
	"math"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// tiedXent builds the sparse cross-entropy of the tied logits h wᵀ, for h
// (N, d) and w (V, d): with mul, through G.Mul (the loss keeps a softmax
// buffer of its own); with extra, the logits are also summed into the loss
// (0 times), a second reader that forbids overwriting them; otherwise
// through ops.TiedLogits, whose logits SparseSoftmaxCrossEntropyOverwrite
// overwrites with the softmax and then its gradient (SparseSoftmaxCrossEntropy
// with keep).
func tiedXent(labels []int, v, d int, mul, extra bool, keep ...bool) graphtest.BuildFunc {
	return func(s *graph.Scope) (*G.Node, error) {
		h, err := s.Param("h", tensor.Shape{len(labels), d}, graph.Normal(1))
		if err != nil {
			return nil, err
		}
		w, err := s.Param("w", tensor.Shape{v, d}, graph.Normal(1))
		if err != nil {
			return nil, err
		}
		var logits *G.Node
		if mul {
			logits, err = G.Mul(h, G.Must(G.Transpose(w)))
		} else {
			logits, err = ops.TiedLogits(h, w)
		}
		if err != nil {
			return nil, err
		}
		l, err := layers.NewIDs(s, "labels", len(labels))
		if err != nil {
			return nil, err
		}
		if err := SetLabels(l, labels, v); err != nil {
			return nil, err
		}
		var loss *G.Node
		if mul || len(keep) > 0 && keep[0] {
			loss, err = SparseSoftmaxCrossEntropy(logits, l)
		} else {
			loss, err = SparseSoftmaxCrossEntropyOverwrite(logits, l)
		}
		if err != nil || !extra {
			return loss, err
		}
		zero, err := s.Const("zero", tensor.Shape{len(labels), v}, make([]float64, len(labels)*v))
		if err != nil {
			return nil, err
		}
		return G.Add(loss, G.Must(G.Sum(G.Must(G.HadamardProd(logits, zero)))))
	}
}

// TestSparseXentTiedInPlace: on tied logits the loss writes its softmax and
// gradient over the logits; loss and gradients are those of the same loss on
// logits from G.Mul (its own buffer) to rounding, and the finite-difference
// checks pass in float64 and float32. A second reader of the logits keeps
// them intact.
func TestSparseXentTiedInPlace(t *testing.T) {
	labels := []int{3, -1, 0, 6, 2, 6}
	const V, d = 7, 4
	build := tiedXent(labels, V, d, false, false)
	worst := graphtest.CheckGrad(t, build, graphtest.Options{Seed: 2})
	worst32 := graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 2})
	t.Logf("max relative error float64 %.2e, float32 %.2e", worst, worst32)
	for _, dt := range []tensor.Dtype{graph.Float64, graph.Float32} {
		tol := 1e-12
		if dt == graph.Float32 {
			tol = 1e-5
		}
		got, gg := graphtest.Gradients(t, build, dt, 3)
		want, wg := graphtest.Gradients(t, tiedXent(labels, V, d, true, false), dt, 3)
		graphtest.AllClose(t, "loss", []float64{got}, []float64{want}, tol)
		for _, name := range []string{"h", "w"} {
			graphtest.AllClose(t, name+" gradient", gg[name], wg[name], tol)
		}
	}

	// A machine run twice: the logits hold the loss's gradient after the run
	// (overwritten), and the second run's loss is the first's.
	for _, c := range []struct{ extra, keep bool }{{false, false}, {true, false}, {false, true}} {
		extra := c.extra || c.keep // the logits must stay intact
		s, _ := graph.NewScope(graph.Float32, 5)
		loss, err := tiedXent(labels, V, d, false, c.extra, c.keep)(s)
		if err != nil {
			t.Fatal(err)
		}
		m, err := graph.NewMachine(s, loss, graph.MachineOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var first float64
		for run := 0; run < 2; run++ {
			if err := m.Run(); err != nil {
				t.Fatal(err)
			}
			lv, _ := graph.Values(loss)
			if run == 0 {
				first = lv[0]
			} else if lv[0] != first {
				t.Errorf("%+v: second run's loss %v, first %v", c, lv[0], first)
			}
		}
		var logits *G.Node
		for _, n := range s.Graph().AllNodes() {
			if _, ok := n.Op().(*ops.TiedLogitsOp); ok && n.Shape().Eq(tensor.Shape{len(labels), V}) {
				logits = n
			}
		}
		got, _ := graph.Values(logits)
		hv, _ := graph.Values(s.Graph().ByName("h")[0])
		wv, _ := graph.Values(s.Graph().ByName("w")[0])
		maxDiff := 0.0 // from h wᵀ
		for i := range labels {
			for j := 0; j < V; j++ {
				x := 0.0
				for k := 0; k < d; k++ {
					x += hv[i*d+k] * wv[j*d+k]
				}
				maxDiff = math.Max(maxDiff, math.Abs(got[i*V+j]-x))
			}
		}
		if extra && maxDiff > 1e-5 {
			t.Errorf("with a second reader the logits were overwritten (max difference from h wᵀ %.2e)", maxDiff)
		}
		if !extra && maxDiff < 1e-3 {
			t.Errorf("the loss did not overwrite the tied logits (max difference from h wᵀ %.2e)", maxDiff)
		}
		m.Close()
	}
}
