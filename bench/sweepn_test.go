package bench

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkTrainStepN times the training step of the synthetic GD model (1
// block) and Trained TF (1 layer) at batch 512 and the context sizes of the
// peer's N sweep (bench/peer -N): the authors ran their synthetic sweeps at
// N = 125, where the kernel and the attention heads' narrow products
// dominate.
func BenchmarkTrainStepN(b *testing.B) {
	for _, w := range []Workload{SyntheticGD(1), SyntheticTF(1)} {
		for _, n := range []int{50, 125, 250} {
			wn := w
			wn.N = n
			for _, dt := range dtypes {
				name := fmt.Sprintf("%s/N=%d/%v", strings.TrimPrefix(w.Name, "synthetic/"), n, dt)
				b.Run(name, func(b *testing.B) { benchWorkload(b, wn, dt, Train) })
			}
		}
	}
}
