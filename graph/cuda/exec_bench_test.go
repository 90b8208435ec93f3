package cuda

import (
	"testing"

	"github.com/gdattn/gdattn/bench"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/train"
	"gorgonia.org/tensor"
)

// BenchmarkExecutorTrainStep times one training step (forward, backward,
// Adam update on the device) of every benchmark workload through the
// executor, float32, on the test backend: the GPU with -tags gdcuda (the
// number to compare with bench's CPU timings), the emulator with -tags
// cudaemu (meaningless as a speed, a smoke test of the large graphs).
// Without either tag it is skipped. Each workload runs twice: "copies"
// (default options: parameters uploaded, gradients and parameters
// downloaded every step) and "resident" (ResidentParams and DeviceGrads:
// nothing parameter-sized crosses the bus).
//
//	go test -tags gdcuda ./graph/cuda -run '^$' -bench ExecutorTrainStep -benchtime 20x
func BenchmarkExecutorTrainStep(b *testing.B) {
	workloads := append(bench.ICLWorkloads(), bench.LM(bench.ModelGDLM, bench.LMSmall), bench.LM(bench.ModelGPT, bench.LMSmall),
		bench.LM(bench.ModelGDLM, bench.LMPaper), bench.LM(bench.ModelGPT, bench.LMPaper))
	modes := []struct {
		name string
		opts ExecOptions
	}{{"copies", ExecOptions{}}, {"resident", ExecOptions{ResidentParams: true, DeviceGrads: true}}}
	for _, w := range workloads {
		for _, mode := range modes {
			b.Run(w.Name+"/"+mode.name, func(b *testing.B) {
				be, device := execBackend(b)
				if !device {
					b.Skip("no device backend (build with -tags gdcuda or cudaemu)")
				}
				r, err := bench.NewRunner(w, tensor.Float32, bench.Train, 1)
				if err != nil {
					b.Fatal(err)
				}
				defer r.Close()
				opts := mode.opts
				opts.Logf = b.Logf
				m, err := graph.NewMachine(r.Scope, r.Loss, graph.MachineOptions{Executor: NewExecutorWith(be, opts)})
				if err != nil {
					b.Fatal(err)
				}
				defer m.Close()
				tr, err := train.NewTrainer(m, train.Config{LR: 1e-3})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := tr.Step(); err != nil { // warm-up: allocations, JIT
					b.Fatal(err)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := tr.Step(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
