package losses_test

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/losses"
)

// Two examples, three classes: the graph cross-entropy of the logits equals
// the plain-Go negative log-likelihood of their softmax.
func Example() {
	logits := []float64{
		2, 1, 0, // example 0, label 0: the arg-max
		0, 1, 3, // example 1, label 1: ranked second
	}
	labels := []int{0, 1}
	const B, C = 2, 3

	// Training loss on the graph.
	s, err := graph.NewScope(tensor.Float64, 1)
	check(err)
	l, err := s.Input("logits", tensor.Shape{B, C})
	check(err)
	check(graph.SetValue(l, logits))
	targets, err := s.Input("targets", tensor.Shape{B, C})
	check(err)
	oh, err := losses.OneHot(labels, C)
	check(err)
	check(graph.SetValue(targets, oh))
	loss, err := losses.CrossEntropy(l, targets)
	check(err)
	m := G.NewTapeMachine(s.Graph())
	defer m.Close()
	check(m.RunAll())
	ce, err := graph.Scalar(loss)
	check(err)

	// Evaluation metrics in plain Go.
	probs, err := losses.Softmax(logits, C)
	check(err)
	nll, err := losses.NLL(probs, labels, C)
	check(err)
	top1, err := losses.Top1(probs, labels, C)
	check(err)
	top2, err := losses.TopK(probs, labels, C, 2)
	check(err)
	mse, err := losses.ProbMSE(probs, []float64{0.6, 0.3, 0.1, 0.1, 0.1, 0.8}, labels, C)
	check(err)

	fmt.Printf("CrossEntropy %.4f\n", ce)
	fmt.Printf("NLL          %.4f\n", nll)
	fmt.Printf("Top1 %.2f  Top2 %.2f\n", top1, top2)
	fmt.Printf("ProbMSE      %.4f\n", mse)
	// Output:
	// CrossEntropy 1.2887
	// NLL          1.2887
	// Top1 0.50  Top2 1.00
	// ProbMSE      0.0022
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}
