//go:build gdcuda || cudaemu

package cuda

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"unsafe"

	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// scatterCase is one set of ids for the scatter kernels.
type scatterCase struct {
	name string
	v, d int
	ids  []int
}

// scatterCases: repeated ids out of order, one id for every row, a table
// of V rows not a multiple of the launch's block, columns of 1, 3 (work
// items of one id on different threads of the threaded emulator) and 33.
func scatterCases(rng *rand.Rand, labels bool) []scatterCase {
	lo := 0
	if labels {
		lo = -1
	}
	random := func(n, v int) []int {
		ids := make([]int, n)
		for i := range ids {
			ids[i] = lo + rng.IntN(v-lo)
		}
		return ids
	}
	same := make([]int, 40)
	for i := range same {
		same[i] = 5
	}
	cs := []scatterCase{
		{"repeated", 11, 3, []int{3, 1, 3, 0, 1, 3, 7, 0, 3, 10}},
		{"one id", 7, 33, same[:17]},
		{"one id, one column", 300, 1, same},
		{"random", 257, 33, random(200, 257)},
		{"random, few ids", 1000, 3, random(64, 1000)},
		{"random, small table", 3, 5, random(500, 3)},
	}
	if labels {
		cs = append(cs, scatterCase{"labels", 9, 4, []int{-1, 4, -1, 4, 0, -1, 8, 4}}, scatterCase{"no label", 9, 4, []int{-1, -1}})
	}
	return cs
}

// cpuScatter returns the host op's gradient (ops.ScatterOp, or with cols
// ops.ScatterColsOp) for ids and g, through the gathers' SymDiff.
func cpuScatter(t *testing.T, dt tensor.Dtype, c scatterCase, g []float64, cols bool) []float64 {
	t.Helper()
	gr := G.NewGraph()
	n := len(c.ids)
	idn := G.NewVector(gr, tensor.Int, G.WithShape(n), G.WithName("ids"))
	var w, out *G.Node
	var err error
	if cols {
		w = G.NewMatrix(gr, dt, G.WithShape(c.d, c.v), G.WithName("w"))
		out, err = ops.GatherCols(w, idn)
	} else {
		w = G.NewMatrix(gr, dt, G.WithShape(c.v, c.d), G.WithName("w"))
		out, err = ops.Gather(w, idn)
	}
	must(t, err)
	gn := G.NewMatrix(gr, dt, G.WithShape(n, c.d), G.WithName("g"))
	sd, ok := out.Op().(G.SDOp)
	if !ok {
		t.Fatalf("%T has no SymDiff", out.Op())
	}
	grads, err := sd.SymDiff(G.Nodes{w, idn}, out, gn)
	must(t, err)
	scatter := grads[0]
	gv := tensor.New(tensor.Of(dt), tensor.WithShape(n, c.d))
	for i, x := range g {
		switch d := gv.Data().(type) {
		case []float64:
			d[i] = x
		case []float32:
			d[i] = float32(x)
		}
	}
	res, err := scatter.Op().Do(tensor.New(tensor.WithBacking(append([]int(nil), c.ids...)), tensor.WithShape(n)), gv)
	must(t, err)
	outv := make([]float64, c.v*c.d)
	switch d := res.Data().(type) {
	case []float64:
		copy(outv, d)
	case []float32:
		for i, x := range d {
			outv[i] = float64(x)
		}
	}
	return outv
}

// runScatter launches scatter_rows (or scatter_cols) for ids and g into a
// buffer holding start, with the order sortScatter writes, and returns the
// buffer.
func runScatter(t *testing.T, be Backend, dt tensor.Dtype, c scatterCase, g, start []float64, cols bool) []float64 {
	t.Helper()
	n := len(c.ids)
	ord := make([]int64, 2*n+2)
	used := sortScatter(ord, make([]int64, 0, n), c.ids)
	op := mustAlloc(t, be, int64(len(ord))*8)
	must(t, be.CopyHtoD(op, unsafe.Pointer(&ord[0]), int64(used)*8))
	ids := make([]int64, n)
	for i, id := range c.ids {
		ids[i] = int64(id)
	}
	ip := mustAlloc(t, be, int64(n)*8)
	must(t, be.CopyHtoD(ip, unsafe.Pointer(&ids[0]), int64(n)*8))
	gp, bp := putT(t, be, dt, g), putT(t, be, dt, start)
	items := int64(n * c.d)
	if cols {
		must(t, be.Launch("scatter_cols"+suffix(dt), items, items, op, ip, gp, int32(c.d), int32(c.v), bp))
	} else {
		must(t, be.Launch("scatter_rows"+suffix(dt), items, items, op, ip, gp, int32(c.d), bp))
	}
	must(t, be.Sync())
	return getT(t, be, dt, bp, c.v*c.d)
}

// TestScatterKernels: scatter_rows and scatter_cols against the host ops
// (ops.ScatterOp, ops.ScatterColsOp: ids added in position order into a
// zeroed table) bit for bit, float64 and float32, and scatter_rows from a
// filled table (the centered lookup's start) against the same additions in
// Go; the ids repeated and out of order, one id for every row, tables of V
// rows not a multiple of a block. Deterministic by construction: every
// element of the table is written by one work item, which adds its id's
// rows in position order.
func TestScatterKernels(t *testing.T) {
	be, _ := execBackend(t)
	rng := rand.New(rand.NewPCG(21, 22))
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		f32 := dt == tensor.Float32
		for _, cols := range []bool{false, true} {
			for _, c := range scatterCases(rng, cols) {
				name := fmt.Sprintf("%v/cols=%v/%s", dt, cols, c.name)
				// Values of mixed magnitudes, so that the order of the
				// additions shows in the last bits.
				g := make([]float64, len(c.ids)*c.d)
				for i := range g {
					g[i] = roundT(f32, rng.NormFloat64()*float64(int(1)<<rng.IntN(20)))
				}
				want := cpuScatter(t, dt, c, g, cols)
				got := runScatter(t, be, dt, c, g, make([]float64, c.v*c.d), cols)
				for i := range want {
					if !sameFloat(got[i], want[i]) {
						t.Fatalf("%s: element %d is %v, the host op's %v", name, i, got[i], want[i])
					}
				}
				if cols {
					continue
				}
				start := randT(rng, dt, c.v*c.d, 3)
				want = append([]float64(nil), start...)
				for p, id := range c.ids {
					for j := range c.d {
						want[id*c.d+j] = roundT(f32, want[id*c.d+j]+g[p*c.d+j])
					}
				}
				got = runScatter(t, be, dt, c, g, start, false)
				for i := range want {
					if !sameFloat(got[i], want[i]) {
						t.Fatalf("%s from a filled table: element %d is %v, want %v", name, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// raceProbeEnv marks the child process of TestGPUKernelRacesCaught.
const raceProbeEnv = "GDATTN_RACE_PROBE"

// TestScatterRaceProbe launches scatter_rows with an order that is not
// sortScatter's: two segments for one id, so that two work items write the
// same element, the race the sorted order rules out. It runs only inside
// TestGPUKernelRacesCaught, which requires ThreadSanitizer to report it.
func TestScatterRaceProbe(t *testing.T) {
	if os.Getenv(raceProbeEnv) == "" {
		t.Skip("runs only inside TestGPUKernelRacesCaught (a deliberate race)")
	}
	be, _ := execBackend(t)
	// 2k ids 0, d = 1, in two segments of k positions: work items 0 and
	// 1 (threads 0 and 1 of the fake driver) both sum k values, then write
	// element 0. Long enough that the two threads run at the same time:
	// ThreadSanitizer sees a race only between accesses no lock orders,
	// and the fake driver's threads take a lock between launches.
	const k = 200000
	ord := make([]int64, 4*k+2)
	for p := range 2 * k {
		ord[p] = int64(p)
	}
	ord[2*k], ord[2*k+1], ord[2*k+2], ord[2*k+3] = 2, 0, k, 2*k
	op := mustAlloc(t, be, int64(len(ord))*8)
	must(t, be.CopyHtoD(op, unsafe.Pointer(&ord[0]), int64(len(ord))*8))
	ids := make([]int64, 2*k)
	ip := mustAlloc(t, be, 2*k*8)
	must(t, be.CopyHtoD(ip, unsafe.Pointer(&ids[0]), 2*k*8))
	g := make([]float64, 2*k)
	for i := range g {
		g[i] = 1
	}
	gp, bp := putT(t, be, tensor.Float64, g), putT(t, be, tensor.Float64, []float64{0})
	must(t, be.Launch("scatter_rows_f64", 2*k, int64(2*k), op, ip, gp, int32(1), bp))
	must(t, be.Sync())
}
