package bench

import (
	"flag"
	"fmt"
	"testing"

	"gorgonia.org/tensor"
)

var (
	benchPaper   = flag.Bool("bench_paper", false, "also benchmark the language `paper` preset (context 256, d'=512, V=50,258; tens of seconds per step)")
	benchLMBatch = flag.Int("bench_lm_batch", 0, "minibatch of the language benchmarks (0: the preset's)")
	benchXent32  = flag.Bool("bench_xent32", false, "the language benchmarks' loss with the float32 softmax (Workload.Float32CrossEntropy)")
)

// Sinks keep the compiler from discarding benchmark results.
var (
	sink      float64
	sinkValue any
)

var dtypes = []tensor.Dtype{tensor.Float32, tensor.Float64}

// benchWorkload times r.Step for w: the graph is built, compiled, fed and
// run once before the timer starts, so the loop measures compute only. It
// reports allocations, the process CPU time per step (cpu-ms/op: robust to
// other jobs' load, see Timing), the peak heap and peak RSS over the timed
// loop (see PeakMeter) and, for the language models, the achieved GFLOP/s
// (see FLOPs) per second of wall time and per second of CPU time (the
// latter is per core: compare it with one core's peak).
func benchWorkload(b *testing.B, w Workload, dt tensor.Dtype, mode Mode) {
	b.Helper()
	r, err := NewRunner(w, dt, mode, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Step(); err != nil { // the first run allocates the node values
		b.Fatal(err)
	}
	b.ReportAllocs()
	pm := StartPeak(0)
	cpu0 := CPUTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l, err := r.Step()
		if err != nil {
			b.Fatal(err)
		}
		sink = l
	}
	b.StopTimer()
	cpu := CPUTime() - cpu0
	heap, rss := pm.Stop()
	b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
	sinkValue = r.Logits.Value()
	b.ReportMetric(MB(heap), "peak-heap-MB")
	if rss > 0 {
		b.ReportMetric(MB(rss), "peak-RSS-MB")
	}
	if f := FLOPs(w, mode); f > 0 {
		b.ReportMetric(f*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		if cpu > 0 {
			b.ReportMetric(f*float64(b.N)/cpu.Seconds()/1e9, "GFLOP/cpu-s")
		}
	}
}

// benchSet runs benchWorkload for every workload and dtype as
// sub-benchmarks "<name(w)>/<dtype>".
func benchSet(b *testing.B, ws []Workload, name func(Workload) string, mode Mode) {
	for _, w := range ws {
		for _, dt := range dtypes {
			b.Run(fmt.Sprintf("%s/%v", name(w), dt), func(b *testing.B) { benchWorkload(b, w, dt, mode) })
		}
	}
}

func blocks(w Workload) string {
	if w.FuseEncoder {
		return fmt.Sprintf("blocks=%d-fused", w.depth())
	}
	return fmt.Sprintf("blocks=%d", w.depth())
}
func nLayers(w Workload) string { return fmt.Sprintf("layers=%d", w.depth()) }
func model(w Workload) string   { return "model=" + string(w.Model) }

// BenchmarkGDTrainStep times one training step (forward, backward, Adam) of
// the synthetic GD model at the paper's sizes: batch 512, N=10, d=10, d'=5,
// C=25, softmax kernel, 1 and 2 blocks; blocks=K-fused with
// gd.Config.FuseEncoder.
func BenchmarkGDTrainStep(b *testing.B) {
	benchSet(b, []Workload{SyntheticGD(1), SyntheticGD(2), fusedGD(1), fusedGD(2)}, blocks, Train)
}

// fusedGD is SyntheticGD(k) with gd.Config.FuseEncoder.
func fusedGD(k int) Workload {
	w := SyntheticGD(k)
	w.Name += "-fused"
	w.FuseEncoder = true
	return w
}

// BenchmarkGDInfer times the forward pass to the logits of the same models.
func BenchmarkGDInfer(b *testing.B) {
	benchSet(b, []Workload{SyntheticGD(1), SyntheticGD(2)}, blocks, Infer)
}

// BenchmarkTFTrainStep times one training step of the Trained TF on the
// synthetic task: 1 layer, and 2 layers with cross-attention.
func BenchmarkTFTrainStep(b *testing.B) {
	benchSet(b, []Workload{SyntheticTF(1), SyntheticTF(2)}, nLayers, Train)
}

// BenchmarkTFTrainStepRegrouped is BenchmarkTFTrainStep with
// tf.Config.RegroupQuery, as bench/peer builds the TF.
func BenchmarkTFTrainStepRegrouped(b *testing.B) {
	ws := []Workload{SyntheticTF(1), SyntheticTF(2)}
	for i := range ws {
		ws[i].RegroupQuery = true
	}
	benchSet(b, ws, nLayers, Train)
}

// BenchmarkTFInfer times the forward pass of the same models.
func BenchmarkTFInfer(b *testing.B) {
	benchSet(b, []Workload{SyntheticTF(1), SyntheticTF(2)}, nLayers, Infer)
}

// BenchmarkQuadrantTrainStep times a training step of 1-block GD and
// 1-layer TF on the quadrant task (N=100, d=2, C=20, d'=5, batch 64).
func BenchmarkQuadrantTrainStep(b *testing.B) {
	benchSet(b, []Workload{Quadrant(ModelGD), Quadrant(ModelTF)}, model, Train)
}

// BenchmarkQuadrantInfer times the forward pass of the same models.
func BenchmarkQuadrantInfer(b *testing.B) {
	benchSet(b, []Workload{Quadrant(ModelGD), Quadrant(ModelTF)}, model, Infer)
}

// BenchmarkFewShotTrainStep times a training step of 1-block GD and 1-layer
// TF on 5-way 10-shot episodes of 512-dimensional features (N=50, C=5,
// d'=4, batch 64).
func BenchmarkFewShotTrainStep(b *testing.B) {
	benchSet(b, []Workload{FewShot(ModelGD), FewShot(ModelTF)}, model, Train)
}

// BenchmarkFewShotInfer times the forward pass of the same models.
func BenchmarkFewShotInfer(b *testing.B) {
	benchSet(b, []Workload{FewShot(ModelGD), FewShot(ModelTF)}, model, Infer)
}

// lmWorkloads lists the language workloads (the GD LM, the GD LM with its
// feed-forward block, the GPT): the small preset, and the paper preset with
// -bench_paper; -bench_lm_batch overrides the minibatch and -bench_xent32
// sets Float32CrossEntropy.
func lmWorkloads() []Workload {
	presets := []LMPreset{LMSmall}
	if *benchPaper {
		presets = append(presets, LMPaper)
	}
	var ws []Workload
	for _, p := range presets {
		if *benchLMBatch > 0 {
			p.Batch = *benchLMBatch
		}
		for _, m := range []struct {
			model Model
			ff    bool
		}{{ModelGDLM, false}, {ModelGDLM, true}, {ModelGPT, false}} {
			w := LM(m.model, p)
			w.FF = m.ff
			w.Float32CrossEntropy = *benchXent32
			ws = append(ws, w)
		}
	}
	return ws
}

func lmName(w Workload) string {
	for _, p := range []LMPreset{LMSmall, LMPaper} {
		if w.Context == p.Context && w.DPrime == p.DPrime && w.Vocab == p.Vocab {
			if w.FF {
				return fmt.Sprintf("preset=%s/model=%s+ff", p.Name, w.Model)
			}
			return fmt.Sprintf("preset=%s/model=%s", p.Name, w.Model)
		}
	}
	return w.Name
}

// BenchmarkLMTrainStep times a training step of the GD language model
// (gd.LM, 8 heads, one GD step) and the GPT baseline (tf.GPT, one layer)
// with the small preset, and the paper preset with -bench_paper.
func BenchmarkLMTrainStep(b *testing.B) { benchSet(b, lmWorkloads(), lmName, Train) }

// BenchmarkLMInfer times the forward pass to every position's logits.
func BenchmarkLMInfer(b *testing.B) { benchSet(b, lmWorkloads(), lmName, Infer) }
