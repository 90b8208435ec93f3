package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"sort"
	"strings"
	"time"
	"unsafe"

	"github.com/gdattn/gdattn/bench"
	"github.com/gdattn/gdattn/graph/cuda"
	"github.com/gdattn/gdattn/internal/cli"
	"gorgonia.org/tensor"
)

// profileResult is one line of "gpu profile": where one float32 training
// step of a workload spends its time, by device call.
type profileResult struct {
	Kind     string `json:"kind"` // "profile"
	Device   string `json:"device"`
	Workload string `json:"workload"`
	Sizes    string `json:"sizes"`
	Steps    int    `json:"steps"`
	// StepMS is the mean wall time of a profiled step (every device call
	// synchronised, so longer than an unprofiled step); DeviceMS the part
	// spent inside device calls, HostMS the rest (Go code between calls).
	StepMS   float64        `json:"step_ms"`
	DeviceMS float64        `json:"device_ms"`
	HostMS   float64        `json:"host_ms"`
	Calls    []profileEntry `json:"calls"`
	// PlainStepMS is the mean step without synchronisation, under the
	// CPU profiler written to CPUProfile (-cpuprofile).
	PlainStepMS float64 `json:"plain_step_ms,omitempty"`
	CPUProfile  string  `json:"cpu_profile,omitempty"`
	Error       string  `json:"error,omitempty"`
}

// profileEntry is the time of one kind of device call per step.
type profileEntry struct {
	What  string  `json:"what"` // kernel name, or "gemm" with its sizes, or a copy
	Calls float64 `json:"calls_per_step"`
	MS    float64 `json:"ms_per_step"`
}

// cmdProfile runs -steps float32 training steps of each workload on the
// device with every device call synchronised and timed (profiler), after
// -warmup untimed steps, and prints the calls that take the time.
func cmdProfile(args []string, out *jsonLines) error {
	fs := cli.NewFlagSet("profile")
	dev := fs.String("device", "cuda", "where the steps run: cuda or emulator")
	wl := fs.String("workloads", "language-paper/gdlm", "comma-separated bench workloads")
	warmup := fs.Int("warmup", 2, "untimed steps first, 1..1000")
	steps := fs.Int("steps", 5, "profiled steps, 1..10000")
	top := fs.Int("top", 25, "calls listed per workload, 1..1000")
	cpuprof := fs.String("cpuprofile", "", "also run -steps unsynchronised steps of each workload under the Go CPU profiler, written to this file prefix (<prefix><n>.pprof, n the workload's index)")
	if err := parseFlags(fs, args, "Where a float32 training step of bench workloads spends its time on a device, by kernel and product.", cli.Rules{
		"device": cli.OneOf("cuda", "emulator"), "workloads": cli.List(cli.NonEmpty), "warmup": cli.IntIn(1, 1000),
		"steps": cli.IntIn(1, 10000), "top": cli.IntIn(1, 1000), "cpuprofile": cli.Any,
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
	failed := 0
	for i, w := range ws {
		r := profileResult{Kind: "profile", Device: be.Name(), Workload: w.Name, Sizes: w.String(), Steps: *steps}
		pf := ""
		if *cpuprof != "" {
			pf = fmt.Sprintf("%s%d.pprof", *cpuprof, i)
		}
		if err := profileOne(&r, w, be, *warmup, *steps, *top, pf); err != nil {
			failed++
			r.Error = err.Error()
			if err := out.emit(r, fmt.Sprintf("profile %-20s FAILED: %v", w.Name, err)); err != nil {
				return err
			}
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "profile %s: step %.3f ms (device calls %.3f, host %.3f)", w.Name, r.StepMS, r.DeviceMS, r.HostMS)
		for _, e := range r.Calls {
			fmt.Fprintf(&b, "\n  %9.3f ms %7.1f× %s", e.MS, e.Calls, e.What)
		}
		if err := out.emit(r, b.String()); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d workloads failed (see the JSON lines)", failed, len(ws))
	}
	return nil
}

// profileOne fills r with the profile of w on be.
func profileOne(r *profileResult, w bench.Workload, be cuda.Backend, warmup, steps, top int, cpuprofile string) error {
	run, err := bench.NewRunner(w, tensor.Float32, bench.Train, 1)
	if err != nil {
		return err
	}
	defer run.Close()
	p := &profiler{Backend: be, acc: map[string]*profileAcc{}}
	tr, mach, err := deviceTrainer(run, p, cuda.ExecOptions{})
	if err != nil {
		return err
	}
	defer mach.Close()
	for range warmup {
		if _, err := tr.Step(); err != nil {
			return err
		}
	}
	p.on = true
	t0 := time.Now()
	for range steps {
		if _, err := tr.Step(); err != nil {
			return err
		}
	}
	wall := time.Since(t0)
	p.on = false
	n := float64(steps)
	var inside time.Duration
	for k, a := range p.acc {
		inside += a.d
		r.Calls = append(r.Calls, profileEntry{What: k, Calls: float64(a.calls) / n, MS: ms(a.d) / n})
	}
	sort.Slice(r.Calls, func(i, j int) bool { return r.Calls[i].MS > r.Calls[j].MS })
	if len(r.Calls) > top {
		r.Calls = r.Calls[:top]
	}
	r.StepMS, r.DeviceMS = ms(wall)/n, ms(inside)/n
	r.HostMS = r.StepMS - r.DeviceMS
	if cpuprofile == "" {
		return nil
	}
	f, err := os.Create(cpuprofile)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	t0 = time.Now()
	for range steps {
		if _, err := tr.Step(); err != nil {
			pprof.StopCPUProfile()
			return err
		}
	}
	r.PlainStepMS = ms(time.Since(t0)) / n
	pprof.StopCPUProfile()
	r.CPUProfile = cpuprofile
	return f.Close()
}

// profiler is a Backend that, while on, synchronises after every call and
// adds the call's wall time to its kind: the kernel's name, a product's
// sizes, or a copy's direction.
type profiler struct {
	cuda.Backend
	on  bool
	acc map[string]*profileAcc
}

type profileAcc struct {
	calls int
	d     time.Duration
}

// timed runs f and, while on, synchronises and counts its time under what.
func (p *profiler) timed(what func() string, f func() error) error {
	if !p.on {
		return f()
	}
	t0 := time.Now()
	err := f()
	if err == nil {
		err = p.Backend.Sync()
	}
	d := time.Since(t0)
	k := what()
	a := p.acc[k]
	if a == nil {
		a = &profileAcc{}
		p.acc[k] = a
	}
	a.calls++
	a.d += d
	return err
}

// Launch times a kernel launch under the kernel's name.
func (p *profiler) Launch(name string, n int64, args ...any) error {
	return p.timed(func() string { return "kernel " + name }, func() error { return p.Backend.Launch(name, n, args...) })
}

// Gemm times a product under its sizes.
func (p *profiler) Gemm(dt tensor.Dtype, transA, transB bool, m, n, k int, alpha float64,
	a cuda.Ptr, lda int, sA int64, b cuda.Ptr, ldb int, sB int64,
	beta float64, c cuda.Ptr, ldc int, sC int64, batch int) error {
	return p.timed(func() string {
		return fmt.Sprintf("gemm %v m=%d n=%d k=%d batch=%d tA=%v tB=%v beta=%g", dt, m, n, k, batch, transA, transB, beta)
	}, func() error {
		return p.Backend.Gemm(dt, transA, transB, m, n, k, alpha, a, lda, sA, b, ldb, sB, beta, c, ldc, sC, batch)
	})
}

// CopyHtoD times an upload.
func (p *profiler) CopyHtoD(dst cuda.Ptr, src unsafe.Pointer, bytes int64) error {
	return p.timed(func() string { return "copy host→device" }, func() error { return p.Backend.CopyHtoD(dst, src, bytes) })
}

// CopyDtoH times a download.
func (p *profiler) CopyDtoH(dst unsafe.Pointer, src cuda.Ptr, bytes int64) error {
	return p.timed(func() string { return "copy device→host" }, func() error { return p.Backend.CopyDtoH(dst, src, bytes) })
}

// CopyDtoD times a device copy.
func (p *profiler) CopyDtoD(dst, src cuda.Ptr, bytes int64) error {
	return p.timed(func() string { return "copy device→device" }, func() error { return p.Backend.CopyDtoD(dst, src, bytes) })
}

// Zero times a fill with zeros.
func (p *profiler) Zero(ptr cuda.Ptr, bytes int64) error {
	return p.timed(func() string { return "zero" }, func() error { return p.Backend.Zero(ptr, bytes) })
}
