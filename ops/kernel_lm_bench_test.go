package ops

import (
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkKernelLM times one head's causal softmax kernel op, forward
// (weights and raw scores) and backward (dq and dk, no dg), float32, at the
// language models' shapes: the GPT's heads (B sequences of T queries and
// keys, head width 64 at `paper`, 8 at `small`) and the GD model's
// (one sequence, T + 1 queries, T keys, strictly earlier keys, width d').
// A step runs 8 heads each way. cpu-ms/op is the process CPU time.
//
//	GOMAXPROCS=1 go test ./ops -run '^$' -bench KernelLM -benchtime 20x
func BenchmarkKernelLM(b *testing.B) {
	for _, c := range []struct {
		name   string
		a      kernelArgs
		strict bool
	}{
		{"gpt-paper", kernelArgs{b: 4, tq: 256, tk: 256, d: 64, g: 0.125}, false},
		{"gd-paper", kernelArgs{b: 1, tq: 257, tk: 256, d: 512, g: 1}, true},
		{"gpt-small", kernelArgs{b: 8, tq: 64, tk: 64, d: 8, g: 0.35355339059327373}, false},
		{"gd-small", kernelArgs{b: 1, tq: 65, tk: 64, d: 64, g: 1}, true},
	} {
		a := c.a
		rng := rand.New(rand.NewPCG(1, 2))
		q, k := make([]float32, a.b*a.tq*a.d), make([]float32, a.b*a.tk*a.d)
		for i := range q {
			q[i] = float32(0.3 * rng.NormFloat64())
		}
		for i := range k {
			k[i] = float32(0.3 * rng.NormFloat64())
		}
		m := a.b * a.tq * a.tk
		w, dw, raw, keep := make([]float32, m), make([]float32, m), make([]float32, m), make([]float32, m)
		for s := 0; s < a.b; s++ {
			for j := 0; j < a.tq; j++ {
				for i := 0; i < a.tk && (i < j || i == j && !c.strict); i++ {
					keep[(s*a.tq+j)*a.tk+i] = 1
				}
			}
		}
		for i := range dw {
			dw[i] = float32(rng.NormFloat64())
		}
		dq, dk := make([]float32, len(q)), make([]float32, len(k))
		kernelForward(KindSoftmax, a, q, k, keep, w, raw)
		run := func(name string, f func()) {
			b.Run(c.name+"/"+name, func(b *testing.B) {
				f()
				b.ResetTimer()
				cpu0 := cpuTime()
				for range b.N {
					f()
				}
				if cpu := cpuTime() - cpu0; cpu > 0 {
					b.ReportMetric(float64(cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
				}
			})
		}
		run("forward", func() { kernelForward(KindSoftmax, a, q, k, keep, w, raw) })
		run("backward", func() {
			clear(dq)
			clear(dk)
			kernelBackward(KindSoftmax, a, q, k, keep, w, dw, dq, dk, raw, false)
		})
	}
}
