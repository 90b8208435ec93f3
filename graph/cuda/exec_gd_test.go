package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"gorgonia.org/tensor"
)

// TestExecutorGDMatchesReference is gd's exactness test run through the
// executor: both implementations of the construction (structured and
// Literal), every kernel, K = 1..3 blocks, float64, f at all positions after
// every block (read with MachineOptions.Trace) against the plain-Go
// functional-GD reference, within 1e-10 absolute.
func TestExecutorGDMatchesReference(t *testing.T) {
	be, device := execBackend(t)
	const B, N, d, dp, C = 3, 8, 5, 4, 7
	T := N + 1
	for _, literal := range []bool{false, true} {
		for _, kern := range layers.KernelNames() {
			for K := 1; K <= 3; K++ {
				t.Run(fmt.Sprintf("literal=%v/%s/K=%d", literal, kern, K), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(K), 7))
					x := make([]float64, B*T*d)
					for i := range x {
						x[i] = 2*rng.Float64() - 1
					}
					y := make([]int, B*T)
					for i := range y {
						y[i] = rng.IntN(C)
					}
					s, err := graph.NewScope(tensor.Float64, 3)
					if err != nil {
						t.Fatal(err)
					}
					cfg := gd.Config{D: d, DPrime: dp, C: C, N: N, Blocks: K, Kernel: layers.Builtin(kern, 0.7), Alpha: 2, Literal: literal}
					m, err := gd.NewModel(s, cfg, B)
					if err != nil {
						t.Fatal(err)
					}
					if err := m.Feed(x, y); err != nil {
						t.Fatal(err)
					}
					mach, err := graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true, Trace: true,
						Executor: NewExecutorWith(be, ExecOptions{HostOnly: !device, Logf: t.Logf})})
					if err != nil {
						t.Fatal(err)
					}
					defer mach.Close()
					if err := mach.Run(); err != nil {
						t.Fatal(err)
					}
					we, err := graph.Values(m.We)
					if err != nil {
						t.Fatal(err)
					}
					ref, err := gd.Reference(x, y, B, T, d, we, dp, C, gd.ReferenceConfig{Steps: K, Alpha: 2, Kernel: kern, Gamma: 0.7})
					if err != nil {
						t.Fatal(err)
					}
					worst := 0.0
					for k := 0; k <= K; k++ {
						got, err := graph.Values(m.F[k])
						if err != nil {
							t.Fatal(err)
						}
						for i := range got {
							worst = math.Max(worst, math.Abs(got[i]-ref.F[k][i]))
						}
					}
					t.Logf("max abs error %.3g", worst)
					if !(worst <= 1e-10) {
						t.Errorf("f differs from the reference by %.3g", worst)
					}
				})
			}
		}
	}
}
