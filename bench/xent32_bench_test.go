package bench

import (
	"sort"
	"testing"

	"gorgonia.org/tensor"
)

// BenchmarkLMXent32Pair times the float32 language training steps with the
// default loss and with Workload.Float32CrossEntropy in one process: both
// runners are built, then each iteration runs one step of each, the order
// alternating, so that a change in the machine's load hits both alike. It
// reports the median process CPU time per step of each (default-cpu-ms,
// xent32-cpu-ms) and their ratio. The paper preset with -bench_paper (two
// runners: about 2.4 GB).
func BenchmarkLMXent32Pair(b *testing.B) {
	for _, w := range lmWorkloads() {
		b.Run(lmName(w), func(b *testing.B) {
			var rs [2]*Runner
			for i := range rs {
				wi := w
				wi.Float32CrossEntropy = i == 1
				r, err := NewRunner(wi, tensor.Float32, Train, 1)
				if err != nil {
					b.Fatal(err)
				}
				defer r.Close()
				if _, err := r.Step(); err != nil {
					b.Fatal(err)
				}
				rs[i] = r
			}
			var cpu [2][]float64
			b.ResetTimer()
			for k := 0; k < b.N; k++ {
				for j := 0; j < 2; j++ {
					i := (j + k) % 2
					c0 := CPUTime()
					l, err := rs[i].Step()
					if err != nil {
						b.Fatal(err)
					}
					sink = l
					cpu[i] = append(cpu[i], float64(CPUTime()-c0)/1e6)
				}
			}
			b.StopTimer()
			med := func(v []float64) float64 {
				s := append([]float64(nil), v...)
				sort.Float64s(s)
				if len(s)%2 == 1 {
					return s[len(s)/2]
				}
				return (s[len(s)/2-1] + s[len(s)/2]) / 2
			}
			d, x := med(cpu[0]), med(cpu[1])
			b.ReportMetric(d, "default-cpu-ms")
			b.ReportMetric(x, "xent32-cpu-ms")
			if d > 0 {
				b.ReportMetric(x/d, "xent32/default")
			}
		})
	}
}
