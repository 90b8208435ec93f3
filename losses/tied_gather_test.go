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

// tiedLM builds a tiny language model with tied embeddings: e = w[ids]
// (minus the mean row with centered), h = tanh(e A), logits = h wᵀ and
// the sparse cross-entropy; with below false, h comes from a second table
// instead, so the lookup is not below the tied product.
func tiedLM(ids, labels []int, v, d int, centered, below bool) graphtest.BuildFunc {
	return func(s *graph.Scope) (*G.Node, error) {
		w, err := s.Param("w", tensor.Shape{v, d}, graph.Normal(1))
		if err != nil {
			return nil, err
		}
		a, err := s.Param("a", tensor.Shape{d, d}, graph.Normal(0.7))
		if err != nil {
			return nil, err
		}
		idn, err := layers.NewIDs(s, "ids", len(ids))
		if err != nil {
			return nil, err
		}
		if err := SetLabels(idn, ids, v); err != nil {
			return nil, err
		}
		table := w
		if !below {
			if table, err = s.Param("u", tensor.Shape{v, d}, graph.Normal(1)); err != nil {
				return nil, err
			}
		}
		var e *G.Node
		if centered {
			e, err = ops.GatherCentered(table, idn)
		} else {
			e, err = ops.Gather(table, idn)
		}
		if err != nil {
			return nil, err
		}
		h := G.Must(G.Tanh(G.Must(G.Mul(e, a))))
		logits, err := ops.TiedLogits(h, w)
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
		loss, err := SparseSoftmaxCrossEntropy(logits, l)
		if err != nil || below {
			return loss, err
		}
		// The second table enters the loss too (a gradient for u).
		return G.Add(loss, G.Must(G.Sum(G.Must(G.Square(G.Must(ops.Gather(w, idn)))))))
	}
}

// TestTiedGatherCoupled: with tied embeddings the table's gradient is the
// lookup's rows added onto the tied product's dYᵀ h (ops.ScatterOp with
// Onto); it passes the finite-difference checks in float64 and float32 and
// equals, bit for bit, the gradient Gorgonia sums from the two products
// when the coupling is off (ops.SetCoupleTiedGather), for the plain and
// the centred lookup, with repeated ids.
func TestTiedGatherCoupled(t *testing.T) {
	ids := []int{3, 1, 3, 0, 6, 3}
	labels := []int{1, 3, -1, 6, 0, 2}
	const V, d = 7, 4
	for _, centered := range []bool{false, true} {
		for _, below := range []bool{true, false} {
			build := tiedLM(ids, labels, V, d, centered, below)
			// The coupling happens exactly when the lookup is below h.
			s, _ := graph.NewScope(graph.Float32, 1)
			loss, err := build(s)
			if err != nil {
				t.Fatal(err)
			}
			m, err := graph.NewMachine(s, loss, graph.MachineOptions{})
			if err != nil {
				t.Fatal(err)
			}
			m.Close()
			onto := false
			for _, n := range s.Graph().AllNodes() {
				if sc, ok := n.Op().(*ops.ScatterOp); ok && sc.Onto() {
					onto = true
				}
			}
			if onto != below {
				t.Errorf("centered %v below %v: coupled %v", centered, below, onto)
			}
			worst := graphtest.CheckGrad(t, build, graphtest.Options{Seed: 3})
			worst32 := graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 3})
			t.Logf("centered %v below %v: max relative error float64 %.2e, float32 %.2e", centered, below, worst, worst32)
			for _, dt := range []tensor.Dtype{graph.Float64, graph.Float32} {
				got, gg := graphtest.Gradients(t, build, dt, 4)
				restore := ops.SetCoupleTiedGather(false)
				want, wg := graphtest.Gradients(t, build, dt, 4)
				restore()
				if got != want {
					t.Errorf("centered %v below %v %v: loss %v, uncoupled %v", centered, below, dt, got, want)
				}
				for name, w := range wg {
					for i := range w {
						if math.Float64bits(gg[name][i]) != math.Float64bits(w[i]) && !(gg[name][i] == 0 && w[i] == 0) {
							t.Fatalf("centered %v below %v %v: gradient of %s[%d] = %v, uncoupled %v", centered, below, dt, name, i, gg[name][i], w[i])
						}
					}
				}
			}
		}
	}
}
