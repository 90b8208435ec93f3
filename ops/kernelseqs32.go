package ops

import (
	"math"
	"sync"

	gemmpkg "github.com/gdattn/gdattn/gemm"
)

// The float32 dot-product kernels (linear, exp, softmax) of KernelOp on
// AVX2, restructured for the language models' causal heads (T of 64-257
// queries and keys, widths of 8-512) and giving the bits of
// kernelForwardSeqs and kernelBackwardSeqs, which they replace there.

// kernelRowsScratch holds the buffers of kernelForwardRows32 and
// kernelBackwardRows32, reused between calls (from kernelRowsPool).
type kernelRowsScratch struct {
	coef               []float64 // (Tq, Tk): the coefficients c_ji of a sequence
	rlo, rhi, clo, chi []int     // the rows' ranges of kept keys, the keys' of rows
	sums               []float64 // softmax: the rows' Σ_i W dW
	q64, k64, dots     []float64 // forward: a sequence's q and k, a block's q·k
}

// kernelRowsPool keeps the scratches of the kernel rows between calls.
var kernelRowsPool sync.Pool

// getKernelRowsScratch returns a scratch from kernelRowsPool, or a new one.
func getKernelRowsScratch() *kernelRowsScratch {
	if sp, ok := kernelRowsPool.Get().(*kernelRowsScratch); ok {
		return sp
	}
	return new(kernelRowsScratch)
}

// kernelRowsBackward reports whether kernelBackwardSeqs of these inputs
// runs as kernelBackwardRows32.
func kernelRowsBackward(kind KernelKind, d int, dq, dk any) bool {
	if !haveAxpyAVX2 || !kind.DotProduct() || d <= 0 || d%8 != 0 {
		return false
	}
	q32, ok1 := dq.([]float32)
	k32, ok2 := dk.([]float32)
	return ok1 && ok2 && (q32 != nil || k32 != nil)
}

// kernelBackwardRows32 is kernelBackwardSeqs for the float32 dot-product
// kernels with d a multiple of 8, on AVX2, in three passes per sequence
// instead of one over the pairs (j, i): first the coefficients c_ji of k_i
// in dq_j and of q_j in dk_i (zero for a masked pair; with needDG, dg's
// terms added in the same order as there), then each dq_j over i and each
// dk_i over j with the vector held in registers (axpyRows32), skipping the
// zero c_ji as kernelBackwardSeqs skips them. Every element of dq and dk
// receives the same products in the same order, so the same bits. Without
// needDG it returns 0.
func kernelBackwardRows32(kind KernelKind, a kernelArgs, q, k, keep, w, dw, dq, dk, raw []float32, needDG bool, lo, hi int) float64 {
	d, tq, tk := a.d, a.tq, a.tk
	if tq == 0 || tk == 0 {
		return 0
	}
	sp := getKernelRowsScratch()
	defer kernelRowsPool.Put(sp)
	sp.coef = grow(sp.coef, tq*tk)
	sp.rlo, sp.rhi = grow(sp.rlo, tq), grow(sp.rhi, tq)
	sp.clo, sp.chi = grow(sp.clo, tk), grow(sp.chi, tk)
	sp.sums = grow(sp.sums, tq)
	coef, rlo, rhi, clo, chi, sums := sp.coef, sp.rlo, sp.rhi, sp.clo, sp.chi, sp.sums
	var dg float64
	for b := lo; b < hi; b++ {
		o := b * tq * tk
		if kind == KindSoftmax {
			rowSums(w[o:o+tq*tk], dw[o:o+tq*tk], tk, sums)
		}
		for j := 0; j < tq; j++ {
			o := (b*tq + j) * tk
			cr := coef[j*tk : (j+1)*tk]
			// The kept keys lie in rl..rh-1 (all of them without a mask).
			rl, rh := 0, tk
			var kr []float32
			if keep != nil {
				kr = keep[o : o+tk]
				rl, rh = keptRange32(kr)
			}
			rlo[j], rhi[j] = rl, rh
			if rl >= rh {
				clear(cr)
				continue
			}
			clear(cr[:rl])
			clear(cr[rh:])
			wr, dr, rr := w[o+rl:o+rh], dw[o+rl:o+rh], raw[o+rl:o+rh]
			cr = cr[rl:rh]
			if kr != nil {
				kr = kr[rl:rh]
			}
			dr, rr, cr = dr[:len(wr)], rr[:len(wr)], cr[:len(wr)]
			switch kind {
			case KindLinear:
				for i, dwi := range dr {
					if kr != nil && kr[i] == 0 {
						cr[i] = 0
						continue
					}
					cr[i] = float64(dwi)
				}
			case KindExp:
				for i, wi := range wr {
					if kr != nil && kr[i] == 0 {
						cr[i] = 0
						continue
					}
					e := float64(dr[i]) * float64(wi)
					cr[i] = a.g * e
					if needDG {
						dg += e * float64(rr[i])
					}
				}
			case KindSoftmax:
				rowSum := sums[j]
				i0 := 0
				if !needDG && kr != nil && len(wr) >= 4 {
					// Four at a time, the masked pairs' coefficients +0.
					i0 = len(wr) &^ 3
					softmaxCoefs32(&cr[0], &wr[0], &dr[0], &kr[:len(wr)][0], i0, rowSum, a.g)
				}
				for i := i0; i < len(wr); i++ {
					wi := wr[i]
					if kr != nil && kr[i] == 0 {
						cr[i] = 0
						continue
					}
					e := float64(wi) * (float64(dr[i]) - rowSum)
					cr[i] = a.g * e
					if needDG {
						dg += e * float64(rr[i])
					}
				}
			}
		}
		keyRanges(rlo, rhi, clo, chi)
		if dq != nil {
			for j := 0; j < tq; j++ {
				if rl, rh := rlo[j], rhi[j]; rl < rh {
					axpyRows32(dq[(b*tq+j)*d:(b*tq+j+1)*d], k[(b*tk+rl)*d:(b+1)*tk*d], d, coef[j*tk+rl:(j+1)*tk], 1, rh-rl)
				}
			}
		}
		if dk != nil {
			for i := 0; i < tk; i++ {
				if cl, ch := clo[i], chi[i]; cl < ch {
					axpyRows32(dk[(b*tk+i)*d:(b*tk+i+1)*d], q[(b*tq+cl)*d:(b+1)*tq*d], d, coef[cl*tk+i:], tk, ch-cl)
				}
			}
		}
	}
	if !needDG {
		return 0
	}
	return dg
}

// rowSums sets sums[r] = Σ_i w[r·n + i]·dw[r·n + i] in float64, each in
// index order from +0 (kernelBackwardSeqs' row sums, the same bits), four
// rows at a time so that their chains of additions overlap.
func rowSums(w, dw []float32, n int, sums []float64) {
	rows := len(w) / n
	r := 0
	for ; r+4 <= rows; r += 4 {
		o := r * n
		w0, w1, w2, w3 := w[o:o+n], w[o+n:o+2*n], w[o+2*n:o+3*n], w[o+3*n:o+4*n]
		d0, d1, d2, d3 := dw[o:o+n], dw[o+n:o+2*n], dw[o+2*n:o+3*n], dw[o+3*n:o+4*n]
		w1, w2, w3 = w1[:len(w0)], w2[:len(w0)], w3[:len(w0)]
		d0, d1, d2, d3 = d0[:len(w0)], d1[:len(w0)], d2[:len(w0)], d3[:len(w0)]
		var s0, s1, s2, s3 float64
		for i := range w0 {
			s0 += float64(w0[i]) * float64(d0[i])
			s1 += float64(w1[i]) * float64(d1[i])
			s2 += float64(w2[i]) * float64(d2[i])
			s3 += float64(w3[i]) * float64(d3[i])
		}
		sums[r], sums[r+1], sums[r+2], sums[r+3] = s0, s1, s2, s3
	}
	for ; r < rows; r++ {
		o := r * n
		var s float64
		for i, wi := range w[o : o+n] {
			s += float64(wi) * float64(dw[o+i])
		}
		sums[r] = s
	}
}

// kernelRowsBlock is the number of query rows whose scores
// kernelForwardRows32 computes in one product.
const kernelRowsBlock = 64

// kernelRowsForward reports whether kernelForwardSeqs of these inputs runs
// as kernelForwardRows32.
func kernelRowsForward(kind KernelKind, d int, q any, fast bool) bool {
	_, ok := q.([]float32)
	return ok && !fast && kind.DotProduct() && haveAxpyAVX2 && haveExpAVX2 && d > 0
}

// kernelForwardRows32 is kernelForwardSeqs for the float32 dot-product
// kernels on AVX2 where that computes the scores row by row (with a mask,
// or without raw): the same weights and raw scores, bit for bit. Per
// sequence, the scores q_j·k_i of a block of kernelRowsBlock query rows
// over the keys their rows keep are one float64 product (package gemm: each
// element one chain of fused multiply-adds from zero over the d products in
// order, the products of float32 values exact in float64, so the sums
// keyDots forms); each row's kept keys lie in a range found eight at a time
// (keptRange32), and a softmax row whose kept keys are contiguous takes its
// exponentials four at a time (expChunk32: Exp32's bits, the sum in index
// order) and its division eight at a time (divRow32). NaN scores may carry
// another NaN payload.
func kernelForwardRows32(kind KernelKind, a kernelArgs, q, k, keep, w, raw []float32, lo, hi int) {
	d, tq, tk := a.d, a.tq, a.tk
	if tq == 0 || tk == 0 {
		return
	}
	sp := getKernelRowsScratch()
	defer kernelRowsPool.Put(sp)
	sp.q64, sp.k64 = grow(sp.q64, tq*d), grow(sp.k64, tk*d)
	sp.dots = grow(sp.dots, kernelRowsBlock*tk)
	sp.rlo, sp.rhi = grow(sp.rlo, tq), grow(sp.rhi, tq)
	q64, k64, dots, rlo, rhi := sp.q64, sp.k64, sp.dots, sp.rlo, sp.rhi
	for b := lo; b < hi; b++ {
		for i, v := range q[b*tq*d : (b+1)*tq*d] {
			q64[i] = float64(v)
		}
		// k64 holds Kᵀ (d × Tk), so that the product reads its rows as
		// they are stored.
		for i := 0; i < tk; i++ {
			for c, v := range k[(b*tk+i)*d : (b*tk+i+1)*d] {
				k64[c*tk+i] = float64(v)
			}
		}
		for j := 0; j < tq; j++ {
			rl, rh := 0, tk
			if keep != nil {
				rl, rh = keptRange32(keep[(b*tq+j)*tk : (b*tq+j+1)*tk])
			}
			rlo[j], rhi[j] = rl, rh
		}
		for j0 := 0; j0 < tq; j0 += kernelRowsBlock {
			j1 := min(j0+kernelRowsBlock, tq)
			kl, kh := tk, 0
			for j := j0; j < j1; j++ {
				if rlo[j] < rhi[j] {
					kl, kh = min(kl, rlo[j]), max(kh, rhi[j])
				}
			}
			if kl < kh {
				// dots[(j−j0)·tk + i] = q_j·k_i for i in kl..kh-1.
				if err := gemmpkg.Gemm(false, false, j1-j0, kh-kl, d, 1, q64[j0*d:j1*d], d, k64[kl:], tk, 0, dots[kl:], tk); err != nil {
					panic("ops: " + err.Error()) // the sizes above always fit
				}
			}
			for j := j0; j < j1; j++ {
				o := (b*tq + j) * tk
				var kr, rr []float32
				if keep != nil {
					kr = keep[o : o+tk]
				}
				if raw != nil {
					rr = raw[o : o+tk]
				}
				kernelRow32(kind, a.g, dots[(j-j0)*tk:(j-j0+1)*tk], kr, w[o:o+tk], rr, rlo[j], rhi[j])
			}
		}
	}
}

// kernelRow32 sets one row of weights (and raw scores, if rr is not nil)
// from the scores dots[i] of the kept keys, all of which lie in rl..rh-1,
// as kernelForwardSeqs' loop over the row does.
func kernelRow32(kind KernelKind, g float64, dots []float64, kr, row, rr []float32, rl, rh int) {
	if rl >= rh {
		clear(row)
		if rr != nil {
			clear(rr)
		}
		return
	}
	clear(row[:rl])
	clear(row[rh:])
	if rr != nil {
		clear(rr[:rl])
		clear(rr[rh:])
	}
	contiguous := true
	mx := math.Inf(-1)
	i0 := rl
	if kind == KindSoftmax && kr != nil && rr != nil && rh-rl >= 4 {
		// Four at a time where the keys rl.. are kept and no score is
		// NaN (then the maximum is the larger of ordered values: the
		// same as math.Max's but perhaps for the sign of a zero, which
		// changes no exponential below: exp(±0) = 1 either way);
		// otherwise the loop redoes them.
		n := (rh - rl) &^ 3
		if m, ok := softmaxScores32(&row[rl], &rr[rl], &dots[rl], &kr[rl], n, g); ok {
			mx, i0 = m, rl+n
		}
	}
	for i := i0; i < rh; i++ {
		if kr != nil && kr[i] == 0 {
			row[i] = 0
			if rr != nil {
				rr[i] = 0
			}
			contiguous = false
			continue
		}
		r := dots[i]
		var v float64
		switch kind {
		case KindLinear:
			v = r
		case KindExp:
			v = Exp32(g * r)
		case KindSoftmax:
			v = g * r
			// mx = math.Max(mx, v), the call only where it is not the
			// larger of two ordered values (NaN, +Inf, signed zeros).
			if v > mx {
				mx = v
			} else if v != v || mx != mx || v == 0 && mx == 0 {
				mx = math.Max(mx, v)
			}
		}
		row[i] = float32(v)
		if rr != nil {
			rr[i] = float32(r)
		}
	}
	if kind != KindSoftmax || math.IsInf(mx, -1) {
		return
	}
	var sum float64
	if contiguous {
		seg := row[rl:rh]
		i := 0
		if n := len(seg) &^ 3; n > 0 {
			i = expChunk32(&seg[0], &seg[0], n, 1, mx, &sum) // 1·x = x exactly
		}
		for ; i < len(seg); i++ {
			e := Exp32(float64(seg[i]) - mx)
			seg[i] = float32(e)
			sum += e
		}
	} else {
		for i := rl; i < rh; i++ {
			if kr[i] == 0 {
				continue
			}
			e := Exp32(float64(row[i]) - mx)
			row[i] = float32(e)
			sum += e
		}
	}
	if sum > 0 {
		// The zeros outside rl..rh-1 stay +0 = 0/sum.
		divRow32(row[rl:rh], sum)
		return
	}
	divRow32(row, sum)
}

// keyRanges sets, from the ranges rl[j]..rh[j]-1 of the keys that the rows
// j keep, a range of rows cl[i]..ch[i]-1 for each key i that holds every
// row keeping it: cl[i] the first row whose range reaches past i, ch[i] − 1
// the last whose range starts at or before i (cl[i] ≥ ch[i] when no row
// keeps i). Rows in it that do not keep i have zero coefficients there.
// Each is one sweep over the rows (for a causal mask, exactly the rows
// keeping i).
func keyRanges(rl, rh, cl, ch []int) {
	tq, tk := len(rl), len(cl)
	for i := range cl {
		cl[i], ch[i] = tq, 0
	}
	next := 0 // keys below next have their first row
	for j := 0; j < tq && next < tk; j++ {
		if rl[j] < rh[j] {
			for ; next < rh[j]; next++ {
				cl[next] = j
			}
		}
	}
	low := tk // keys from low on have their last row
	for j := tq - 1; j >= 0 && low > 0; j-- {
		if rl[j] < rh[j] {
			for ; low > rl[j]; low-- {
				ch[low-1] = j + 1
			}
		}
	}
}
