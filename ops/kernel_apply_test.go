package ops

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestQueryScoresBits checks queryScores (the column K·q of mulAddRows)
// against Gemm's q·kᵀ, bit for bit: float32 and float64, key counts
// around the kernels' 8- and 4-row groups, depths 0 to 130, with zeros,
// −0, huge and tiny values among the data.
func TestQueryScoresBits(t *testing.T) {
	testQueryScoresBits[float32](t)
	testQueryScoresBits[float64](t)
}

func testQueryScoresBits[F float32 | float64](t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 4))
	special := []float64{0, math.Copysign(0, -1), 1e30, -1e-30, 3}
	for _, tk := range []int{1, 3, 4, 7, 8, 9, 10, 12, 17, 50, 251} {
		for _, d := range []int{0, 1, 3, 5, 10, 33, 130} {
			q, k := make([]F, d), make([]F, tk*d)
			for i := range q {
				q[i] = F(rng.NormFloat64())
				if rng.IntN(6) == 0 {
					q[i] = F(special[rng.IntN(len(special))])
				}
			}
			for i := range k {
				k[i] = F(rng.NormFloat64())
				if rng.IntN(6) == 0 {
					k[i] = F(special[rng.IntN(len(special))])
				}
			}
			got, want := make([]F, tk), make([]F, tk)
			for i := range got {
				got[i], want[i] = F(rng.NormFloat64()), F(rng.NormFloat64()) // overwritten
			}
			Gemm(false, true, 1, tk, d, 1, q, max(d, 1), k, max(d, 1), 0, want, tk)
			for _, pad := range [][]F{nil, make([]F, padSize(d, 1))} {
				queryScores(tk, d, q, k, got, pad)
				for i := range got {
					if math.Float64bits(float64(got[i])) != math.Float64bits(float64(want[i])) {
						t.Fatalf("%T tk %d d %d pad %d: raw[%d] = %v, want %v (Gemm)", got[i], tk, d, len(pad), i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestTallRowsBits checks tallRows (the row tail as a padded group of
// eight) against mulAddRows bit for bit: row counts around the groups,
// rows of A and of Aᵀ, widths up to the column chunk, a pad that holds
// NaNs from before.
func TestTallRowsBits(t *testing.T) {
	testTallRowsBits[float32](t)
	testTallRowsBits[float64](t)
}

func testTallRowsBits[F float32 | float64](t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 11))
	for _, m := range []int{1, 2, 5, 7, 8, 9, 10, 15, 17, 126, 251} {
		for _, n := range []int{1, 3, 5, 8, 16} {
			for _, k := range []int{1, 3, 10, 40} {
				for _, trans := range []bool{false, true} {
					lda := k + 1
					rsA, incA, la := lda, 1, m*lda
					if trans {
						lda = m + 3
						rsA, incA, la = 1, lda, k*lda
					}
					a, b := make([]F, la), make([]F, k*(n+2))
					for i := range a {
						a[i] = F(rng.NormFloat64())
					}
					for i := range b {
						b[i] = F(rng.NormFloat64())
					}
					ldc := n + 1
					got, want := make([]F, m*ldc), make([]F, m*ldc)
					pad := make([]F, 8*(k+n))
					for i := range pad {
						pad[i] = F(math.NaN())
					}
					tallRows(m, n, k, a, rsA, incA, b, n+2, got, ldc, pad)
					mulAddRows(m, n, k, a, rsA, incA, b, n+2, want, ldc, false)
					for i := range got {
						if math.Float64bits(float64(got[i])) != math.Float64bits(float64(want[i])) {
							t.Fatalf("%T m %d n %d k %d trans %v: c[%d] = %v, want %v (mulAddRows)", got[i], m, n, k, trans, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestApplyBackwardKeptRaw checks the kernel-apply backward pass with the
// forward's raw scores kept against the pass that recomputes them, bit for
// bit: dr and dg, every kernel, one query row and several, float32 and
// float64.
func TestApplyBackwardKeptRaw(t *testing.T) {
	testApplyBackwardKeptRaw[float32](t)
	testApplyBackwardKeptRaw[float64](t)
}

func testApplyBackwardKeptRaw[F float32 | float64](t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	const b, tk, d, p = 3, 19, 10, 5
	for _, kind := range []KernelKind{KindLinear, KindRBF, KindExp, KindLaplacian, KindSoftmax} {
		for _, tq := range []int{1, 4} {
			a := applyArgs{kernelArgs: kernelArgs{b: b, tq: tq, tk: tk, d: d, g: 0.7}, p: p}
			fill := func(n int) []F {
				s := make([]F, n)
				for i := range s {
					s[i] = F(rng.NormFloat64() * 0.5)
				}
				return s
			}
			q, k, r, dout := fill(b*tq*d), fill(b*tk*d), fill(b*tk*p), fill(b*tq*p)
			w, w2 := make([]F, b*tq*tk), make([]F, b*tq*tk)
			rawAll := make([]F, b*tq*tk)
			out, out2 := make([]F, b*tq*p), make([]F, b*tq*p)
			applyForward(kind, a, q, k, r, w, make([]F, tq*tk), rawAll, out)
			applyForward(kind, a, q, k, r, w2, make([]F, tq*tk), nil, out2)
			dr, dr2 := make([]F, b*tk*p), make([]F, b*tk*p)
			dg := applyBackward(kind, true, a, q, k, r, w, rawAll, dout, dr, make([]F, tq*tk), make([]F, tq*tk))
			dg2 := applyBackward(kind, true, a, q, k, r, w2, nil, dout, dr2, make([]F, tq*tk), make([]F, tq*tk))
			for _, c := range []struct {
				name string
				x, y []F
			}{{"w", w, w2}, {"out", out, out2}, {"dr", dr, dr2}} {
				for i := range c.x {
					if math.Float64bits(float64(c.x[i])) != math.Float64bits(float64(c.y[i])) {
						t.Fatalf("%T %v tq %d: %s[%d] kept %v, recomputed %v", c.x[i], kind, tq, c.name, i, c.x[i], c.y[i])
					}
				}
			}
			if math.Float64bits(dg) != math.Float64bits(dg2) {
				t.Fatalf("%T %v tq %d: dg kept %v, recomputed %v", q[0], kind, tq, dg, dg2)
			}
			if kind != KindLinear && dg == 0 {
				t.Fatalf("%T %v tq %d: dg = 0", q[0], kind, tq)
			}
		}
	}
}

// TestOuterRowsBits checks applyDR for a single query row (outerRows32 on
// AVX2) against mulAddRows with k = 1, bit for bit, and that nothing past
// the sequence's block of dr is written: widths 1 to 8 and beyond, row
// counts 1 to 20, with −0, products that underflow, NaN and Inf.
func TestOuterRowsBits(t *testing.T) {
	testOuterRowsBits[float32](t)
	testOuterRowsBits[float64](t)
}

func testOuterRowsBits[F float32 | float64](t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 3))
	special := []float64{0, math.Copysign(0, -1), 1e-30, -1e-25, 1e-200, math.NaN(), math.Inf(-1), 2}
	for _, p := range []int{1, 2, 3, 5, 7, 8, 9} {
		for _, tk := range []int{1, 2, 3, 8, 9, 20} {
			const nb = 3
			w, dout := make([]F, nb*tk), make([]F, nb*p)
			for _, s := range [][]F{w, dout} {
				for i := range s {
					s[i] = F(rng.NormFloat64())
					if rng.IntN(4) == 0 {
						s[i] = F(special[rng.IntN(len(special))])
					}
				}
			}
			const guard = 7
			got, want := make([]F, nb*tk*p+guard), make([]F, nb*tk*p+guard)
			for i := range got {
				got[i], want[i] = 5, 5
			}
			pad := make([]F, padSize(1, p))
			for b := 0; b < nb; b++ {
				applyDR(1, tk, p, w, dout, got, b, pad)
				mulAddRows(tk, p, 1, w[b*tk:(b+1)*tk], 1, tk, dout[b*p:(b+1)*p], p, want[b*tk*p:(b+1)*tk*p], p, false)
			}
			for i := range got {
				if math.Float64bits(float64(got[i])) != math.Float64bits(float64(want[i])) {
					t.Fatalf("%T p %d tk %d: dr[%d] = %v, want %v (mulAddRows)", got[i], p, tk, i, got[i], want[i])
				}
			}
		}
	}
}

// TestApplyGradOrder runs a kernel-apply node's two gradient ops (values r
// and g) in either order, and the values' op twice, on one forward run: the
// same dr and dg bit for bit whichever op computes the shared pass (dr's op
// writes dr into its own output; g's op keeps it for dr's).
func TestApplyGradOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 1))
	const b, tk, d, p = 3, 13, 4, 5
	for _, tq := range []int{1, 3} {
		dense := func(shape ...int) *tensor.Dense {
			v := make([]float32, tensor.Shape(shape).TotalSize())
			for i := range v {
				v[i] = float32(rng.NormFloat64())
			}
			return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
		}
		q, k, r, dout := dense(b, tq, d), dense(b, tk, d), dense(b, tk, p), dense(b, tq, p)
		g := G.NewF32(0.6)
		var drs [3][]float32
		var dgs [3]float32
		for order := 0; order < 3; order++ {
			op := &KernelApplyOp{kern: KernelOp{kind: KindSoftmax, learnG: true, dataQK: true, c: &kernelCache{}}, c: &applyCache{}}
			out, err := op.Do(q, k, g, r)
			if err != nil {
				t.Fatal(err)
			}
			gr, gg := &KernelApplyGradOp{fwd: op, wrt: 3}, &KernelApplyGradOp{fwd: op, wrt: 2}
			in := []G.Value{q, k, g, r, out, dout}
			var dr, dg G.Value
			switch order {
			case 0: // r first
				if dr, err = gr.Do(in...); err == nil {
					dg, err = gg.Do(in...)
				}
			case 1: // g first
				if dg, err = gg.Do(in...); err == nil {
					dr, err = gr.Do(in...)
				}
			case 2: // r twice, into its previous output, then g
				if dr, err = gr.Do(in...); err == nil {
					if dr, err = gr.DoInto(dr, in...); err == nil {
						dg, err = gg.Do(in...)
					}
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			drs[order] = append([]float32(nil), dr.Data().([]float32)...)
			dgs[order] = dg.Data().(float32)
		}
		for order := 1; order < 3; order++ {
			if math.Float32bits(dgs[order]) != math.Float32bits(dgs[0]) || dgs[0] == 0 {
				t.Fatalf("tq %d order %d: dg %v, want %v (nonzero)", tq, order, dgs[order], dgs[0])
			}
			for i, v := range drs[order] {
				if math.Float32bits(v) != math.Float32bits(drs[0][i]) {
					t.Fatalf("tq %d order %d: dr[%d] = %v, want %v", tq, order, i, v, drs[0][i])
				}
			}
		}
	}
}
