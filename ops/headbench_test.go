package ops

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkFullHead measures the full attention head's forward and
// backward pass (with its parameter gradients) at the first layer of the
// paper's synthetic 2-layer TF: B = 512 sequences, T = 11 positions (ten
// context keys), D = 25, softmax, float32, one thread.
func BenchmarkFullHead(b *testing.B) {
	const B, T, D = 512, 11, 25
	rng := rand.New(rand.NewPCG(3, 4))
	rnd := func(n int, s float64) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(s * rng.NormFloat64())
		}
		return x
	}
	op := &HeadOp{kind: KindSoftmax, gFixed: 1, ctx: true}
	d := headDims{b: B, t: T, tk: T - 1, din: D, dk: D, dv: D, dout: D, rows: T, g: 1}
	in := headInputs[float32]{z: rnd(B*T*D, 1), wq: rnd(D*D, 0.2), wk: rnd(D*D, 0.2), wv: rnd(D*D, 0.2), wo: rnd(D*D, 0.2)}
	out, dout, dz := make([]float32, B*T*D), rnd(B*T*D, 1), make([]float32, B*T*D)
	st := &headState[float32]{}
	b.ResetTimer()
	for range b.N {
		headForward(op, st, d, in, out)
		clear(dz)
		headBackward(op, st, d, in, out, dout, dz)
	}
}
