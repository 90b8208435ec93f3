package layers_test

import (
	"fmt"
	"log"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
)

// A kernel attention head with a learnable RBF kernel, in scope
// "block0/attn": the kernel's g lives in the sub-scope "kernel", the head
// creates W_Q, W_K, W_V and P.
func Example() {
	check := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	s, err := graph.NewScope(graph.Float64, 1)
	check(err)
	head := s.Sub("block0").Sub("attn")
	kern, err := layers.NewKernel(head.Sub("kernel"), layers.KernelRBF, layers.KernelConfig{Gamma: 0.5, Learnable: true})
	check(err)
	attn, err := layers.NewAttention(head, layers.AttentionConfig{DIn: 4, Kernel: kern, Keys: layers.ContextKeys})
	check(err)

	z, err := s.Input("z", tensor.Shape{2, 5, 4}) // (B, T = N+1, D): 4 context tokens, then the query
	check(err)
	out, err := attn.Forward(z)
	check(err)
	fmt.Println("output shape:", out.Shape())
	for _, name := range s.SortedParamNames() {
		fmt.Println(name)
	}
	// Output:
	// output shape: (2, 5, 4)
	// block0/attn/kernel/log_gamma
	// block0/attn/wk
	// block0/attn/wo
	// block0/attn/wq
	// block0/attn/wv
}

// polyKernel is the polynomial kernel κ(q, k) = (1 + q·k)², written by a user
// of the package: q (B, Tq, D), k (B, Tk, D), weights (B, Tq, Tk). A kernel
// must zero the pairs a mask hides. This one is float64 only (the constant 1).
func polyKernel(q, k *G.Node, mask *layers.Mask) (w *G.Node, err error) {
	defer graph.Recover(&err)
	dot := G.Must(G.BatchedMatMul(q, k, false, true))            // (B, Tq, Tk)
	w = G.Must(G.Square(G.Must(G.Add(dot, G.NewConstant(1.0))))) // (B, Tq, Tk)
	if mask != nil {
		w = G.Must(G.HadamardProd(w, mask.Keep))
	}
	return w, nil
}

// A user-defined kernel plugs into Attention unchanged. With identity
// matrices, context tokens (1, 0), (0, 1) and the query (1, 1), position j
// outputs Σ_i (1 + z_j·z_i)² z_i over the two context tokens.
func Example_customKernel() {
	check := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	s, err := graph.NewScope(graph.Float64, 1)
	check(err)
	eye, err := s.Const("eye", tensor.Shape{2, 2}, []float64{1, 0, 0, 1})
	check(err)
	attn, err := layers.NewAttention(s.Sub("attn"), layers.AttentionConfig{
		DIn: 2, Kernel: polyKernel, Keys: layers.ContextKeys,
		WQ: eye, WK: eye, WV: eye, P: eye,
	})
	check(err)
	z, err := s.Const("z", tensor.Shape{1, 3, 2}, []float64{1, 0, 0, 1, 1, 1}) // (B, T, D)
	check(err)
	out, err := attn.Forward(z)
	check(err)

	m, err := graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true})
	check(err)
	defer m.Close()
	check(m.Run())
	vals, err := graph.Values(out)
	check(err)
	fmt.Println(vals)
	// Output:
	// [4 1 1 4 4 4]
}
