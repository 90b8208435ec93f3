package cuda

import (
	"fmt"
	"math/rand/v2"

	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/losses"
	"github.com/gdattn/gdattn/tf"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// testModel is one of the models the executor tests cover, built small in
// its own scope with one minibatch fed.
type testModel struct {
	name    string
	s       *graph.Scope
	loss    *G.Node
	outputs G.Nodes
	// feed writes another minibatch, drawn from seed.
	feed func(seed uint64) error
}

// modelNames lists the models buildModel knows.
var modelNames = []string{
	"gd-structured-softmax", "gd-structured-rbf", "gd-structured-linear", "gd-structured-exp", "gd-structured-laplacian",
	"gd-literal-softmax", "gd-literal-rbf", "gd-heads3-bias", "gd-lambda-erase",
	"tf", "tf-cross", "gdlm", "gdlm-ff", "gpt",
}

// buildModel builds model name in a fresh scope of dtype dt with its
// minibatch fed (all choices seeded).
func buildModel(name string, dt tensor.Dtype, seed uint64) (*testModel, error) {
	s, err := graph.NewScope(dt, seed)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 11))
	const B, N, d, dp, C = 3, 6, 4, 3, 5
	T := N + 1
	x := make([]float64, B*T*d)
	for i := range x {
		x[i] = 2*rng.Float64() - 1
	}
	y := make([]int, B*T)
	for i := range y {
		y[i] = rng.IntN(C)
	}
	tm := &testModel{name: name, s: s}
	icl := func(logits, target *G.Node, feed func([]float64, []int) error) error {
		if err := feed(x, y); err != nil {
			return err
		}
		loss, err := losses.CrossEntropy(logits, target)
		if err != nil {
			return err
		}
		tm.loss, tm.outputs = loss, G.Nodes{logits}
		tm.feed = func(seed uint64) error {
			r := rand.New(rand.NewPCG(seed, 13))
			x2, y2 := make([]float64, len(x)), make([]int, len(y))
			for i := range x2 {
				x2[i] = 2*r.Float64() - 1
			}
			for i := range y2 {
				y2[i] = r.IntN(C)
			}
			return feed(x2, y2)
		}
		return nil
	}
	gdModel := func(cfg gd.Config) error {
		cfg.D, cfg.DPrime, cfg.C, cfg.N = d, dp, C, N
		m, err := gd.NewModel(s, cfg, B)
		if err != nil {
			return err
		}
		return icl(m.Logits, m.Target, m.Feed)
	}
	lm := func(vocab, ctx int, build func() (logits, loss *G.Node, feed func(ids, targets []int) error, err error)) error {
		logits, loss, feed, err := build()
		if err != nil {
			return err
		}
		ids, targets := make([]int, B*ctx), make([]int, B*ctx)
		for i := range ids {
			ids[i] = rng.IntN(vocab)
			targets[i] = rng.IntN(vocab)
		}
		targets[1] = -1
		if err := feed(ids, targets); err != nil {
			return err
		}
		tm.loss, tm.outputs = loss, G.Nodes{logits}
		tm.feed = func(seed uint64) error {
			r := rand.New(rand.NewPCG(seed, 13))
			ids2, targets2 := make([]int, len(ids)), make([]int, len(targets))
			for i := range ids2 {
				ids2[i], targets2[i] = r.IntN(vocab), r.IntN(vocab)
			}
			targets2[int(seed)%len(targets2)] = -1
			return feed(ids2, targets2)
		}
		return nil
	}
	var kern string
	switch name {
	case "gd-structured-softmax", "gd-structured-rbf", "gd-structured-linear", "gd-structured-exp", "gd-structured-laplacian":
		kern = name[len("gd-structured-"):]
		err = gdModel(gd.Config{Blocks: 2, Kernel: layers.Builtin(kern, 0.8)})
	case "gd-single-softmax", "gd-single-rbf":
		// One block and head: the fused ops.KernelApplyOp (not in
		// modelNames; TestExecutorHostOpEachRun runs it).
		kern = name[len("gd-single-"):]
		err = gdModel(gd.Config{Blocks: 1, Kernel: layers.Builtin(kern, 0.8)})
	case "gd-literal-softmax", "gd-literal-rbf":
		kern = name[len("gd-literal-"):]
		err = gdModel(gd.Config{Blocks: 2, Kernel: layers.Builtin(kern, 0.8), Literal: true})
	case "gd-heads3-bias":
		err = gdModel(gd.Config{Blocks: 2, Kernel: layers.RBF(1), Heads: 3, Bias: true})
	case "gd-lambda-erase":
		err = gdModel(gd.Config{Blocks: 2, Kernel: layers.Softmax(1), Erase: gd.EraseLambda, Lambda: 3})
	case "tf", "tf-cross":
		m, e := tf.NewModel(s, tf.Config{D: d, DPrime: dp, C: C, N: N, Layers: 2, Cross: name == "tf-cross", Kernel: layers.Softmax(1)}, B)
		if e != nil {
			return nil, e
		}
		err = icl(m.Logits, m.Target, m.Feed)
	case "gdlm", "gdlm-ff":
		const V, ctx = 11, 5
		err = lm(V, ctx, func() (*G.Node, *G.Node, func([]int, []int) error, error) {
			m, err := gd.NewLM(s, gd.LMConfig{Vocab: V, DPrime: 4, Context: ctx, Heads: 2, Steps: 2, FF: name == "gdlm-ff"}, gd.LMOptions{Batch: B})
			if err != nil {
				return nil, nil, nil, err
			}
			loss, err := losses.SparseSoftmaxCrossEntropy(m.Logits, m.Targets)
			return m.Logits, loss, m.Feed, err
		})
	case "gpt":
		const V, ctx = 11, 5
		err = lm(V, ctx, func() (*G.Node, *G.Node, func([]int, []int) error, error) {
			m, err := tf.NewGPT(s, tf.GPTConfig{Vocab: V, Context: ctx, DModel: 4, Heads: 2, Layers: 2}, tf.GPTOptions{Batch: B})
			if err != nil {
				return nil, nil, nil, err
			}
			loss, err := losses.SparseSoftmaxCrossEntropy(m.Logits, m.Targets)
			return m.Logits, loss, m.Feed, err
		})
	default:
		return nil, fmt.Errorf("unknown test model %q", name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return tm, nil
}
