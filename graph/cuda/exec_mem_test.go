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

// TestExecutorDeviceMemory builds the executors of the benchmark workloads
// (float32 training machines) and logs the device memory each would hold
// (before the Adam moments) and its fallback ops, which must be none.
//
//	go test ./graph/cuda -run TestExecutorDeviceMemory -v
func TestExecutorDeviceMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the paper-sized language models")
	}
	workloads := append(bench.ICLWorkloads(), bench.LM(bench.ModelGDLM, bench.LMPaper), bench.LM(bench.ModelGPT, bench.LMPaper))
	for _, w := range workloads {
		r, err := bench.NewRunner(w, tensor.Float32, bench.Train, 1)
		if err != nil {
			t.Fatal(err)
		}
		m, err := graph.NewMachine(r.Scope, r.Loss, graph.MachineOptions{Executor: NewExecutorWith(&countMem{}, ExecOptions{Logf: func(string, ...any) {}})})
		if err != nil {
			t.Fatal(err)
		}
		x := m.Executor().(*Exec)
		params := 0
		for _, p := range m.Params() {
			params += p.Shape().TotalSize()
		}
		t.Logf("%-22s %4d nodes, %7.1f MiB device memory (+%.1f MiB Adam moments), host ops: %v",
			w.Name, len(x.vals), float64(x.DeviceBytes())/(1<<20), float64(params*16)/(1<<20), x.FallbackOps())
		if fb := x.FallbackOps(); len(fb) > 0 {
			t.Errorf("%s: ops on the host: %v", w.Name, fb)
		}
		m.Close()
		r.Close()
	}
}
