package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gdattn/gdattn/bench"
	"github.com/gdattn/gdattn/graph/cuda"
	"github.com/gdattn/gdattn/internal/cli"
	"gorgonia.org/tensor"
)

// timeWorkloads are the workloads "gpu time" measures by default: the
// synthetic models at the paper's batch of 512 and both language models at
// the small and paper presets.
var timeWorkloads = []string{
	"synthetic/gd-1", "synthetic/gd-2", "synthetic/tf-1", "synthetic/tf-2",
	"language-small/gdlm", "language-small/gpt", "language-paper/gdlm", "language-paper/gpt",
}

// timeResult is one line of "gpu time".
type timeResult struct {
	Kind     string  `json:"kind"` // "time"
	Device   string  `json:"device"`
	Workload string  `json:"workload"`
	Sizes    string  `json:"sizes"`
	Dtype    string  `json:"dtype"`
	Steps    int     `json:"steps"`
	MedianMS float64 `json:"median_ms"`
	MeanMS   float64 `json:"mean_ms"`
	MinMS    float64 `json:"min_ms"`
	// FirstMS is the first step (allocations; on a GPU the module is
	// JIT-compiled at Open, before it).
	FirstMS float64 `json:"first_step_ms"`
	// NoFusion says each elementwise node ran as its own launch
	// (-fusion off, cuda.ExecOptions.NoFusion).
	NoFusion bool `json:"no_fusion,omitempty"`
	// GraphCapture says the steps after the first were replays of a
	// captured CUDA graph (-graph on, cuda.ExecOptions.GraphCapture);
	// Graph is the executor's cuda.Exec.GraphStatus after the timed steps.
	GraphCapture bool   `json:"graph_capture,omitempty"`
	Graph        string `json:"graph,omitempty"`
	// PeakBytes is the most device memory the executor held at once
	// (its buffers, parameters, gradients and Adam moments; not the CUDA
	// context nor cuBLAS's workspace), like torch.cuda.max_memory_allocated.
	PeakBytes int64    `json:"peak_device_bytes"`
	Fallback  []string `json:"fallback_ops"`
	// Plan is how the executor laid out its node buffers (cuda.MemoryPlan:
	// arena, scratch, the unplanned total, ops in place).
	Plan *cuda.MemoryPlan `json:"memory_plan,omitempty"`
	// PerStep is what one more step, after the timed ones, asked of the
	// device: kernel launches, matrix products, waits and copies
	// (cuda.ExecCounters).
	PerStep *cuda.ExecCounters `json:"per_step,omitempty"`
	// FLOPs is the step's counted floating-point operations (bench.FLOPs:
	// the language models' products; 0 for the in-context models), TFLOPS
	// the rate of the median step, and PeakFraction its share of the
	// GPU's float32 peak PeakTFLOPS (GPUModel's, from the device's name:
	// fp32Peak; 0 for a GPU not in gpuPeaks).
	FLOPs        float64 `json:"flops,omitempty"`
	TFLOPS       float64 `json:"tflops,omitempty"`
	GPUModel     string  `json:"gpu_model,omitempty"`
	PeakTFLOPS   float64 `json:"peak_fp32_tflops,omitempty"`
	PeakFraction float64 `json:"peak_fraction,omitempty"`
	Error        string  `json:"error,omitempty"`
}

// cmdTime times one float32 training step (forward, backward, AdamW or Adam
// on the device; parameters, gradients and moments resident) of each
// workload on the device, after -warmup untimed steps, for at least
// -min-steps steps and -min-time. A workload that fails (e.g. out of device
// memory) is reported with its error and the others still run.
func cmdTime(args []string, out *jsonLines) error {
	fs := cli.NewFlagSet("time")
	dev := fs.String("device", "cuda", "where the steps run: cuda or emulator")
	wl := fs.String("workloads", strings.Join(timeWorkloads, ","), "comma-separated bench workloads")
	warmup := fs.Int("warmup", 3, "untimed steps first, 1..1000")
	minSteps := fs.Int("min-steps", 10, "timed steps at least, 1..100000")
	maxSteps := fs.Int("max-steps", 0, "timed steps at most, 0..100000 (0: no limit)")
	minTime := fs.Duration("min-time", time.Second, "timed wall time at least, >= 0")
	fusion := fs.String("fusion", "on", "fused elementwise chains: on, or off (one launch per elementwise node, cuda.ExecOptions.NoFusion)")
	graphs := fs.String("graph", "off", "CUDA graph capture of the step: on (cuda.ExecOptions.GraphCapture), or off")
	if err := parseFlags(fs, args, "Float32 training step times and peak device memory of bench workloads on a device.", cli.Rules{
		"device": cli.OneOf("cuda", "emulator"), "workloads": cli.List(cli.NonEmpty), "warmup": cli.IntIn(1, 1000), "fusion": cli.OneOf("on", "off"), "graph": cli.OneOf("on", "off"),
		"min-steps": cli.IntIn(1, 100000), "max-steps": cli.IntIn(0, 100000), "min-time": cli.NonNegative,
	}); err != nil {
		return err
	}
	ws, err := workloads(*wl, "-workloads")
	if err != nil {
		return err
	}
	be, err := openDevice(*dev)
	if err != nil {
		return err
	}
	defer be.Close()
	name := be.Name()
	out.logf("time: device %s", name)
	failed := 0
	for _, w := range ws {
		r := timeResult{Kind: "time", Device: name, Workload: w.Name, Sizes: w.String(), Dtype: "float32", NoFusion: *fusion == "off", GraphCapture: *graphs == "on"}
		if err := timeOne(&r, w, be, *warmup, *minSteps, *maxSteps, *minTime); err != nil {
			failed++
			r.Error = err.Error()
			if err := out.emit(r, fmt.Sprintf("time %-20s FAILED: %v", w.Name, err)); err != nil {
				return err
			}
			continue
		}
		per := ""
		if r.FLOPs = bench.FLOPs(w, bench.Train); r.FLOPs > 0 && r.MedianMS > 0 {
			r.TFLOPS = r.FLOPs / (r.MedianMS / 1e3) / 1e12
			if model, peak, ok := fp32Peak(name); ok {
				r.GPUModel, r.PeakTFLOPS, r.PeakFraction = model, peak, r.TFLOPS/peak
			}
			per = "  " + peakShare(r.FLOPs, r.MedianMS, name)
		}
		if c := r.PerStep; c != nil {
			per += fmt.Sprintf("  per step %d launches, %d products, %d syncs, %d copies back", c.Launches, c.Gemms, c.Syncs, c.CopiesDtoH)
			if r.GraphCapture {
				per += fmt.Sprintf(", %d graph launches (%s)", c.GraphLaunches, r.Graph)
			}
		}
		if err := out.emit(r, fmt.Sprintf("time %-20s median %8.3f ms (%d steps, first %.0f ms)  peak device memory %7.1f MiB  host ops %v%s",
			w.Name, r.MedianMS, r.Steps, r.FirstMS, float64(r.PeakBytes)/(1<<20), r.Fallback, per)); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d workloads failed (see the JSON lines)", failed, len(ws))
	}
	return nil
}

// timeOne fills r with the timing of w on be.
func timeOne(r *timeResult, w bench.Workload, be cuda.Backend, warmup, minSteps, maxSteps int, minTime time.Duration) error {
	run, err := bench.NewRunner(w, tensor.Float32, bench.Train, 1)
	if err != nil {
		return err
	}
	defer run.Close()
	m := &meter{Backend: be, sizes: map[cuda.Ptr]int64{}}
	tr, mach, err := deviceTrainer(run, m, cuda.ExecOptions{NoFusion: r.NoFusion, GraphCapture: r.GraphCapture})
	if err != nil {
		return err
	}
	defer mach.Close()
	t0 := time.Now()
	if _, err := tr.Step(); err != nil {
		return err
	}
	r.FirstMS = ms(time.Since(t0))
	t, err := bench.Measure(func() error { _, err := tr.Step(); return err }, warmup-1, minSteps, maxSteps, minTime)
	if err != nil {
		return err
	}
	r.Steps, r.MedianMS, r.MeanMS, r.MinMS = t.Steps, ms(t.Median), ms(t.Mean), ms(t.Min)
	r.PeakBytes = m.Peak()
	r.Fallback = []string{}
	if x, ok := mach.Executor().(*cuda.Exec); ok {
		r.Fallback = append(r.Fallback, x.FallbackOps()...)
		p := x.MemoryPlan()
		r.Plan = &p
		c0 := x.Counters()
		if _, err := tr.Step(); err != nil {
			return err
		}
		c := x.Counters().Sub(c0)
		r.PerStep = &c
		if r.GraphCapture {
			_, r.Graph = x.GraphStatus()
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// meter is a Backend that counts the device memory allocated through it:
// the current total and the peak, like torch.cuda.max_memory_allocated.
type meter struct {
	cuda.Backend
	mu        sync.Mutex
	sizes     map[cuda.Ptr]int64
	cur, peak int64
}

// Alloc allocates through the wrapped backend and counts the bytes.
func (m *meter) Alloc(bytes int64) (cuda.Ptr, error) {
	p, err := m.Backend.Alloc(bytes)
	if err != nil {
		return p, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sizes[p] = bytes
	m.cur += bytes
	m.peak = max(m.peak, m.cur)
	return p, nil
}

// Free frees through the wrapped backend and uncounts the bytes.
func (m *meter) Free(p cuda.Ptr) error {
	m.mu.Lock()
	m.cur -= m.sizes[p]
	delete(m.sizes, p)
	m.mu.Unlock()
	return m.Backend.Free(p)
}

// Unwrap returns the wrapped backend: the executor takes its stream from it
// (cuda.ExecOptions.GraphCapture) and still allocates through the meter.
func (m *meter) Unwrap() cuda.Backend { return m.Backend }

// Peak returns the most bytes allocated at once.
func (m *meter) Peak() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.peak
}

// cmdPeerArgs prints, for each workload, its name, a tab and the arguments
// of "bench/peer/peer.py time" for the same model and sizes, float32
// training (what scripts/gpu-device.sh gives bench/peer/cuda_suite.py).
func cmdPeerArgs(args []string, stdout io.Writer) error {
	fs := cli.NewFlagSet("peer-args")
	wl := fs.String("workloads", strings.Join(timeWorkloads, ","), "comma-separated bench workloads")
	if err := parseFlags(fs, args, "The bench/peer/peer.py time arguments of bench workloads, one line each: name, tab, arguments.", cli.Rules{
		"workloads": cli.List(cli.NonEmpty),
	}); err != nil {
		return err
	}
	ws, err := workloads(*wl, "-workloads")
	if err != nil {
		return err
	}
	for _, w := range ws {
		fmt.Fprintf(stdout, "%s\t%s\n", w.Name, strings.Join(peerArgs(w), " "))
	}
	return nil
}

// peerArgs are peer.py's time arguments for w (bench/peer's pyCmd sizes).
func peerArgs(w bench.Workload) []string {
	a := []string{"--model", string(w.Model), "--depth", strconv.Itoa(max(w.Depth, 1)),
		"--batch", strconv.Itoa(w.Batch), "--dprime", strconv.Itoa(w.DPrime)}
	if w.Language() {
		a = append(a, "--vocab", strconv.Itoa(w.Vocab), "--context", strconv.Itoa(w.Context), "--heads", strconv.Itoa(w.Heads))
	} else {
		a = append(a, "--n", strconv.Itoa(w.N), "--d", strconv.Itoa(w.D), "--c", strconv.Itoa(w.C))
	}
	if w.Cross {
		a = append(a, "--cross")
	}
	if w.FF {
		a = append(a, "--ff")
	}
	return a
}
