package bench

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/tf"
	"github.com/gdattn/gdattn/train"
	"gorgonia.org/tensor"
)

// BenchmarkFitOverhead times the same training step of the synthetic
// workloads (GD 1 block, TF 1 layer; batch 512, N = 10) two ways on one
// train.Runner: "bare" is the trainer's step on a minibatch fed once (what
// BenchmarkGDTrainStep and BenchmarkTFTrainStep time), "fit" is one epoch
// of Runner.Fit over a set of fitSteps minibatches (checking the set,
// shuffling, copying each minibatch, feeding it, the step). An op is
// fitSteps training steps either way; ms/step and cpu-ms/step are per
// training step. The difference is Fit's own cost, the target at most 5%
// of the bare step.
func BenchmarkFitOverhead(b *testing.B) {
	for _, w := range []Workload{SyntheticGD(1), SyntheticTF(1)} {
		for _, dt := range dtypes {
			for _, how := range []string{"bare", "fit"} {
				b.Run(fmt.Sprintf("%s/%v/%s", strings.TrimPrefix(w.Name, "synthetic/"), dt, how), func(b *testing.B) { benchFit(b, w, dt, how == "fit") })
			}
		}
	}
}

// fitSteps is the number of minibatches of BenchmarkFitOverhead's set.
const fitSteps = 8

// fitSetup builds w's model in dtype dt, its train.Runner (closed when b
// ends) and a set of fitSteps minibatches.
func fitSetup(b *testing.B, w Workload, dt tensor.Dtype) (train.Model, *train.Runner, *data.Batch) {
	b.Helper()
	s, err := graph.NewScope(dt, 1)
	if err != nil {
		b.Fatal(err)
	}
	var m train.Model
	if w.Model == ModelGD {
		m, err = gd.NewModel(s, gd.Config{D: w.D, DPrime: w.DPrime, C: w.C, N: w.N, Blocks: w.depth(), Kernel: layers.Softmax(1), FuseEncoder: w.FuseEncoder}, w.Batch)
	} else {
		m, err = tf.NewModel(s, tf.Config{D: w.D, DPrime: w.DPrime, C: w.C, N: w.N, Layers: w.depth(), Cross: w.Cross, Kernel: layers.Softmax(1), RegroupQuery: w.RegroupQuery}, w.Batch)
	}
	if err != nil {
		b.Fatal(err)
	}
	r, err := train.NewRunner(m, train.RunnerConfig{Optim: train.Config{LR: 1e-3}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	big := w
	big.Batch *= fitSteps
	batch, err := iclBatch(big, rand.New(rand.NewPCG(1, 2)), 1)
	if err != nil {
		b.Fatal(err)
	}
	return m, r, batch
}

func benchFit(b *testing.B, w Workload, dt tensor.Dtype, fit bool) {
	m, r, batch := fitSetup(b, w, dt)
	if err := m.Feed(batch.X[:w.Batch*(w.N+1)*w.D], batch.Y[:w.Batch*(w.N+1)]); err != nil {
		b.Fatal(err)
	}
	epochs := func(n int) error {
		if fit {
			return r.Fit(batch, train.FitConfig{Epochs: n, Seed: 1})
		}
		for range n * fitSteps {
			if _, err := r.Trainer().Step(); err != nil {
				return err
			}
		}
		return nil
	}
	if err := epochs(1); err != nil { // the first run allocates the node values
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0 := CPUTime()
	b.ResetTimer()
	if err := epochs(b.N); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	steps := float64(b.N * fitSteps)
	b.ReportMetric(float64(b.Elapsed())/1e6/steps, "ms/step")
	b.ReportMetric(float64(CPUTime()-cpu0)/1e6/steps, "cpu-ms/step")
}

// BenchmarkFitOverheadPaired times Fit's epochs and bare epochs of the same
// workloads as BenchmarkFitOverhead, interleaved so that a change in the
// machine's load hits both alike: one Runner.Fit call of b.N epochs, and
// after every epoch (in AfterEpoch, outside Fit's own work) fitSteps bare
// trainer steps on the minibatch Fit fed last. It reports the median
// process CPU time per step of the Fit epochs and of the bare epochs
// (fit-cpu-ms/step, bare-cpu-ms/step) and their ratio (fit/bare): the
// overhead of Fit over the bare step, the target at most 1.05. Run it with
// GOMAXPROCS=1 and b.N of at least 20:
//
//	GOMAXPROCS=1 go test ./bench -run '^$' -bench FitOverheadPaired -benchtime 40x
//
// The "-b64" sub-benchmarks repeat it at minibatches of 64 contexts, the
// examples' size.
func BenchmarkFitOverheadPaired(b *testing.B) {
	for _, batch := range []int{SyntheticBatch, 64} {
		for _, w := range []Workload{SyntheticGD(1), SyntheticTF(1)} {
			name := strings.TrimPrefix(w.Name, "synthetic/")
			if batch != w.Batch {
				w.Batch, name = batch, fmt.Sprintf("%s-b%d", name, batch)
			}
			for _, dt := range dtypes {
				b.Run(fmt.Sprintf("%s/%v", name, dt), func(b *testing.B) { benchFitPaired(b, w, dt) })
			}
		}
	}
}

// BenchmarkFitFeedModes splits Fit's cost per step for the workloads of
// BenchmarkFitOverhead: rounds of 8 steps in four modes, alternating, on
// one runner: "bare" (the trainer's step alone), "same" (FeedPrepared of
// one fixed minibatch, then the step), "shuffled" (FeedPrepared of the
// next of the set's 8 shuffled minibatches, then the step: what Fit
// does) and "feed" (that FeedPrepared alone). It reports the median CPU
// time per step of each mode in µs. Run it with GOMAXPROCS=1:
//
//	GOMAXPROCS=1 go test ./bench -run '^$' -bench FitFeedModes -benchtime 40x
func BenchmarkFitFeedModes(b *testing.B) {
	for _, w := range []Workload{SyntheticGD(1), SyntheticTF(1)} {
		for _, dt := range dtypes {
			b.Run(fmt.Sprintf("%s/%v", strings.TrimPrefix(w.Name, "synthetic/"), dt), func(b *testing.B) { benchFeedModes(b, w, dt) })
		}
	}
}

func benchFeedModes(b *testing.B, w Workload, dt tensor.Dtype) {
	m, r, batch := fitSetup(b, w, dt)
	f, ok := m.(interface {
		PrepareContexts(x []float64, y []int) (*layers.Contexts, error)
		FeedPrepared(s *layers.Contexts, rows []int) error
	})
	if !ok {
		b.Fatalf("%T has no FeedPrepared", m)
	}
	set, err := f.PrepareContexts(batch.X, batch.Y)
	if err != nil {
		b.Fatal(err)
	}
	perm := rand.New(rand.NewPCG(1, 1)).Perm(batch.B)
	modes := []string{"bare", "same", "shuffled", "feed"}
	round := func(mode string) {
		for i := range fitSteps {
			rows := perm[i*w.Batch : (i+1)*w.Batch]
			if mode == "same" {
				rows = perm[:w.Batch]
			}
			if mode != "bare" {
				if err := f.FeedPrepared(set, rows); err != nil {
					b.Fatal(err)
				}
			}
			if mode != "feed" {
				if _, err := r.Trainer().Step(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	for _, mode := range modes { // the first run allocates the node values
		round(mode)
	}
	cpu := map[string][]time.Duration{}
	b.ResetTimer()
	for range b.N {
		for _, mode := range modes {
			t := CPUTime()
			round(mode)
			cpu[mode] = append(cpu[mode], CPUTime()-t)
		}
	}
	b.StopTimer()
	for _, mode := range modes {
		d := cpu[mode]
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2])/1e3/fitSteps, mode+"-µs/step")
	}
}

func benchFitPaired(b *testing.B, w Workload, dt tensor.Dtype) {
	_, r, batch := fitSetup(b, w, dt)
	if err := r.Fit(batch, train.FitConfig{Epochs: 1, Seed: 1}); err != nil { // allocates the node values
		b.Fatal(err)
	}
	fitCPU := make([]time.Duration, 0, b.N)
	bareCPU := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	last := CPUTime()
	err := r.Fit(batch, train.FitConfig{Epochs: b.N, Seed: 2, AfterEpoch: func(int, float64) error {
		t := CPUTime()
		fitCPU = append(fitCPU, t-last)
		for range fitSteps {
			if _, err := r.Trainer().Step(); err != nil {
				return err
			}
		}
		last = CPUTime()
		bareCPU = append(bareCPU, last-t)
		return nil
	}})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2]) / 1e6 / fitSteps
	}
	f, bare := med(fitCPU), med(bareCPU)
	b.ReportMetric(f, "fit-cpu-ms/step")
	b.ReportMetric(bare, "bare-cpu-ms/step")
	if bare > 0 {
		b.ReportMetric(f/bare, "fit/bare")
	}
}
