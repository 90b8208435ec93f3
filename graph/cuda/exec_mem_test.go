//go:build !cudaemu && !gdcuda

package cuda

import (
	"testing"
	"unsafe"

	"github.com/gdattn/gdattn/bench"
	"github.com/gdattn/gdattn/graph"
	"gorgonia.org/tensor"
)

// countMem is a Backend that hands out addresses without memory: enough to
// build executors and count what they would allocate on a device.
type countMem struct {
	hostMem
	next Ptr
}

func (c *countMem) Alloc(b int64) (Ptr, error) {
	c.next += Ptr(b + 256)
	return c.next, nil
}
func (c *countMem) Free(Ptr) error                            { return nil }
func (c *countMem) CopyHtoD(Ptr, unsafe.Pointer, int64) error { return nil }

// memPlanOf builds the float32 training machine of workload w the way
// `gpu time` does (resident parameters, gradients on the device) on a
// counting backend and returns its executor's memory plan, planned or not.
func memPlanOf(t *testing.T, w bench.Workload, noPlan bool) (MemoryPlan, int, []string) {
	t.Helper()
	r, err := bench.NewRunner(w, tensor.Float32, bench.Train, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	opts := ExecOptions{ResidentParams: true, DeviceGrads: true, NoMemoryPlan: noPlan, Logf: func(string, ...any) {}}
	m, err := graph.NewMachine(r.Scope, r.Loss, graph.MachineOptions{Executor: NewExecutorWith(&countMem{}, opts)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	x := m.Executor().(*Exec)
	if got, want := x.DeviceBytes(), x.MemoryPlan().ArenaBytes+x.MemoryPlan().ScratchBytes; noPlan && got > want || !noPlan && got != want {
		t.Errorf("%s: DeviceBytes %d, plan's arena and scratch %d", w.Name, got, want)
	}
	return x.MemoryPlan(), len(x.vals), x.FallbackOps()
}

// TestExecutorDeviceMemory lays out the device memory of the benchmark
// workloads' executors (float32 training machines, before the Adam
// moments), logs the plan against one buffer per node, checks that no op
// falls back to the host, and pins the planned peak of the paper-size
// language models: the exact bytes the plan computes (a change to the
// graphs, the lowering or the planner shows here) and an upper bound
// relative to the unplanned executor.
//
//	go test ./graph/cuda -run TestExecutorDeviceMemory -v
func TestExecutorDeviceMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the paper-sized language models")
	}
	// The planned peak (arena + scratch) in bytes, and its most allowed
	// fraction of the unplanned executor's.
	pinned := map[string]struct {
		arena, scratch int64
		frac           float64
	}{
		"language-paper/gdlm": {474028032, 5316888, 0.5},
		"language-paper/gpt":  {487273728, 16859416, 0.5},
	}
	workloads := append(bench.ICLWorkloads(), bench.LM(bench.ModelGDLM, bench.LMPaper), bench.LM(bench.ModelGPT, bench.LMPaper))
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	for _, w := range workloads {
		p, nodes, fb := memPlanOf(t, w, false)
		u, _, _ := memPlanOf(t, w, true)
		t.Logf("%-22s %4d nodes %4d buffers (%3d pinned, %d in place): planned %7.1f MiB (arena %7.1f, live %7.1f, scratch %6.1f), unplanned %7.1f MiB (nodes %7.1f), host ops: %v",
			w.Name, nodes, p.Buffers, p.Pinned, p.InPlace, mib(p.ArenaBytes+p.ScratchBytes), mib(p.ArenaBytes), mib(p.LiveBytes), mib(p.ScratchBytes),
			mib(u.ArenaBytes+u.ScratchBytes), mib(u.NodeBytes), fb)
		t.Logf("%-22s arena %d (live %d) scratch %d bytes; unplanned %d", w.Name, p.ArenaBytes, p.LiveBytes, p.ScratchBytes, u.ArenaBytes+u.ScratchBytes)
		if len(fb) > 0 {
			t.Errorf("%s: ops on the host: %v", w.Name, fb)
		}
		if !p.Planned || u.Planned || p.NodeBytes != u.NodeBytes || p.ScratchBytes != u.ScratchBytes || p.Buffers+p.InPlace != u.Buffers {
			t.Errorf("%s: planned %+v and unplanned %+v disagree on the buffers", w.Name, p, u)
		}
		if p.LiveBytes > p.ArenaBytes || p.ArenaBytes > p.NodeBytes {
			t.Errorf("%s: live %d, arena %d, all nodes %d bytes: want live <= arena <= nodes", w.Name, p.LiveBytes, p.ArenaBytes, p.NodeBytes)
		}
		want, ok := pinned[w.Name]
		if !ok {
			continue
		}
		if p.ArenaBytes != want.arena || p.ScratchBytes != want.scratch {
			t.Errorf("%s: planned arena %d + scratch %d bytes, want %d + %d", w.Name, p.ArenaBytes, p.ScratchBytes, want.arena, want.scratch)
		}
		if peak, base := p.ArenaBytes+p.ScratchBytes, u.ArenaBytes+u.ScratchBytes; float64(peak) > want.frac*float64(base) {
			t.Errorf("%s: planned peak %d bytes is %.3f of the unplanned %d, want at most %.2f", w.Name, peak, float64(peak)/float64(base), base, want.frac)
		}
	}
}
