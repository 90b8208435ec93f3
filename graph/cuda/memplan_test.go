package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/ops"
	"github.com/gdattn/gdattn/train"
	"gorgonia.org/tensor"
)

// TestPackGreedy checks the arena layout on random live ranges: buffers
// live at the same step never share bytes, offsets are aligned, the arena
// holds every buffer and is at least the most bytes live at one step; and
// on a hand-made case, the exact layout.
func TestPackGreedy(t *testing.T) {
	// a (3 units, steps 0-1), b (2 units, 1-2), c (2 units, 2-3), d (1
	// unit, 3-4): a and b overlap, so b goes above a; c reuses a's bytes
	// (a is dead at step 2); d fits in a's bytes above c.
	u := int64(planAlign)
	blocks := []*planBlock{
		{size: 3 * u, first: 0, last: 1}, {size: 2 * u, first: 1, last: 2},
		{size: 2 * u, first: 2, last: 3}, {size: 1 * u, first: 3, last: 4},
	}
	if got := packGreedy(blocks); got != 5*u {
		t.Errorf("arena %d units, want 5", got/u)
	}
	for i, want := range []int64{0, 3, 0, 2} {
		if blocks[i].off != want*u {
			t.Errorf("block %d at %d units, want %d", i, blocks[i].off/u, want)
		}
	}
	if got := liveBytes(blocks, 4); got != 5*u {
		t.Errorf("live %d units, want 5", got/u)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for trial := 0; trial < 200; trial++ {
		n := 1 + rng.IntN(40)
		var bs []*planBlock
		var total int64
		for i := 0; i < 1+rng.IntN(60); i++ {
			first := rng.IntN(n+1) - 1
			b := &planBlock{size: alignUp(int64(1 + rng.IntN(5000))), first: first, last: first + rng.IntN(n+1-first)}
			bs = append(bs, b)
			total += b.size
		}
		arena := packGreedy(bs)
		if live := liveBytes(bs, n); arena < live || arena > total {
			t.Fatalf("trial %d: arena %d, live %d, total %d", trial, arena, live, total)
		}
		for i, a := range bs {
			if a.off%planAlign != 0 || a.off < 0 || a.off+a.size > arena {
				t.Fatalf("trial %d: block %d at %d (+%d) in an arena of %d", trial, i, a.off, a.size, arena)
			}
			for _, b := range bs[i+1:] {
				if a.first <= b.last && b.first <= a.last && a.off < b.off+b.size && b.off < a.off+a.size {
					t.Fatalf("trial %d: blocks live at once share bytes: %+v and %+v", trial, *a, *b)
				}
			}
		}
	}
}

// sameBits fails t unless got and want hold the same float64 bit patterns.
func sameBits(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d values, want %d", what, len(got), len(want))
		return
	}
	for i := range want {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Errorf("%s[%d] = %v, without the memory plan %v", what, i, got[i], want[i])
			return
		}
	}
}

// TestMemoryPlanSameResults runs every test model through the executor with
// the memory plan and without it (ExecOptions.NoMemoryPlan), twice each,
// and requires the same loss, outputs and gradients bit for bit; then
// trains four models for a few steps both ways with the parameters
// resident and the gradients on the device, and requires the same losses,
// parameters and moments bit for bit. Bit for bit on the emulator, whose
// kernels run serially; a GPU, the fake driver's threads and the CPU
// fallback's multi-threaded sums accumulate atomics and partial sums in no
// fixed order, so there it compares within execTol.
func TestMemoryPlanSameResults(t *testing.T) {
	be, device := execBackend(t)
	serial := device && strings.HasPrefix(be.Name(), "emulator")
	check := func(t *testing.T, what string, got, want []float64, dt tensor.Dtype) {
		t.Helper()
		if serial {
			sameBits(t, what, got, want)
		} else if d := relDiff(got, want); d > execTol(dt) {
			t.Errorf("%s differs by %.3g (relative) from the run without the memory plan", what, d)
		}
	}
	run := func(t *testing.T, name string, dt tensor.Dtype, noPlan bool) []snapshot {
		m, err := buildModel(name, dt, 5)
		if err != nil {
			t.Fatal(err)
		}
		opts := ExecOptions{HostOnly: !device, NoMemoryPlan: noPlan, Logf: func(string, ...any) {}}
		mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Executor: NewExecutorWith(be, opts), Outputs: m.outputs})
		if err != nil {
			t.Fatal(err)
		}
		defer mach.Close()
		p := mach.Executor().(*Exec).MemoryPlan()
		if p.Planned == noPlan {
			t.Fatalf("plan %+v with NoMemoryPlan %v", p, noPlan)
		}
		// The logits are among the Outputs, read back after Run: the
		// cross-entropy's gradient must not overwrite them.
		if found, shared := xentInPlace(mach.Executor().(*Exec)); found && shared {
			t.Errorf("the cross-entropy's gradient overwrites the logits, which are read back")
		}
		var out []snapshot
		for r := 0; r < 2; r++ {
			if err := mach.Run(); err != nil {
				t.Fatal(err)
			}
			out = append(out, takeSnapshot(t, m, mach))
		}
		return out
	}
	for _, name := range modelNames {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(fmt.Sprintf("%s/%v", name, dt), func(t *testing.T) {
				got, want := run(t, name, dt, false), run(t, name, dt, true)
				for r := range want {
					check(t, fmt.Sprintf("run %d loss", r), []float64{got[r].loss}, []float64{want[r].loss}, dt)
					for i := range want[r].outputs {
						check(t, fmt.Sprintf("run %d output %d", r, i), got[r].outputs[i], want[r].outputs[i], dt)
					}
					for p, g := range want[r].grads {
						check(t, fmt.Sprintf("run %d gradient of %q", r, p), got[r].grads[p], g, dt)
					}
				}
			})
		}
	}
	cfg := train.Config{Optimizer: "adamw", LR: 0.05, WeightDecay: 0.1, ClipNorm: 0.05}
	for _, name := range []string{"gd-structured-softmax", "tf-cross", "gdlm", "gpt"} {
		t.Run("train/"+name, func(t *testing.T) {
			// Without Outputs the language models' cross-entropy gradient
			// overwrites the logits, its last reader, on the device.
			m, err := buildModel(name, tensor.Float32, 9)
			if err != nil {
				t.Fatal(err)
			}
			mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Executor: NewExecutorWith(be, ExecOptions{HostOnly: !device, Logf: func(string, ...any) {}})})
			if err != nil {
				t.Fatal(err)
			}
			lm := name == "gdlm" || name == "gpt"
			if found, shared := xentInPlace(mach.Executor().(*Exec)); found != lm || shared != (lm && device) {
				t.Errorf("cross-entropy gradient found %v, in place %v; want %v, %v", found, shared, lm, lm && device)
			}
			if device && mach.Executor().(*Exec).MemoryPlan().InPlace == 0 {
				t.Error("no op in place")
			}
			mach.Close()
			const steps = 3
			factory := func(noPlan bool) graph.ExecutorFactory {
				return NewExecutorWith(be, ExecOptions{HostOnly: !device, ResidentParams: true, DeviceGrads: true, NoMemoryPlan: noPlan, Logf: func(string, ...any) {}})
			}
			gl, gp, gs := trainSteps(t, name, tensor.Float32, factory(false), cfg, steps, device)
			wl, wp, ws := trainSteps(t, name, tensor.Float32, factory(true), cfg, steps, device)
			check(t, "losses", gl, wl, tensor.Float32)
			for n, w := range wp {
				check(t, "parameter "+n, gp[n], w, tensor.Float32)
				check(t, "first moment of "+n, gs.M[n], ws.M[n], tensor.Float32)
				check(t, "second moment of "+n, gs.V[n], ws.V[n], tensor.Float32)
			}
		})
	}
}

// xentInPlace reports whether x's program has a sparse cross-entropy
// gradient and whether the plan let it overwrite its logits.
func xentInPlace(x *Exec) (found, shared bool) {
	for _, v := range x.vals {
		if op, ok := v.n.Op().(*ops.SparseCrossEntropyOp); ok && op.Backward() {
			found = true
			shared = shared || (v.shares != nil && v.shares == blockOwner(v.ins[0]))
		}
	}
	return found, shared
}
