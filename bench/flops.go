package bench

// FLOPs returns the floating-point operations of one step of a language
// workload, counted analytically from its matrix products (2 FLOPs per
// multiply-add; a backward pass costs one product per input that needs a
// gradient). Element-wise work (exp, the softmax normalisation, layer norm,
// GELU, Adam) is not counted: it is a few operations per element against
// d' or more per element for the products. It returns 0 for the in-context
// workloads, whose cost is dominated by small products and bookkeeping
// rather than by FLOPs.
//
// GD language model (gd.LM: H heads, L steps, full d×d head merges P_m as
// the benchmark builds it), batch B, context T, width d, vocabulary V,
// forward:
//
//	logits          2·B·T·d·V
//	heads           H·(2·(T+1)·T·d  [kernel]  + 2·B·(T+1)·T  [repeat over the batch])
//	per step, head  2·B·(T+1)·T·d  [kernel × values]  + 2·B·(T+1)·d²  [o·P_m]
//	mean embedding  2·V·d
//	GD + FF         16·B·T·d²  (two products through the 4d hidden layer)
//
// and training adds the gradients: twice the logits, the kernel × values,
// the P_m and the feed-forward products (both inputs), twice the kernel,
// once the repeat and the mean embedding (one input each).
//
// GPT (tf.GPT: L layers, FF width 4d), forward per layer 8·B·T·d²
// (Q, K, V and the output projection) + 4·B·T²·d (scores and weighted sum
// over all T keys: the causal mask does not skip work) + 16·B·T·d² (the
// feed-forward), plus 2·B·T·d·V for the logits; training is 3× forward.
func FLOPs(w Workload, mode Mode) float64 {
	B, T, d, V := float64(w.Batch), float64(w.Context), float64(w.DPrime), float64(w.Vocab)
	L, H := float64(w.depth()), float64(w.Heads)
	switch w.Model {
	case ModelGDLM:
		logits := 2 * B * T * d * V
		kern := 2 * (T + 1) * T * d
		rep := 2 * B * (T + 1) * T
		av := 2 * B * (T + 1) * T * d
		mean := 2 * V * d
		pm := 2 * B * (T + 1) * d * d
		ff := 0.0
		if w.FF {
			ff = 16 * B * T * d * d
		}
		fwd := logits + L*H*(av+pm) + H*(kern+rep) + mean + ff
		if mode == Infer {
			return fwd
		}
		return fwd + 2*logits + 2*L*H*(av+pm) + H*(2*kern+rep) + mean + 2*ff
	case ModelGPT:
		fwd := L*(24*B*T*d*d+4*B*T*T*d) + 2*B*T*d*V
		if mode == Infer {
			return fwd
		}
		return 3 * fwd
	}
	return 0
}
