package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/gdattn/gdattn/bench"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/cuda"
	"github.com/gdattn/gdattn/internal/cli"
	"github.com/gdattn/gdattn/train"
	"gorgonia.org/tensor"
)

// parityWorkloads are the models "gpu parity" compares by default: GD,
// Trained TF (2 layers, cross-attention), the GD language model and GPT, at
// the sizes of the benchmarks (the synthetic task at batch 512, the
// language models' small preset with the full GPT-2 vocabulary).
var parityWorkloads = []string{"synthetic/gd-2", "synthetic/tf-2", "language-small/gdlm", "language-small/gpt"}

// parityResult is one line of "gpu parity": one training step of one
// workload and dtype.
type parityResult struct {
	Kind     string  `json:"kind"` // "parity"
	Device   string  `json:"device"`
	Workload string  `json:"workload"`
	Sizes    string  `json:"sizes"`
	Dtype    string  `json:"dtype"`
	Step     int     `json:"step"`
	CPULoss  float64 `json:"cpu_loss"`
	DevLoss  float64 `json:"device_loss"`
	RelDiff  float64 `json:"rel_diff"`
	Tol      float64 `json:"tol"`
	OK       bool    `json:"ok"`
}

// cmdParity trains each workload for -steps steps twice from the same seed,
// on the CPU (Gorgonia's VM, host Adam) and on the device (graph/cuda's
// executor with parameters, gradients and Adam moments resident on the
// device, as the examples train), and compares the losses step by step: the
// relative difference must stay within 1e-10 in float64 and 1e-4 in
// float32. The optimiser is the workload's (bench.NewRunner: Adam at 1e-3
// for the in-context models, bench.LMTrainConfig for the language models).
func cmdParity(args []string, out *jsonLines) error {
	fs := cli.NewFlagSet("parity")
	dev := fs.String("device", "cuda", "the device compared with the CPU: cuda, emulator or cpu")
	steps := fs.Int("steps", 3, "training steps compared, 1..100")
	wl := fs.String("workloads", strings.Join(parityWorkloads, ","), "comma-separated bench workloads")
	dtypes := fs.String("dtypes", "float64,float32", "comma-separated dtypes: float64, float32")
	tol64 := fs.Float64("tol64", 1e-10, "largest relative loss difference in float64, > 0")
	tol32 := fs.Float64("tol32", 1e-4, "largest relative loss difference in float32, > 0")
	if err := parseFlags(fs, args, "The first training losses on the CPU and on a device, from the same seed.", cli.Rules{
		"device": cli.OneOf(deviceNames...), "steps": cli.IntIn(1, 100), "workloads": cli.List(cli.NonEmpty),
		"dtypes": cli.List(cli.OneOf("float64", "float32")), "tol64": cli.Positive, "tol32": cli.Positive,
	}); err != nil {
		return err
	}
	ws, err := workloads(*wl, "-workloads")
	if err != nil {
		return err
	}
	var dts []tensor.Dtype
	for _, s := range strings.Split(*dtypes, ",") {
		dt, err := graph.ParseDtype(strings.TrimSpace(s))
		if err != nil {
			return cli.Usagef("-dtypes: %v", err)
		}
		dts = append(dts, dt)
	}
	be, name, closeDevice, err := useDevice(*dev)
	if err != nil {
		return err
	}
	defer closeDevice()
	out.logf("parity: device %s, %d steps", name, *steps)
	bad := 0
	for _, w := range ws {
		for _, dt := range dts {
			tol := *tol64
			if dt == tensor.Float32 {
				tol = *tol32
			}
			cpu, err := trainLosses(w, dt, nil, *steps)
			if err != nil {
				return fmt.Errorf("%s %v on the CPU: %w", w.Name, dt, err)
			}
			got, err := trainLosses(w, dt, be, *steps)
			if err != nil {
				return fmt.Errorf("%s %v on %s: %w", w.Name, dt, *dev, err)
			}
			for i := range cpu {
				d := relDiff(got[i], cpu[i])
				r := parityResult{Kind: "parity", Device: name, Workload: w.Name, Sizes: w.String(), Dtype: dt.String(), Step: i + 1,
					CPULoss: cpu[i], DevLoss: got[i], RelDiff: d, Tol: tol, OK: d <= tol}
				if !r.OK {
					bad++
				}
				if err := out.emit(r, fmt.Sprintf("parity %-20s %-7v step %d  cpu %.12g  device %.12g  rel diff %.3g  %s",
					w.Name, dt, i+1, cpu[i], got[i], d, okWord(r.OK))); err != nil {
					return err
				}
			}
		}
	}
	if bad > 0 {
		return errOutOfTolerance
	}
	return nil
}

// trainLosses builds w (seed 1) and returns the losses of its first steps
// training steps: on the Go VM for a nil backend, else on the executor with
// device-resident parameters.
func trainLosses(w bench.Workload, dt tensor.Dtype, be cuda.Backend, steps int) ([]float64, error) {
	r, err := bench.NewRunner(w, dt, bench.Train, 1)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	step := r.Step
	if be != nil {
		tr, m, err := deviceTrainer(r, be, cuda.ExecOptions{})
		if err != nil {
			return nil, err
		}
		defer m.Close()
		step = tr.Step
	}
	losses := make([]float64, steps)
	for i := range losses {
		if losses[i], err = step(); err != nil {
			return nil, fmt.Errorf("step %d: %w", i+1, err)
		}
	}
	return losses, nil
}

// deviceTrainer compiles r's graph for the executor on be (parameters,
// gradients and Adam moments resident on the device) with the optimiser
// bench.NewRunner gives r's CPU machine; opts adds executor options
// (NoFusion, GraphCapture). The caller closes the machine.
func deviceTrainer(r *bench.Runner, be cuda.Backend, opts cuda.ExecOptions) (*train.Trainer, *graph.Machine, error) {
	opts.ResidentParams, opts.DeviceGrads, opts.Logf = true, true, discardf
	m, err := graph.NewMachine(r.Scope, r.Loss, graph.MachineOptions{Executor: cuda.NewExecutorWith(be, opts)})
	if err != nil {
		return nil, nil, err
	}
	tr, err := train.NewTrainer(m, workloadTrainConfig(r.W))
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	if !tr.OnDevice() {
		m.Close()
		return nil, nil, fmt.Errorf("the trainer does not update on the device (%s)", be.Name())
	}
	return tr, m, nil
}

// workloadTrainConfig is the optimiser bench.NewRunner trains w with.
func workloadTrainConfig(w bench.Workload) train.Config {
	if w.Language() {
		return bench.LMTrainConfig()
	}
	return train.Config{LR: 1e-3}
}

// workloads parses a comma-separated list of bench workload names.
func workloads(list, flagName string) ([]bench.Workload, error) {
	var ws []bench.Workload
	for _, n := range strings.Split(list, ",") {
		w, err := bench.FindWorkload(strings.TrimSpace(n))
		if err != nil {
			return nil, cli.Usagef("%s: %v", flagName, err)
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// relDiff is |a-b| / |b| (|a-b| where b is 0; +Inf for a NaN).
func relDiff(a, b float64) float64 {
	d := math.Abs(a - b)
	if math.IsNaN(d) {
		return math.Inf(1)
	}
	if b != 0 {
		d /= math.Abs(b)
	}
	return d
}
