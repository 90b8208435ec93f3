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
// dominate. tf-1-regroup is the TF with tf.Config.RegroupQuery (its last
// layer's values at the query as (Σ_i w_i z_i)·(W_V P)); gd-1-fused the GD
// model with gd.Config.FuseEncoder.
func BenchmarkTrainStepN(b *testing.B) {
	regrouped := SyntheticTF(1)
	regrouped.Name += "-regroup"
	regrouped.RegroupQuery = true
	for _, w := range []Workload{SyntheticGD(1), SyntheticTF(1), regrouped, fusedGD(1)} {
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
