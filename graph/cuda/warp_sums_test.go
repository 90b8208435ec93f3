//go:build gdcuda || cudaemu

package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// The warp kernels of softmax.cu (softmax_rows_warp, softmax_grad_rows_warp)
// and the column sums (reduce4_warp, ln_param_warp, col_mean_warp), each
// against its own order evaluated in Go and against the serial or chunked
// kernel it replaces.

// kernelExp and kernelLog are the exp and log the kernels call; exactOrder
// says whether the Go evaluations of the kernels' orders must match bit for
// bit. On the emulator they are the C library's (emu_libm_test.go); on a
// GPU, CUDA's exp and log may differ from Go's in the last bit.
var (
	kernelExp  = math.Exp
	kernelLog  = math.Log
	exactOrder = false
)

// roundT rounds v to the element type (float32 when f32); the conversion
// also keeps Go from fusing a product into a later sum.
func roundT(f32 bool, v float64) float64 {
	if f32 {
		return float64(float32(v))
	}
	return float64(v)
}

// butterfly is the warp kernels' GDATTN_WARP_ALLREDUCE of sums: at each
// offset o = 16, 8, 4, 2, 1, lane l's new value is p[l] + p[l^o] of the
// old values; it returns lane 0's (every lane's) sum.
func butterfly(p [32]float64) float64 {
	for o := 16; o > 0; o >>= 1 {
		q := p
		for l := range p {
			p[l] = q[l] + q[l^o]
		}
	}
	return p[0]
}

// softmaxWarpOrder is softmax_rows_warp's row in its order: each lane's
// running (max, Σ exp) over its columns, the butterfly of gdattn_lse_join,
// then each lane's columns from its own pair.
func softmaxWarpOrder(row []float64, f32, lg bool) []float64 {
	var m, s [32]float64
	for l := range m {
		m[l] = math.Inf(-1)
		for j := l; j < len(row); j += 32 {
			v := row[j]
			if v > m[l] {
				if s[l] != 0 {
					s[l] = float64(s[l] * kernelExp(m[l]-v))
				}
				m[l] = v
			}
			if !math.IsInf(v, -1) {
				s[l] += kernelExp(v - m[l])
			}
		}
	}
	for o := 16; o > 0; o >>= 1 {
		pm, ps := m, s
		for l := range m {
			om, os := pm[l^o], ps[l^o]
			mx := om
			if pm[l] > om {
				mx = pm[l]
			}
			a, b := 0.0, 0.0
			if ps[l] != 0 {
				a = float64(ps[l] * kernelExp(pm[l]-mx))
			}
			if os != 0 {
				b = float64(os * kernelExp(om-mx))
			}
			m[l], s[l] = mx, a+b
		}
	}
	out := make([]float64, len(row))
	for j, v := range row {
		l := j % 32
		d := roundT(f32, v-roundT(f32, m[l]))
		if lg {
			out[j] = roundT(f32, d-kernelLog(s[l]))
		} else {
			inv := 1 / s[l]
			out[j] = roundT(f32, float64(kernelExp(d)*inv))
		}
	}
	return out
}

// softmaxGradWarpOrder is softmax_grad_rows_warp's row in its order.
func softmaxGradWarpOrder(y, dy []float64, f32, lg bool) []float64 {
	var p [32]float64
	for j := range y {
		if lg {
			p[j%32] += dy[j]
		} else {
			p[j%32] += float64(dy[j] * y[j])
		}
	}
	s := butterfly(p)
	out := make([]float64, len(y))
	for j := range y {
		if lg {
			out[j] = roundT(f32, dy[j]-float64(kernelExp(y[j])*s))
		} else {
			out[j] = roundT(f32, y[j]*(dy[j]-s))
		}
	}
	return out
}

// sameBits reports whether a and b are the same float64, NaNs equal.
func sameFloat(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
}

// near reports whether got is within rel of want (relative to max(1, |want|)),
// NaNs equal.
func near(got, want, rel float64) bool {
	if math.IsNaN(got) || math.IsNaN(want) {
		return math.IsNaN(got) && math.IsNaN(want)
	}
	if got == want { // infinities
		return true
	}
	return math.Abs(got-want) <= rel*math.Max(1, math.Abs(want))
}

// orderTol is the tolerance of a Go evaluation of a kernel's order that
// calls exp or log, when the kernels' exp and log are not Go's.
func orderTol(f32 bool) float64 {
	if f32 {
		return 3e-7
	}
	return 1e-13
}

// putT uploads v (values of the element type dt) to a new buffer.
func putT(t *testing.T, be Backend, dt tensor.Dtype, v []float64) Ptr {
	t.Helper()
	p := mustAlloc(t, be, int64(max(1, len(v))*int(dt.Size())))
	if len(v) == 0 {
		return p
	}
	if dt == tensor.Float32 {
		x := make([]float32, len(v))
		for i, f := range v {
			x[i] = float32(f)
		}
		put32(t, be, p, x)
	} else {
		put64(t, be, p, v)
	}
	return p
}

// getT downloads n values of the element type dt.
func getT(t *testing.T, be Backend, dt tensor.Dtype, p Ptr, n int) []float64 {
	t.Helper()
	if dt == tensor.Float64 {
		return get64(t, be, p, n)
	}
	x := get32(t, be, p, n)
	out := make([]float64, n)
	for i, f := range x {
		out[i] = float64(f)
	}
	return out
}

// randT returns n normal values times scale, rounded to dt.
func randT(rng *rand.Rand, dt tensor.Dtype, n int, scale float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = roundT(dt == tensor.Float32, scale*rng.NormFloat64())
	}
	return v
}

// TestSoftmaxWarp: softmax_rows_warp and softmax_grad_rows_warp, softmax and
// log-softmax, float64 and float32, rows of 1 to 3000 columns, against their
// orders evaluated in Go (bit for bit on the emulator) and against the
// serial kernels (within rounding); in place as the expectation op runs
// them; a row with −Inf entries, a row of −Inf and a row with a NaN.
func TestSoftmaxWarp(t *testing.T) {
	be, _ := execBackend(t)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		f32 := dt == tensor.Float32
		serialTol := 1e-13
		if f32 {
			serialTol = 3e-7
		}
		for _, c := range []int{1, 7, 32, 33, 64, 300, 3000} {
			for _, lg := range []bool{false, true} {
				name := fmt.Sprintf("%v/%d columns/log %v", dt, c, lg)
				const rows = 6
				x := randT(rng, dt, rows*c, 6)
				for j := 0; j < c; j += 3 { // row 3: some −Inf
					if j > 0 {
						x[3*c+j] = math.Inf(-1)
					}
				}
				for j := range c { // row 4: all −Inf
					x[4*c+j] = math.Inf(-1)
				}
				x[5*c+c/2] = math.NaN() // row 5: a NaN
				flag := int32(0)
				if lg {
					flag = 1
				}
				xp := putT(t, be, dt, x)
				yp := mustAlloc(t, be, int64(len(x)*int(dt.Size())))
				ys := mustAlloc(t, be, int64(len(x)*int(dt.Size())))
				must(t, be.Launch("softmax_rows_warp"+suffix(dt), rows, int64(rows), int32(c), flag, xp, yp))
				must(t, be.Launch("softmax_rows"+suffix(dt), rows, int64(rows), int32(c), flag, xp, ys))
				must(t, be.Sync())
				y, serial := getT(t, be, dt, yp, len(x)), getT(t, be, dt, ys, len(x))
				for r := range rows {
					want := softmaxWarpOrder(x[r*c:(r+1)*c], f32, lg)
					for j := range c {
						got := y[r*c+j]
						if exactOrder && !sameFloat(got, want[j]) || !exactOrder && !near(got, want[j], orderTol(f32)) {
							t.Fatalf("softmax_rows_warp %s: row %d column %d: %v, in the warp's order %v", name, r, j, got, want[j])
						}
						if !near(got, serial[r*c+j], serialTol) {
							t.Fatalf("softmax_rows_warp %s: row %d column %d: %v, serially %v", name, r, j, got, serial[r*c+j])
						}
					}
				}
				// In place (x = y), as the expectation op runs it.
				ip := putT(t, be, dt, x)
				must(t, be.Launch("softmax_rows_warp"+suffix(dt), rows, int64(rows), int32(c), flag, ip, ip))
				must(t, be.Sync())
				for i, v := range getT(t, be, dt, ip, len(x)) {
					if !sameFloat(v, y[i]) {
						t.Fatalf("softmax_rows_warp %s in place: element %d %v, out of place %v", name, i, v, y[i])
					}
				}

				// The gradient, from the forward's finite rows.
				yv := make([]float64, rows*c)
				copy(yv, y)
				for i := 3 * c; i < len(yv); i++ {
					yv[i] = roundT(f32, rng.Float64())
				}
				dy := randT(rng, dt, rows*c, 1)
				dy[5*c] = math.NaN()
				ypp, dyp := putT(t, be, dt, yv), putT(t, be, dt, dy)
				dxp, dxs := mustAlloc(t, be, int64(len(x)*int(dt.Size()))), mustAlloc(t, be, int64(len(x)*int(dt.Size())))
				must(t, be.Launch("softmax_grad_rows_warp"+suffix(dt), rows, int64(rows), int32(c), flag, ypp, dyp, dxp))
				must(t, be.Launch("softmax_grad_rows"+suffix(dt), rows, int64(rows), int32(c), flag, ypp, dyp, dxs))
				must(t, be.Sync())
				dx, dxSerial := getT(t, be, dt, dxp, len(x)), getT(t, be, dt, dxs, len(x))
				for r := range rows {
					want := softmaxGradWarpOrder(yv[r*c:(r+1)*c], dy[r*c:(r+1)*c], f32, lg)
					for j := range c {
						got := dx[r*c+j]
						exact := exactOrder || !lg // without exp, the device's bits too
						if exact && !sameFloat(got, want[j]) || !exact && !near(got, want[j], orderTol(f32)) {
							t.Fatalf("softmax_grad_rows_warp %s: row %d column %d: %v, in the warp's order %v", name, r, j, got, want[j])
						}
						if !near(got, dxSerial[r*c+j], 64*serialTol) {
							t.Fatalf("softmax_grad_rows_warp %s: row %d column %d: %v, serially %v", name, r, j, got, dxSerial[r*c+j])
						}
					}
				}
				// In place (dy = dx), as the expectation op runs it.
				must(t, be.Launch("softmax_grad_rows_warp"+suffix(dt), rows, int64(rows), int32(c), flag, ypp, dyp, dyp))
				must(t, be.Sync())
				for i, v := range getT(t, be, dt, dyp, len(x)) {
					if !sameFloat(v, dx[i]) {
						t.Fatalf("softmax_grad_rows_warp %s in place: element %d %v, out of place %v", name, i, v, dx[i])
					}
				}
			}
		}
	}
}

// reduceWarpOrder is reduce4_warp's sums in their order: for each output
// (the kept axes of d, the last fastest) lane l adds the summed elements
// r ≡ l (mod 32) in reduce_sum's order (the last summed axis fastest), in
// double; the butterfly joins the lanes; the sum is rounded to T.
func reduceWarpOrder(x []float64, d [4]int, mask int, f32 bool) []float64 {
	stride := [4]int{d[1] * d[2] * d[3], d[2] * d[3], d[3], 1}
	outs, R := 1, 1
	for a := range 4 {
		if mask>>a&1 == 1 {
			R *= d[a]
		} else {
			outs *= d[a]
		}
	}
	y := make([]float64, outs)
	for o := range outs {
		base, rem := 0, o
		for a := 3; a >= 0; a-- {
			if mask>>a&1 == 0 {
				base += rem % d[a] * stride[a]
				rem /= d[a]
			}
		}
		var p [32]float64
		for r := range R {
			off, rr := base, r
			for a := 3; a >= 0; a-- {
				if mask>>a&1 == 1 {
					off += rr % d[a] * stride[a]
					rr /= d[a]
				}
			}
			p[r%32] += x[off]
		}
		y[o] = roundT(f32, butterfly(p))
	}
	return y
}

// TestReduceWarp: reduce4_warp (a warp per output) against its order
// evaluated in Go, bit for bit (sums only: on a GPU too), and against the
// serial reduce4 within rounding, for column sums of 1 to 4096 rows and
// sums over several axes, float64 and float32.
func TestReduceWarp(t *testing.T) {
	be, _ := execBackend(t)
	rng := rand.New(rand.NewPCG(9, 10))
	cases := []struct {
		d    [4]int
		mask int
	}{
		{[4]int{1, 1, 1, 5}, 2}, {[4]int{1, 1, 31, 5}, 2}, {[4]int{1, 1, 33, 64}, 2}, {[4]int{1, 1, 257, 40}, 2},
		{[4]int{1, 1, 4096, 3}, 2}, {[4]int{1, 4, 257, 24}, 4}, {[4]int{3, 4, 5, 6}, 5}, {[4]int{3, 4, 5, 6}, 10},
		{[4]int{2, 70, 3, 1}, 9}, {[4]int{1, 1, 9, 100}, 1 | 2 | 4},
	}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		f32 := dt == tensor.Float32
		for _, tc := range cases {
			n := tc.d[0] * tc.d[1] * tc.d[2] * tc.d[3]
			x := randT(rng, dt, n, 3)
			want := reduceWarpOrder(x, tc.d, tc.mask, f32)
			outs := len(want)
			xp := putT(t, be, dt, x)
			yp, ys := mustAlloc(t, be, int64(outs*int(dt.Size()))), mustAlloc(t, be, int64(outs*int(dt.Size())))
			args := []any{xp, yp, int64(tc.d[0]), int64(tc.d[1]), int64(tc.d[2]), int64(tc.d[3]), int32(tc.mask)}
			must(t, be.Launch("reduce4_warp"+suffix(dt), int64(outs), append([]any{int64(outs)}, args...)...))
			args[1] = ys
			must(t, be.Launch("reduce4"+suffix(dt), int64(outs), append([]any{int64(outs)}, args...)...))
			must(t, be.Sync())
			got, serial := getT(t, be, dt, yp, outs), getT(t, be, dt, ys, outs)
			tol := 1e-12
			if f32 {
				tol = 3e-7
			}
			for o := range outs {
				if !sameFloat(got[o], want[o]) {
					t.Fatalf("reduce4_warp%s %v mask %d: output %d %v, in the warp's order %v", suffix(dt), tc.d, tc.mask, o, got[o], want[o])
				}
				if !near(got[o], serial[o], tol*math.Sqrt(float64(n/outs))) {
					t.Fatalf("reduce4_warp%s %v mask %d: output %d %v, serially %v", suffix(dt), tc.d, tc.mask, o, got[o], serial[o])
				}
			}
		}
	}
}

// TestColumnSumsWarp: the layer norm's parameter-gradient column sums
// (ln_param_warp, scale and bias) and the centered lookup's mean row
// (col_mean_warp), a warp per column, against their orders evaluated in Go,
// bit for bit, and against the chunked kernels they replace (ln_param_part
// and reduce_join, col_sum_part and col_mean_join) within rounding, for 1 to
// 4096 rows.
func TestColumnSumsWarp(t *testing.T) {
	be, _ := execBackend(t)
	rng := rand.New(rand.NewPCG(11, 12))
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		f32 := dt == tensor.Float32
		tol := 1e-12
		if f32 {
			tol = 3e-6
		}
		for _, sz := range [][2]int{{1, 3}, {31, 7}, {33, 64}, {257, 40}, {1024, 33}, {4096, 2}} {
			rows, d := sz[0], sz[1]
			x, dy := randT(rng, dt, rows*d, 2), randT(rng, dt, rows*d, 1)
			s4 := make([]float64, 4*rows)
			for r := range rows {
				s4[4*r] = roundT(f32, rng.NormFloat64())
				s4[4*r+1] = roundT(f32, 0.5+rng.Float64())
			}
			xp, dyp, s4p := putT(t, be, dt, x), putT(t, be, dt, dy), putT(t, be, dt, s4)
			chunks := int64(max(1, min(8, rows)))
			part := mustAlloc(t, be, chunks*int64(d)*8)
			for _, bias := range []int32{0, 1} {
				var p [32]float64
				want := make([]float64, d)
				for j := range d {
					p = [32]float64{}
					for r := range rows {
						g := dy[r*d+j]
						if bias == 0 {
							c := roundT(f32, roundT(f32, s4[4*r]+x[r*d+j])*s4[4*r+1])
							g = roundT(f32, c*g)
						}
						p[r%32] += g
					}
					want[j] = roundT(f32, butterfly(p))
				}
				op, oc := mustAlloc(t, be, int64(d*int(dt.Size()))), mustAlloc(t, be, int64(d*int(dt.Size())))
				must(t, be.Launch("ln_param_warp"+suffix(dt), int64(d), int64(d), int64(rows), bias, xp, s4p, dyp, op))
				must(t, be.Launch("ln_param_part"+suffix(dt), chunks*int64(d), chunks*int64(d), int64(rows), int32(d), int32(chunks), bias, xp, s4p, dyp, part))
				must(t, be.Launch("reduce_join"+suffix(dt), int64(d), int64(d), chunks, part, oc))
				must(t, be.Sync())
				got, chunked := getT(t, be, dt, op, d), getT(t, be, dt, oc, d)
				for j := range d {
					if !sameFloat(got[j], want[j]) {
						t.Fatalf("ln_param_warp%s %d×%d bias %d: column %d %v, in the warp's order %v", suffix(dt), rows, d, bias, j, got[j], want[j])
					}
					if !near(got[j], chunked[j], tol*math.Sqrt(float64(rows))) {
						t.Fatalf("ln_param_warp%s %d×%d bias %d: column %d %v, chunked %v", suffix(dt), rows, d, bias, j, got[j], chunked[j])
					}
				}
			}

			want := make([]float64, d)
			for j := range d {
				var p [32]float64
				for r := range rows {
					p[r%32] += x[r*d+j]
				}
				want[j] = butterfly(p) / float64(rows)
			}
			mp, mc := mustAlloc(t, be, int64(d*8)), mustAlloc(t, be, int64(d*8))
			must(t, be.Launch("col_mean_warp"+suffix(dt), int64(d), int64(d), int64(rows), xp, mp))
			must(t, be.Launch("col_sum_part"+suffix(dt), chunks*int64(d), chunks*int64(d), int64(rows), int32(d), int32(chunks), xp, part))
			must(t, be.Launch("col_mean_join", int64(d), int64(d), int32(chunks), int64(rows), part, mc))
			must(t, be.Sync())
			got, chunked := get64(t, be, mp, d), get64(t, be, mc, d)
			for j := range d {
				if !sameFloat(got[j], want[j]) {
					t.Fatalf("col_mean_warp%s %d×%d: column %d %v, in the warp's order %v", suffix(dt), rows, d, j, got[j], want[j])
				}
				if !near(got[j], chunked[j], 1e-13) {
					t.Fatalf("col_mean_warp%s %d×%d: column %d %v, chunked %v", suffix(dt), rows, d, j, got[j], chunked[j])
				}
			}
		}
	}
}
