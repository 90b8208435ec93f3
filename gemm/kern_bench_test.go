package gemm

import (
	"math/rand/v2"
	"testing"
)

func benchKernel[F Float](b *testing.B, ks *kernels) {
	bl := pick[F](ks)
	rng := rand.New(rand.NewPCG(1, 2))
	const k = 256
	a := randSlice[F](bl.mr*k, rng)
	bb := randSlice[F](bl.nr*k, rng)
	c := randSlice[F](bl.mr*bl.nr, rng)
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		bl.kern(k, &a[0], &bb[0], &c[0], bl.nr, modeStore, &c[0])
	}
	flops := 2 * float64(bl.mr*bl.nr*k) * float64(b.N)
	b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(flops/cpu.Seconds()/1e9, "GFLOP/cpu-s")
	}
}

// BenchmarkKernel times the micro-kernels alone on operands in L1: the
// ceiling of the packed product.
func BenchmarkKernel(b *testing.B) {
	for _, ks := range available() {
		b.Run(ks.name+"/float32", func(b *testing.B) { benchKernel[float32](b, ks) })
		b.Run(ks.name+"/float64", func(b *testing.B) { benchKernel[float64](b, ks) })
	}
}
