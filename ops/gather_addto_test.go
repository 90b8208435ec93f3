package ops

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// f64bits returns the bits of a float32 or float64 tensor's elements.
func f64bits(t *testing.T, v G.Value) []uint64 {
	t.Helper()
	var out []uint64
	switch d := v.Data().(type) {
	case []float64:
		for _, x := range d {
			out = append(out, math.Float64bits(x))
		}
	case []float32:
		for _, x := range d {
			out = append(out, uint64(math.Float32bits(x)))
		}
	default:
		t.Fatalf("data %T", d)
	}
	return out
}

// denseOf returns a (rows, cols) tensor of dtype dt holding vals.
func denseOf(dt tensor.Dtype, rows, cols int, vals []float64) *tensor.Dense {
	if dt == tensor.Float32 {
		f := make([]float32, len(vals))
		for i, x := range vals {
			f[i] = float32(x)
		}
		return tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(f))
	}
	return tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(append([]float64(nil), vals...)))
}

// TestScatterAddTo checks ScatterOp.AddTo against Do followed by the
// elementwise addition in either order, bit for bit, float64 and float32,
// plain and centred, for widths below and above a vector, with ids
// repeated and absent and dst holding NaN, infinities and signed zeros on
// the rows of the ids (and, centred, everywhere); that rows without an id
// are left untouched by the plain op (a −0 there stays −0, which
// graph.NoNegZeroOp rules out); and that bad input leaves dst untouched.
func TestScatterAddTo(t *testing.T) {
	special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1e-310, 3e-39}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, center := range []bool{false, true} {
			for _, d := range []int{3, 37} {
				const v, n = 23, 17
				rng := rand.New(rand.NewPCG(uint64(d), uint64(dt.Size())))
				op := &ScatterOp{v: v, d: d, ids: tensor.Shape{n}, center: center}
				ref := &ScatterOp{v: v, d: d, ids: tensor.Shape{n}, center: center}
				for trial := 0; trial < 5; trial++ {
					ids := make([]int, n)
					used := map[int]bool{}
					for i := range ids {
						ids[i] = rng.IntN(5) * 3 // repeated; most rows absent
						if i%4 == 0 {
							ids[i] = rng.IntN(v)
						}
						used[ids[i]] = true
					}
					idv := tensor.New(tensor.WithShape(n), tensor.WithBacking(ids))
					gv := make([]float64, n*d)
					for i := range gv {
						gv[i] = rng.NormFloat64()
						if rng.IntN(5) == 0 {
							gv[i] = special[rng.IntN(len(special))]
						}
					}
					dv := make([]float64, v*d)
					for i := range dv {
						dv[i] = rng.NormFloat64()
						if (center || used[i/d]) && rng.IntN(4) == 0 {
							dv[i] = special[rng.IntN(len(special))]
						}
					}
					if !center {
						for r := 0; r < v; r++ {
							if !used[r] {
								dv[r*d] = math.Copysign(0, -1) // left alone
							}
						}
					}
					g := denseOf(dt, n, d, gv)
					s, err := ref.Do(idv, g)
					if err != nil {
						t.Fatal(err)
					}
					sb := f64bits(t, s)
					for _, dstFirst := range []bool{true, false} {
						dst := denseOf(dt, v, d, dv)
						before := f64bits(t, dst)
						ok, err := op.AddTo(dst, dstFirst, idv, g)
						if !ok || err != nil {
							t.Fatalf("%v: AddTo: %v, %v", dt, ok, err)
						}
						got := f64bits(t, dst)
						for i := range got {
							var want uint64
							a, b := before[i], sb[i]
							if !dstFirst {
								a, b = b, a
							}
							if dt == tensor.Float32 {
								want = uint64(math.Float32bits(math.Float32frombits(uint32(a)) + math.Float32frombits(uint32(b))))
							} else {
								want = math.Float64bits(math.Float64frombits(a) + math.Float64frombits(b))
							}
							if !center && !used[i/d] {
								want = before[i]
							}
							if got[i] != want {
								t.Fatalf("%v center %v d %d dstFirst %v: element %d (row %d, id used %v) bits %x, want %x (dst %x, S %x)", dt, center, d, dstFirst, i, i/d, used[i/d], got[i], want, before[i], sb[i])
							}
						}
					}
				}
				// Bad input: dst untouched.
				dst := denseOf(dt, v, d, make([]float64, v*d))
				g := denseOf(dt, n, d, make([]float64, n*d))
				for _, bad := range []int{-1, v} {
					ids := make([]int, n)
					ids[3] = bad
					ok, err := op.AddTo(dst, true, tensor.New(tensor.WithShape(n), tensor.WithBacking(ids)), g)
					if ok || err == nil || !strings.Contains(err.Error(), "outside") {
						t.Fatalf("%v: id %d: %v, %v", dt, bad, ok, err)
					}
				}
				ids := tensor.New(tensor.WithShape(n), tensor.WithBacking(make([]int, n)))
				other := tensor.Float64
				if dt == tensor.Float64 {
					other = tensor.Float32
				}
				if ok, err := op.AddTo(dst, true, ids, denseOf(other, n, d, make([]float64, n*d))); ok || err == nil {
					t.Fatalf("%v: a gradient of another dtype: %v, %v", dt, ok, err)
				}
				if ok, err := op.AddTo(dst, true, ids, denseOf(dt, n-1, d, make([]float64, (n-1)*d))); ok || err == nil {
					t.Fatalf("%v: a gradient of the wrong size: %v, %v", dt, ok, err)
				}
				if ok, err := op.AddTo(denseOf(dt, v-1, d, make([]float64, (v-1)*d)), true, ids, g); ok || err != nil {
					t.Fatalf("%v: dst of the wrong shape: %v, %v", dt, ok, err)
				}
				if ok, err := op.AddTo(dst, true, ids); ok || err == nil {
					t.Fatalf("%v: one input: %v, %v", dt, ok, err)
				}
				if ok, err := op.AddTo(dst, true, nil, g); ok || err == nil {
					t.Fatalf("%v: nil ids: %v, %v", dt, ok, err)
				}
				if ok, err := op.AddTo(nil, true, ids, g); ok || err != nil {
					t.Fatalf("%v: nil dst: %v, %v", dt, ok, err)
				}
				for i, b := range f64bits(t, dst) {
					if b != 0 {
						t.Fatalf("%v: bad input wrote element %d", dt, i)
					}
				}
			}
		}
	}
}

// TestTiedNoNegativeZero checks TiedLogitsOp's claim (NoNegativeZero) on
// products whose chains are made of signed zeros only (a factor of ±0
// times a negative or positive number) and of zeros among nonzero terms,
// through each product and the kernel paths its shapes take (narrow
// widths d ≤ 16, the packed kernels, a deep product over several KC
// slices, a deep narrow dW), float64 and float32: no element is −0.
func TestTiedNoNegativeZero(t *testing.T) {
	shapes := [][3]int{{3, 7, 5}, {40, 90, 8}, {70, 130, 64}, {600, 50, 33}, {1100, 60, 20}}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, sh := range shapes {
			n, v, d := sh[0], sh[1], sh[2]
			rng := rand.New(rand.NewPCG(uint64(n), uint64(d)))
			// dY: ±0 everywhere but in a few columns of two rows in
			// three; h, w: negative and positive, some rows all negative.
			dy := make([]float64, n*v)
			for i := range dy {
				if i/v%3 != 0 && i%v%5 == 1 && rng.IntN(2) == 0 {
					dy[i] = rng.NormFloat64()
				} else if rng.IntN(2) == 0 {
					dy[i] = math.Copysign(0, -1)
				}
			}
			h := make([]float64, n*d)
			for i := range h {
				h[i] = -rng.Float64() - 0.5
				if i/d%2 == 1 {
					h[i] = -h[i]
				}
				if rng.IntN(7) == 0 {
					h[i] = math.Copysign(0, -1)
				}
			}
			w := make([]float64, v*d)
			for i := range w {
				w[i] = -rng.Float64()
				if rng.IntN(3) == 0 {
					w[i] = math.Copysign(0, float64(rng.IntN(2))-0.5)
				}
			}
			// h with whole zero rows of either sign for the logits.
			hz := append([]float64(nil), h...)
			for i := 0; i < n*d; i += 2 * d {
				for j := 0; j < d; j++ {
					hz[i+j] = math.Copysign(0, -1)
				}
			}
			cases := []struct {
				mode TiedMode
				a, b *tensor.Dense
			}{
				{TiedForward, denseOf(dt, n, d, hz), denseOf(dt, v, d, w)},
				{TiedGradH, denseOf(dt, n, v, dy), denseOf(dt, v, d, w)},
				{TiedGradW, denseOf(dt, n, v, dy), denseOf(dt, n, d, h)},
			}
			for _, c := range cases {
				op := &TiedLogitsOp{n: n, v: v, d: d, mode: c.mode}
				if !op.NoNegativeZero() {
					t.Fatalf("%v: NoNegativeZero false", op)
				}
				out, err := op.Do(c.a, c.b)
				if err != nil {
					t.Fatal(err)
				}
				zeros := 0
				for i, b := range f64bits(t, out) {
					neg := b == 1<<63
					if dt == tensor.Float32 {
						neg = b == 1<<31
					}
					if neg {
						t.Fatalf("%v %v: element %d is −0", dt, op, i)
					}
					if b == 0 {
						zeros++
					}
				}
				if zeros == 0 {
					t.Fatalf("%v %v: no zero element: the test exercises nothing", dt, op)
				}
			}
		}
	}
}
