package losses

import (
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// tiedXentWith is the loss of tiedXent (ops.TiedLogits, no other reader of
// the logits) built by SparseSoftmaxCrossEntropyWith with o.
func tiedXentWith(labels []int, v, d int, o SparseOptions) graphtest.BuildFunc {
	return func(s *graph.Scope) (*G.Node, error) {
		h, err := s.Param("h", tensor.Shape{len(labels), d}, graph.Normal(1))
		if err != nil {
			return nil, err
		}
		w, err := s.Param("w", tensor.Shape{v, d}, graph.Normal(1))
		if err != nil {
			return nil, err
		}
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
		return SparseSoftmaxCrossEntropyWith(logits, l, o)
	}
}

// TestSparseXentFloat32: with the Float32 option, in the logits' own buffer
// (Overwrite) and in the op's, the finite-difference check passes in
// float32; loss and gradients agree with the default path's within 1e-5
// (float32) and are the default's bits for float64 logits (the option is
// ignored); a machine run twice gives the same loss.
func TestSparseXentFloat32(t *testing.T) {
	labels := []int{3, -1, 0, 6, 2, 6}
	const V, d = 7, 4
	for _, over := range []bool{true, false} {
		o := SparseOptions{Overwrite: over, Float32: true}
		build := tiedXentWith(labels, V, d, o)
		worst32 := graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 2})
		t.Logf("overwrite %v: finite differences, float32: max relative error %.2e", over, worst32)
		for _, dt := range []tensor.Dtype{graph.Float64, graph.Float32} {
			got, gg := graphtest.Gradients(t, build, dt, 3)
			want, wg := graphtest.Gradients(t, tiedXentWith(labels, V, d, SparseOptions{Overwrite: over}), dt, 3)
			tol := 1e-5
			if dt == graph.Float64 {
				tol = 0
			}
			graphtest.AllClose(t, "loss", []float64{got}, []float64{want}, tol)
			for _, name := range []string{"h", "w"} {
				graphtest.AllClose(t, name+" gradient", gg[name], wg[name], tol)
			}
		}
		s, _ := graph.NewScope(graph.Float32, 5)
		loss, err := build(s)
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
				t.Errorf("overwrite %v: second run's loss %v, first %v", over, lv[0], first)
			}
		}
		m.Close()
	}
	// Bad input fails as the default does.
	s, _ := graph.NewScope(graph.Float32, 1)
	logits, _ := s.Input("logits", tensor.Shape{2, 3})
	wrong, _ := layers.NewIDs(s, "wrong", 3)
	if _, err := SparseSoftmaxCrossEntropyWith(logits, wrong, SparseOptions{Float32: true}); err == nil {
		t.Error("labels of the wrong length: no error")
	}
	if _, err := SparseSoftmaxCrossEntropyWith(nil, wrong, SparseOptions{Float32: true}); err == nil {
		t.Error("nil logits: no error")
	}
}
