//go:build gdcuda || cudaemu

package cuda

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"gorgonia.org/tensor"
)

// testBackend is the device self-test shared by the emulator and the GPU:
// copies, zeroing, every kernel of kernels/selftest.cu with every parameter
// kind, pointer offsets, atomics, a launch larger than the grid cap, the
// warp kernels' butterfly, and Gemm
// with all transposes, padding, batches and broadcast operands.
func testBackend(t *testing.T, be Backend) {
	t.Logf("backend: %s", be.Name())
	t.Run("copies", func(t *testing.T) { testCopies(t, be) })
	t.Run("kernels64", func(t *testing.T) { testKernels64(t, be) })
	t.Run("kernels32", func(t *testing.T) { testKernels32(t, be) })
	t.Run("warp", func(t *testing.T) { testWarpKernel(t, be) })
	t.Run("gemm", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					testGemmCase(t, be, rng, dt, 5, 3, 4, 1, ta, tb)
					testGemmCase(t, be, rng, dt, 7, 6, 9, 3, ta, tb)
					testGemmCase(t, be, rng, dt, 2, 4, 0, 2, ta, tb) // k = 0: C = beta·C
				}
			}
			testGemmBroadcast(t, be, rng, dt)
		}
	})
	t.Run("gemm_naive", func(t *testing.T) {
		// The kernel the GPU backend uses for Gemm without cuBLAS.
		rng := rand.New(rand.NewPCG(3, 4))
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					testGemmCaseVia(t, be, rng, dt, 5, 3, 4, 1, ta, tb, true)
					testGemmCaseVia(t, be, rng, dt, 7, 6, 9, 3, ta, tb, true)
					testGemmCaseVia(t, be, rng, dt, 2, 4, 0, 2, ta, tb, true)
				}
			}
		}
	})
}

func mustAlloc(t *testing.T, be Backend, bytes int64) Ptr {
	t.Helper()
	p, err := be.Alloc(bytes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := be.Free(p); err != nil {
			t.Errorf("Free: %v", err)
		}
	})
	return p
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func put64(t *testing.T, be Backend, p Ptr, v []float64) {
	t.Helper()
	must(t, be.CopyHtoD(p, unsafe.Pointer(&v[0]), int64(8*len(v))))
}

func get64(t *testing.T, be Backend, p Ptr, n int) []float64 {
	t.Helper()
	v := make([]float64, n)
	must(t, be.CopyDtoH(unsafe.Pointer(&v[0]), p, int64(8*n)))
	return v
}

func put32(t *testing.T, be Backend, p Ptr, v []float32) {
	t.Helper()
	must(t, be.CopyHtoD(p, unsafe.Pointer(&v[0]), int64(4*len(v))))
}

func get32(t *testing.T, be Backend, p Ptr, n int) []float32 {
	t.Helper()
	v := make([]float32, n)
	must(t, be.CopyDtoH(unsafe.Pointer(&v[0]), p, int64(4*n)))
	return v
}

func testCopies(t *testing.T, be Backend) {
	const n = 1000
	a := mustAlloc(t, be, 8*n)
	b := mustAlloc(t, be, 8*n)
	x := make([]float64, n)
	for i := range x {
		x[i] = float64(i) - 0.5
	}
	put64(t, be, a, x)
	must(t, be.CopyDtoD(b, a, 8*n))
	must(t, be.Zero(b+8*10, 8*5)) // elements 10..14
	must(t, be.Sync())
	got := get64(t, be, b, n)
	for i, v := range got {
		want := x[i]
		if i >= 10 && i < 15 {
			want = 0
		}
		if v != want {
			t.Fatalf("after CopyDtoD and Zero: element %d = %v, want %v", i, v, want)
		}
	}
	// Copies of zero bytes are allowed and do nothing.
	must(t, be.CopyDtoD(b, a, 0))
}

func testKernels64(t *testing.T, be Backend) {
	const n = 1000
	x := mustAlloc(t, be, 8*n)
	y := mustAlloc(t, be, 8*n)
	must(t, be.Launch("fill_f64", n, int64(n), 2.5, x))
	must(t, be.Launch("iota_f64", n, int64(n), 1.0, 1.0, int32(1), y)) // y = 1..n
	must(t, be.Launch("axpy_f64", n, int64(n), -2.0, x, y))            // y = i+1 - 5
	must(t, be.Launch("scale_f64", n/2, int64(n/2), 3.0, y+8*(n/2)))   // second half ×3
	must(t, be.Launch("fill_f64", 0, int64(0), 9.0, x))                // n = 0: nothing
	must(t, be.Sync())
	got := get64(t, be, y, n)
	for i, v := range got {
		want := float64(i+1) - 5
		if i >= n/2 {
			want *= 3
		}
		if v != want {
			t.Fatalf("fill/iota/axpy/scale f64: y[%d] = %v, want %v", i, v, want)
		}
	}
	if v := get64(t, be, x, 1)[0]; v != 2.5 {
		t.Fatalf("a launch with n = 0 changed memory: x[0] = %v", v)
	}
	// iota with stride 2 writes the even elements only.
	must(t, be.Launch("fill_f64", n, int64(n), -1.0, x))
	must(t, be.Launch("iota_f64", n/2, int64(n/2), 0.0, 0.5, int32(2), x))
	got = get64(t, be, x, n)
	for i, v := range got {
		want := -1.0
		if i%2 == 0 {
			want = float64(i/2) * 0.5
		}
		if v != want {
			t.Fatalf("iota f64 stride 2: x[%d] = %v, want %v", i, v, want)
		}
	}
	// sum with atomicAdd over 1..n.
	out := mustAlloc(t, be, 8)
	must(t, be.Zero(out, 8))
	must(t, be.Launch("iota_f64", n, int64(n), 1.0, 1.0, int32(1), y))
	must(t, be.Launch("sum_f64", n, int64(n), y, out))
	must(t, be.Sync())
	if s, want := get64(t, be, out, 1)[0], float64(n*(n+1)/2); math.Abs(s-want) > 1e-9*want {
		t.Fatalf("sum_f64 = %v, want %v", s, want)
	}
}

func testKernels32(t *testing.T, be Backend) {
	// More items than one grid of maxBlocks blocks covers, so that the
	// grid-stride loop runs more than once per thread on a GPU.
	const n = maxBlocks*threadsPerBlock + 1001
	x := mustAlloc(t, be, 4*n)
	must(t, be.Launch("fill_f32", n, int64(n), float32(0.25), x))
	must(t, be.Launch("scale_f32", n, int64(n), float32(4), x))
	must(t, be.Sync())
	got := get32(t, be, x, n)
	for i, v := range got {
		if v != 1 {
			t.Fatalf("fill/scale f32 over %d items: x[%d] = %v, want 1", n, i, v)
		}
	}
	const m = 1000
	y := mustAlloc(t, be, 4*m)
	must(t, be.Launch("iota_f32", m, int64(m), float32(1), float32(1), int32(1), y))
	must(t, be.Launch("axpy_f32", m, int64(m), float32(0.5), x, y)) // y = i+1.5
	out := mustAlloc(t, be, 4)
	must(t, be.Zero(out, 4))
	must(t, be.Launch("sum_f32", m, int64(m), y, out))
	must(t, be.Sync())
	gy := get32(t, be, y, m)
	for i, v := range gy {
		if want := float32(i) + 1.5; v != want {
			t.Fatalf("iota/axpy f32: y[%d] = %v, want %v", i, v, want)
		}
	}
	if s, want := get32(t, be, out, 1)[0], float32(m*(m+1)/2+m/2); math.Abs(float64(s-want)) > 1e-5*float64(want) {
		t.Fatalf("sum_f32 = %v, want %v", s, want)
	}
}

// gemmRef computes C_b = alpha·op(A_b)·op(B_b) + beta·C_b in float64.
func gemmRef(ta, tb bool, m, n, k int, alpha float64, a []float64, lda int, sA int,
	b []float64, ldb int, sB int, beta float64, c []float64, ldc int, sC int, batch int) {
	for bi := 0; bi < batch; bi++ {
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				s := 0.0
				for l := 0; l < k; l++ {
					ai, bj := bi*sA+i*lda+l, bi*sB+l*ldb+j
					if ta {
						ai = bi*sA + l*lda + i
					}
					if tb {
						bj = bi*sB + j*ldb + l
					}
					av, bv := a[ai], b[bj]
					s += av * bv
				}
				ci := bi*sC + i*ldc + j
				if beta == 0 {
					c[ci] = alpha * s
				} else {
					c[ci] = alpha*s + beta*c[ci]
				}
			}
		}
	}
}

// gemmRun uploads a, b, c in dtype dt, runs Gemm (or, with viaKernel, the
// gemm_naive kernel) and returns C as float64.
func gemmRun(t *testing.T, be Backend, dt tensor.Dtype, ta, tb bool, m, n, k int, alpha float64,
	a []float64, lda, sA int, b []float64, ldb, sB int, beta float64, c []float64, ldc, sC, batch int, viaKernel bool) []float64 {
	t.Helper()
	es := int64(8)
	if dt == tensor.Float32 {
		es = 4
	}
	up := func(v []float64) Ptr {
		p := mustAlloc(t, be, es*int64(len(v)))
		if dt == tensor.Float32 {
			v32 := make([]float32, len(v))
			for i, x := range v {
				v32[i] = float32(x)
			}
			put32(t, be, p, v32)
		} else {
			put64(t, be, p, v)
		}
		return p
	}
	pa, pb, pc := up(a), up(b), up(c)
	if viaKernel {
		name, items := "gemm_naive_f64", int64(batch*m*n)
		if dt == tensor.Float32 {
			name = "gemm_naive_f32"
		}
		b2i := func(v bool) int32 {
			if v {
				return 1
			}
			return 0
		}
		must(t, be.Launch(name, items, items, b2i(ta), b2i(tb), int32(m), int32(n), int32(k), alpha,
			pa, int32(lda), int64(sA), pb, int32(ldb), int64(sB), beta, pc, int32(ldc), int64(sC)))
	} else {
		must(t, be.Gemm(dt, ta, tb, m, n, k, alpha, pa, lda, int64(sA), pb, ldb, int64(sB), beta, pc, ldc, int64(sC), batch))
	}
	must(t, be.Sync())
	if dt == tensor.Float32 {
		g := get32(t, be, pc, len(c))
		out := make([]float64, len(c))
		for i, x := range g {
			out[i] = float64(x)
		}
		return out
	}
	return get64(t, be, pc, len(c))
}

func randSlice(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.Float64()*2 - 1
	}
	return v
}

// testGemmCase checks one Gemm shape with padded leading dimensions and
// padded batch strides against gemmRef.
func testGemmCase(t *testing.T, be Backend, rng *rand.Rand, dt tensor.Dtype, m, n, k, batch int, ta, tb bool) {
	t.Helper()
	testGemmCaseVia(t, be, rng, dt, m, n, k, batch, ta, tb, false)
}

// testGemmCaseVia is testGemmCase through Backend.Gemm or, with viaKernel,
// the gemm_naive kernel.
func testGemmCaseVia(t *testing.T, be Backend, rng *rand.Rand, dt tensor.Dtype, m, n, k, batch int, ta, tb, viaKernel bool) {
	t.Helper()
	aRows, aCols := m, k
	if ta {
		aRows, aCols = k, m
	}
	bRows, bCols := k, n
	if tb {
		bRows, bCols = n, k
	}
	lda, ldb, ldc := aCols+1, bCols+2, n+1
	sA, sB, sC := max(1, aRows)*lda+3, max(1, bRows)*ldb+1, m*ldc+2
	a := randSlice(rng, max(1, batch*sA))
	b := randSlice(rng, max(1, batch*sB))
	c := randSlice(rng, batch*sC)
	alpha, beta := 0.75, -0.5
	if batch%2 == 0 {
		beta = 0
	}
	want := append([]float64(nil), c...)
	if dt == tensor.Float32 { // the reference sees the rounded inputs
		for _, v := range [][]float64{a, b, c, want} {
			for i := range v {
				v[i] = float64(float32(v[i]))
			}
		}
	}
	gemmRef(ta, tb, m, n, k, alpha, a, lda, sA, b, ldb, sB, beta, want, ldc, sC, batch)
	got := gemmRun(t, be, dt, ta, tb, m, n, k, alpha, a, lda, sA, b, ldb, sB, beta, c, ldc, sC, batch, viaKernel)
	tol := 1e-12
	if dt == tensor.Float32 {
		tol = 1e-5
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol*(1+math.Abs(want[i])) {
			t.Fatalf("Gemm %v transA=%v transB=%v m=%d n=%d k=%d batch=%d: C[%d] = %v, want %v (padding included)",
				dt, ta, tb, m, n, k, batch, i, got[i], want[i])
		}
	}
}

// testGemmBroadcast checks batch stride 0 on A (one A for every batch), the
// pattern of x·W with x batched and W shared (here on the B side, too).
func testGemmBroadcast(t *testing.T, be Backend, rng *rand.Rand, dt tensor.Dtype) {
	const m, n, k, batch = 3, 4, 5, 3
	for _, side := range []string{"A", "B"} {
		sA, sB := m*k, k*n
		if side == "A" {
			sA = 0
		} else {
			sB = 0
		}
		a := randSlice(rng, max(m*k, batch*sA))
		b := randSlice(rng, max(k*n, batch*sB))
		c := make([]float64, batch*m*n)
		want := append([]float64(nil), c...)
		if dt == tensor.Float32 {
			for _, v := range [][]float64{a, b} {
				for i := range v {
					v[i] = float64(float32(v[i]))
				}
			}
		}
		gemmRef(false, false, m, n, k, 1, a, k, sA, b, n, sB, 0, want, n, m*n, batch)
		got := gemmRun(t, be, dt, false, false, m, n, k, 1, a, k, sA, b, n, sB, 0, c, n, m*n, batch, false)
		for i := range got {
			if math.Abs(got[i]-want[i]) > 1e-5*(1+math.Abs(want[i])) {
				t.Fatalf("Gemm %v with stride 0 on %s: C[%d] = %v, want %v", dt, side, i, got[i], want[i])
			}
		}
	}
}

// warpSum is the warp kernels' sum of row (kernels/common.h) evaluated
// directly: lane l adds the elements j ≡ l (mod 32) in order, then the
// butterfly p'[l] = p[l] + p[l^o] for o = 16, 8, 4, 2, 1; it returns every
// lane's final value.
func warpSum(row []float64) [32]float64 {
	var p [32]float64
	for j, v := range row {
		p[j%32] += v
	}
	for o := 16; o > 0; o >>= 1 {
		var q [32]float64
		for l := range q {
			q[l] = p[l] + p[l^o]
		}
		p = q
	}
	return p
}

// testWarpKernel: warp_rowsum (one warp per row, lanes reading with a
// stride of 32, the __shfl_xor_sync butterfly) gives, on every lane, the
// bits of warpSum, which differ from the serial sum's on some rows (so
// that a serial or otherwise reordered sum fails) and agree with it within
// rounding; rows of 0 to 1000 columns, float64 and float32 elements, and
// more rows than one grid has warps (the warp-stride loop).
func testWarpKernel(t *testing.T, be Backend) {
	rng := rand.New(rand.NewPCG(7, 8))
	cols := []int{0, 1, 5, 31, 32, 33, 64, 100, 1000}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		var xs []float64
		for _, c := range cols {
			for range c {
				// Magnitudes over twelve decades, both signs: the order of
				// the additions shows in the last bits.
				v := (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(12)-6))
				if dt == tensor.Float32 {
					v = float64(float32(v))
				}
				xs = append(xs, v)
			}
		}
		// One launch per row length (c is a kernel argument), each over
		// rows of that length.
		off, serialDiffers := 0, 0
		for _, c := range cols {
			const rows = 3
			x := make([]float64, rows*c)
			for r := range rows {
				copy(x[r*c:], xs[off:off+c])
				if r > 0 {
					for j := range c { // other rows: the same values, rotated
						x[r*c+j] = xs[off+(j+r)%c]
					}
				}
			}
			off += c
			xp := mustAlloc(t, be, int64(8*max(1, len(x))))
			kernel := "warp_rowsum_f64"
			if dt == tensor.Float32 {
				kernel = "warp_rowsum_f32"
				x32 := make([]float32, max(1, len(x)))
				for i, v := range x {
					x32[i] = float32(v)
				}
				put32(t, be, xp, x32)
			} else if len(x) > 0 {
				put64(t, be, xp, x)
			}
			y := mustAlloc(t, be, 8*32*rows)
			must(t, be.Launch(kernel, rows, int64(rows), int32(c), xp, int32(1), y))
			one := mustAlloc(t, be, 8*rows)
			must(t, be.Launch(kernel, rows, int64(rows), int32(c), xp, int32(0), one))
			must(t, be.Sync())
			got, got0 := get64(t, be, y, 32*rows), get64(t, be, one, rows)
			for r := range rows {
				row := x[r*c : (r+1)*c]
				want := warpSum(row)
				serial := 0.0
				for _, v := range row {
					serial += v
				}
				if math.Float64bits(serial) != math.Float64bits(want[0]) {
					serialDiffers++
				}
				for l := range 32 {
					if math.Float64bits(got[32*r+l]) != math.Float64bits(want[l]) || math.Float64bits(want[l]) != math.Float64bits(want[0]) {
						t.Fatalf("%s, %d columns, row %d, lane %d: %v, want %v (the butterfly's, every lane)", kernel, c, r, l, got[32*r+l], want[0])
					}
				}
				if math.Float64bits(got0[r]) != math.Float64bits(want[0]) {
					t.Fatalf("%s, %d columns, row %d: lane 0 wrote %v, want %v", kernel, c, r, got0[r], want[0])
				}
				scale := 0.0
				for _, v := range row {
					scale += math.Abs(v)
				}
				if math.Abs(want[0]-serial) > 1e-14*scale {
					t.Fatalf("%d columns, row %d: butterfly %v, serial %v", c, r, want[0], serial)
				}
			}
		}
		if serialDiffers == 0 {
			t.Fatalf("%v: no row's serial sum differs from the butterfly's: the test cannot tell the orders apart", dt)
		}
	}
	// More rows than the grid's warps (maxBlocks blocks of
	// threadsPerBlock/32 warps): the warp-stride loop takes the rest.
	const rows = maxBlocks*(threadsPerBlock/32) + 37
	const c = 2
	x := make([]float64, rows*c)
	for i := range x {
		x[i] = float64(i % 1001)
	}
	xp := mustAlloc(t, be, 8*rows*c)
	put64(t, be, xp, x)
	y := mustAlloc(t, be, 8*rows)
	must(t, be.Launch("warp_rowsum_f64", rows, int64(rows), int32(c), xp, int32(0), y))
	must(t, be.Sync())
	for r, v := range get64(t, be, y, rows) {
		if want := x[2*r] + x[2*r+1]; v != want {
			t.Fatalf("warp_rowsum_f64 over %d rows: y[%d] = %v, want %v", rows, r, v, want)
		}
	}
}
