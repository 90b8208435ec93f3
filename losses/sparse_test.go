package losses

import (
	"math"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// sparseXent builds the sparse cross-entropy of (N, C) logits drawn in s.
func sparseXent(labels []int, C int) graphtest.BuildFunc {
	return func(s *graph.Scope) (*G.Node, error) {
		logits, err := s.Param("logits", tensor.Shape{len(labels), C}, graph.Normal(2))
		if err != nil {
			return nil, err
		}
		l, err := layers.NewIDs(s, "labels", len(labels))
		if err != nil {
			return nil, err
		}
		if err := SetLabels(l, labels, C); err != nil {
			return nil, err
		}
		return SparseSoftmaxCrossEntropy(logits, l)
	}
}

func TestSparseSoftmaxCrossEntropy(t *testing.T) {
	const C = 5
	labels := []int{2, -1, 0, 4, 2}
	build := sparseXent(labels, C)
	worst := graphtest.CheckGrad(t, build, graphtest.Options{Seed: 1})
	worst32 := graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 1})
	t.Logf("max relative error float64 %.2e, float32 %.2e", worst, worst32)

	// The value equals CrossEntropy with one-hot targets over the
	// scored rows.
	got := graphtest.Forward(t, build, graph.Float64, 1)
	dense := func(s *graph.Scope) (*G.Node, error) {
		logits, err := s.Param("logits", tensor.Shape{len(labels), C}, graph.Normal(2))
		if err != nil {
			return nil, err
		}
		var rows []*G.Node
		var kept []int
		for i, y := range labels {
			if y >= 0 {
				rows = append(rows, G.Must(ops.Slice(logits, 0, i, i+1)))
				kept = append(kept, y)
			}
		}
		oh, err := OneHot(kept, C)
		if err != nil {
			return nil, err
		}
		tg, err := s.Const("targets", tensor.Shape{len(kept), C}, oh)
		if err != nil {
			return nil, err
		}
		return CrossEntropy(G.Must(G.Concat(0, rows...)), tg)
	}
	want := graphtest.Forward(t, dense, graph.Float64, 1)
	graphtest.AllClose(t, "loss", got, want, 1e-14)

	// Nothing scored: 0, with a zero gradient.
	none := graphtest.Forward(t, sparseXent([]int{-1, -1}, C), graph.Float64, 1)
	if none[0] != 0 {
		t.Errorf("loss with no scored label = %v, want 0", none[0])
	}
	_, grads := graphtest.Gradients(t, sparseXent([]int{-1, -1}, C), graph.Float64, 1)
	for _, g := range grads["logits"] {
		if g != 0 {
			t.Fatalf("gradient with no scored label: %v", grads["logits"])
		}
	}
	// Stable for huge logits.
	huge := func(s *graph.Scope) (*G.Node, error) {
		logits, _ := s.Const("logits", tensor.Shape{1, 3}, []float64{1e4, -1e4, 0})
		l, _ := layers.NewIDs(s, "labels", 1)
		SetLabels(l, []int{1}, 3)
		return SparseSoftmaxCrossEntropy(logits, l)
	}
	if v := graphtest.Forward(t, huge, graph.Float32, 1); math.Abs(v[0]-2e4)/2e4 > 1e-6 {
		t.Errorf("loss of huge logits = %v, want 2e4", v[0])
	}
}

func TestSparseSoftmaxCrossEntropyErrors(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	logits, _ := s.Input("logits", tensor.Shape{2, 3})
	labels, _ := layers.NewIDs(s, "labels", 2)
	wrong, _ := layers.NewIDs(s, "wrong", 3)
	if _, err := SparseSoftmaxCrossEntropy(logits, wrong); err == nil {
		t.Error("labels of the wrong length: no error")
	}
	if _, err := SparseSoftmaxCrossEntropy(labels, labels); err == nil {
		t.Error("int logits: no error")
	}
	if err := SetLabels(labels, []int{0, 3}, 3); err == nil || !strings.Contains(err.Error(), "label 3") {
		t.Errorf("SetLabels out of range: err = %v", err)
	}
	if err := SetLabels(logits, []int{0, 1}, 3); err == nil {
		t.Error("SetLabels on a float node: no error")
	}
	loss, err := SparseSoftmaxCrossEntropy(logits, labels)
	if err != nil {
		t.Fatal(err)
	}
	labels.Value().Data().([]int)[0] = -2
	mc, _ := graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{loss}})
	defer mc.Close()
	if err := mc.Run(); err == nil || !strings.Contains(err.Error(), "label -2") {
		t.Errorf("run with label -2: err = %v", err)
	}
}
