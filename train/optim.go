package train

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Schedule gives the absolute learning rate for an update, given the number
// of updates already made (0 for the first). Schedules are plain values: any
// func(int) float64 works. The constructors below return a schedule that
// always yields NaN when their arguments are invalid, which [NewTrainer]
// rejects with an error.
type Schedule func(step int) float64

// ConstantLR returns lr at every step. lr must be finite and >= 0.
func ConstantLR(lr float64) Schedule {
	if !(lr >= 0) || math.IsInf(lr, 0) {
		return nanSchedule
	}
	return func(int) float64 { return lr }
}

// StepDecay returns lr * factor^floor(step/every): the rate is multiplied by
// factor after every `every` updates. lr must be finite and >= 0, every > 0,
// factor finite and >= 0.
func StepDecay(lr float64, every int, factor float64) Schedule {
	if !(lr >= 0) || math.IsInf(lr, 0) || every <= 0 || !(factor >= 0) || math.IsInf(factor, 0) {
		return nanSchedule
	}
	return func(step int) float64 {
		return lr * math.Pow(factor, float64(step/every))
	}
}

// WarmupCosine is nanoGPT's schedule (get_lr in train.py): a linear warmup
// lr*(step+1)/(warmup+1) for step < warmup, then a cosine decay from lr down
// to minLR at step == total, and minLR after. It needs 0 <= warmup < total
// and 0 <= minLR <= lr, all finite.
func WarmupCosine(lr float64, warmup, total int, minLR float64) Schedule {
	if !(lr >= 0) || math.IsInf(lr, 0) || !(minLR >= 0) || minLR > lr || warmup < 0 || total <= warmup {
		return nanSchedule
	}
	return func(step int) float64 {
		switch {
		case step < warmup:
			return lr * float64(step+1) / float64(warmup+1)
		case step > total:
			return minLR
		}
		ratio := float64(step-warmup) / float64(total-warmup)
		return minLR + 0.5*(1+math.Cos(math.Pi*ratio))*(lr-minLR)
	}
}

func nanSchedule(int) float64 { return math.NaN() }

// GlobalNorm returns the L2 norm of all gradients taken together,
// sqrt(sum_i sum_j g_i[j]^2).
func GlobalNorm(grads [][]float64) float64 {
	views := make([]gradView, len(grads))
	for i, g := range grads {
		views[i].f64 = g
	}
	return globalNorm(views)
}

// gradView is a parameter's gradient as its machine holds it: a float32 or
// a float64 slice (the other nil). The trainer reads the gradients through
// views instead of copying them into float64 buffers (which held twice the
// parameters' memory for a float32 model); converting an element to float64
// where it is used gives the same values, so the same updates.
type gradView struct {
	f32 []float32
	f64 []float64
}

func (g gradView) len() int { return len(g.f32) + len(g.f64) }

// globalNorm is GlobalNorm over views, with the same arithmetic.
func globalNorm(grads []gradView) float64 {
	// A plain sum of squares in four independent sums (one pass, no
	// division), unless it overflows to +Inf or its terms may underflow:
	// then the scaled sum of squares of BLAS dnrm2.
	var s [4]float64
	for _, g := range grads {
		if g.f32 != nil {
			sumSquares(g.f32, &s)
		} else {
			sumSquares(g.f64, &s)
		}
	}
	if ssq := (s[0] + s[1]) + (s[2] + s[3]); ssq > 1e-200 && !math.IsInf(ssq, 0) && !math.IsNaN(ssq) {
		return math.Sqrt(ssq)
	}
	scale, ssq := 0.0, 1.0
	for _, g := range grads {
		if g.f32 != nil {
			scale, ssq = scaledSquares(g.f32, scale, ssq)
		} else {
			scale, ssq = scaledSquares(g.f64, scale, ssq)
		}
	}
	if scale == 0 {
		return 0
	}
	return scale * math.Sqrt(ssq)
}

// sumSquares adds the squares of g (in float64) to the four sums s, four
// elements at a time.
func sumSquares[T float32 | float64](g []T, s *[4]float64) {
	s0, s1, s2, s3 := s[0], s[1], s[2], s[3]
	j := 0
	for ; j+3 < len(g); j += 4 {
		g0, g1, g2, g3 := float64(g[j]), float64(g[j+1]), float64(g[j+2]), float64(g[j+3])
		s0 += g0 * g0
		s1 += g1 * g1
		s2 += g2 * g2
		s3 += g3 * g3
	}
	for ; j < len(g); j++ {
		gj := float64(g[j])
		s0 += gj * gj
	}
	s[0], s[1], s[2], s[3] = s0, s1, s2, s3
}

// scaledSquares continues BLAS dnrm2's scaled sum of squares over g.
func scaledSquares[T float32 | float64](g []T, scale, ssq float64) (float64, float64) {
	for _, x := range g {
		v := float64(x)
		if v == 0 {
			continue
		}
		a := math.Abs(v)
		if scale < a {
			ssq = 1 + ssq*(scale/a)*(scale/a)
			scale = a
		} else {
			ssq += (a / scale) * (a / scale)
		}
	}
	return scale, ssq
}

// scaledNorm is GlobalNorm by the scaled sum of squares of BLAS dnrm2, safe
// from overflow and underflow.
func scaledNorm(grads [][]float64) float64 {
	scale, ssq := 0.0, 1.0
	for _, g := range grads {
		for _, v := range g {
			if v == 0 {
				continue
			}
			a := math.Abs(v)
			if scale < a {
				ssq = 1 + ssq*(scale/a)*(scale/a)
				scale = a
			} else {
				ssq += (a / scale) * (a / scale)
			}
		}
	}
	if scale == 0 {
		return 0
	}
	return scale * math.Sqrt(ssq)
}

// ClipGlobalNorm scales all gradients in place by maxNorm/norm when their
// global L2 norm exceeds maxNorm (as torch.nn.utils.clip_grad_norm_), and
// returns the norm before clipping. maxNorm <= 0 disables clipping.
func ClipGlobalNorm(grads [][]float64, maxNorm float64) float64 {
	norm := GlobalNorm(grads)
	if maxNorm <= 0 || norm <= maxNorm {
		return norm
	}
	f := maxNorm / norm
	for _, g := range grads {
		for j := range g {
			g[j] *= f
		}
	}
	return norm
}

// adamHyper are the per-update constants of Adam/AdamW.
type adamHyper struct {
	lr, beta1, beta2, eps float64
	bc1, bc2              float64 // bias corrections 1-beta^t
	wd                    float64 // weight decay for this parameter (0: none)
	decoupled             bool    // AdamW: decay the weights, not the gradient
}

// adamUpdate applies one Adam (or AdamW) update to w in place, with gradient
// g and moments m, v (updated in place), computing in float64:
//
//	g' = g + wd*w                      (Adam with weight decay: L2 penalty)
//	m  = beta1*m + (1-beta1)*g'
//	v  = beta2*v + (1-beta2)*g'^2
//	w  = w - lr*wd*w                   (AdamW: decoupled decay)
//	w  = w - lr * (m/bc1) / (sqrt(v/bc2) + eps)
//
// which is torch.optim.Adam / AdamW. It returns the largest |m| and v
// written, for the update guard's bound (updateBounded).
//
// The loop is written as torch's: w -= (lr/bc1) m / (sqrt(v)/sqrt(bc2) +
// eps), with the per-update constants hoisted, one division and one square
// root per element, and no allocation.
func adamUpdate[T float32 | float64](w []T, g, m, v []float64, h adamHyper) (mmax, vmax float64) {
	return adamUpdateScaled(w, g, 1, m, v, h)
}

// adamUpdateScaled is adamUpdate with the gradient scale·g (g of either
// dtype, converted to float64 and multiplied by scale element by element,
// as ClipGlobalNorm would have scaled a float64 copy; scale 1 changes
// nothing), and moments stored in M: float64, or float32 (each new moment
// is computed in float64 from the stored one and rounded when stored; the
// parameter's update uses the unrounded moments). The maxima returned are
// those of the stored moments.
func adamUpdateScaled[T, G, M float32 | float64](w []T, g []G, scale float64, m, v []M, h adamHyper) (mmax, vmax float64) {
	b1, b2 := h.beta1, h.beta2
	c1, c2 := 1-b1, 1-b2
	step := h.lr / h.bc1
	rbc2 := 1 / math.Sqrt(h.bc2)
	eps := h.eps
	l2, keep := 0.0, 1.0 // g += l2*w (Adam's L2 penalty); w *= keep (AdamW's decay)
	if h.wd != 0 {
		if h.decoupled {
			keep = 1 - h.lr*h.wd
		} else {
			l2 = h.wd
		}
	}
	g, m, v = g[:len(w)], m[:len(w)], v[:len(w)]
	start := 0
	if w32, ok := any(w).([]float32); ok && haveAdamAVX2 && len(w) >= 4 {
		// Float32 parameters and gradients: four elements at a time in
		// AVX2 registers (adam_amd64.s), the same operations in the same
		// order as the loop below, so the same bits; the loop does the
		// last len(w) mod 4.
		if g32, ok := any(g).([]float32); ok {
			c := adamVec{{scale}, {l2}, {b1}, {c1}, {b2}, {c2}, {keep}, {step}, {rbc2}, {eps}, {math.Float64frombits(1<<63 - 1)}}
			for k := range c {
				c[k] = [4]float64{c[k][0], c[k][0], c[k][0], c[k][0]}
			}
			n := len(w) &^ 3
			if n >= minParallelAdam && runtime.GOMAXPROCS(0) > 1 {
				mmax, vmax = adamAVX2Split(w32[:n], g32[:n], m[:n], v[:n], c)
			} else {
				mmax, vmax = adamAVX2(w32[:n], g32[:n], m[:n], v[:n], &c)
			}
			start = n
		}
	}
	for i := start; i < len(w); i++ {
		p := float64(w[i])
		gi := float64(float64(g[i])*scale) + l2*p // the conversion rounds the product (no fused multiply-add), as a stored scaled gradient was
		mi := b1*float64(m[i]) + c1*gi
		vi := b2*float64(v[i]) + c2*gi*gi
		ms, vs := M(mi), M(vi)
		m[i], v[i] = ms, vs
		w[i] = T(p*keep - step*mi/(math.Sqrt(vi)*rbc2+eps))
		if a := math.Abs(float64(ms)); a > mmax {
			mmax = a
		}
		if float64(vs) > vmax {
			vmax = float64(vs)
		}
	}
	return mmax, vmax
}

// adamAVX2 runs adam_amd64.s's update over w (a multiple of 4 elements)
// with float32 or float64 moments m and v, returning their maxima.
func adamAVX2[M float32 | float64](w, g []float32, m, v []M, c *adamVec) (mmax, vmax float64) {
	if len(w) == 0 {
		return 0, 0
	}
	switch mm := any(m).(type) {
	case []float32:
		return adamAVX2M32(&w[0], &g[0], &mm[0], &any(v).([]float32)[0], len(w), c)
	case []float64:
		return adamAVX2M64(&w[0], &g[0], &mm[0], &any(v).([]float64)[0], len(w), c)
	}
	return 0, 0
}

// adamAVX2Split is adamAVX2 on two halves on two goroutines: every element
// is updated alone, so the same bits; the maxima are combined as the
// scalar loop combines them. (A function of its own, taking the constants
// by value, so that the one-goroutine path allocates nothing.)
func adamAVX2Split[M float32 | float64](w, g []float32, m, v []M, c adamVec) (mmax, vmax float64) {
	mid := len(w) / 2 &^ 3
	var m2, v2 float64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); m2, v2 = adamAVX2(w[mid:], g[mid:], m[mid:], v[mid:], &c) }()
	mmax, vmax = adamAVX2(w[:mid], g[:mid], m[:mid], v[:mid], &c)
	wg.Wait()
	if m2 > mmax {
		mmax = m2
	}
	if v2 > vmax {
		vmax = v2
	}
	return mmax, vmax
}

// minParallelAdam is the smallest number of elements whose float32 update
// is split over two goroutines when GOMAXPROCS > 1 (a variable for the
// tests).
var minParallelAdam = 1 << 16

// adamVec holds an update's constants, each in four lanes, for the AVX2
// kernels: scale, l2, beta1, 1-beta1, beta2, 1-beta2, keep, lr/bc1,
// 1/sqrt(bc2), eps and the absolute-value mask.
type adamVec [11][4]float64

// updateBounded reports whether an update with hyperparameters h provably
// writes only finite values, from bounds alone: P >= every |w|, G >= every
// |g|, M >= every |m|, V >= every v (>= 0). Each new |w| is at most
// P|keep| + (lr/bc1)|m'|/eps with |m'| <= beta1 M + (1-beta1)(G + l2 P), and
// each new v at most beta2 V + (1-beta2)(G + l2 P)^2; the bounds must stay
// below half of limit (the largest finite value of the parameter's type)
// and of mlimit (that of the moments' type). A NaN or infinite bound gives
// false.
func updateBounded(P, G, M, V float64, h adamHyper, limit, mlimit float64) bool {
	l2, keep := 0.0, 1.0
	if h.wd != 0 {
		if h.decoupled {
			keep = 1 - h.lr*h.wd
		} else {
			l2 = h.wd
		}
	}
	gmax := G + l2*P
	mmax := h.beta1*M + (1-h.beta1)*gmax
	vmax := h.beta2*V + (1-h.beta2)*gmax*gmax
	wmax := P*math.Abs(keep) + h.lr/h.bc1*mmax/h.eps
	const half = 0.5
	return wmax <= half*limit && mmax <= half*mlimit && vmax <= half*mlimit
}

// maxAbs32 returns the largest |x| of xs, NaN if one is NaN: the largest
// sign-cleared bit pattern, as IEEE 754 orders magnitudes like unsigned
// integers and NaNs above +Inf (branch-free, no conversion per element;
// 32 elements a step in AVX2 where the CPU has it, the rest one by one).
func maxAbs32(xs []float32) float64 {
	var m uint32
	if haveAdamAVX2 && len(xs) >= 32 {
		m = maxAbsBits32(&xs[0], len(xs))
		xs = xs[len(xs)&^31:]
	}
	for _, x := range xs {
		m = max(m, math.Float32bits(x)&^(1<<31))
	}
	return float64(math.Float32frombits(m))
}

// maxAbs64 is maxAbs32 for float64.
func maxAbs64(xs []float64) float64 {
	var m uint64
	for _, x := range xs {
		m = max(m, math.Float64bits(x)&^(1<<63))
	}
	return math.Float64frombits(m)
}

// adamCheck computes the update adamUpdate would make, without writing
// anything, and returns the index of the first element whose new value
// (rounded to T), first or second moment would not be finite, with which of
// the three it is ("value", "first moment" or "second moment"); -1 if none.
// It computes exactly as adamUpdate, so an update it passes writes only
// finite values.
func adamCheck[T float32 | float64](w []T, g, m, v []float64, h adamHyper) (int, string) {
	return adamCheckScaled(w, g, 1, m, v, h)
}

// adamCheckScaled is adamCheck for the gradient scale·g and moments stored
// in M, as adamUpdateScaled (a moment is checked as stored, rounded to M).
func adamCheckScaled[T, G, M float32 | float64](w []T, g []G, scale float64, m, v []M, h adamHyper) (int, string) {
	b1, b2 := h.beta1, h.beta2
	c1, c2 := 1-b1, 1-b2
	step := h.lr / h.bc1
	rbc2 := 1 / math.Sqrt(h.bc2)
	eps := h.eps
	l2, keep := 0.0, 1.0
	if h.wd != 0 {
		if h.decoupled {
			keep = 1 - h.lr*h.wd
		} else {
			l2 = h.wd
		}
	}
	g, m, v = g[:len(w)], m[:len(w)], v[:len(w)] // bounds-check hints
	for i := range w {
		p := float64(w[i])
		gi := float64(float64(g[i])*scale) + l2*p // the conversion rounds the product (no fused multiply-add), as a stored scaled gradient was
		mi := b1*float64(m[i]) + c1*gi
		vi := b2*float64(v[i]) + c2*gi*gi
		nw := float64(T(p*keep - step*mi/(math.Sqrt(vi)*rbc2+eps)))
		ms, vs := float64(M(mi)), float64(M(vi))
		// x-x is 0 for a finite x and NaN for ±Inf and NaN.
		if nw-nw != 0 || ms-ms != 0 || vs-vs != 0 {
			switch {
			case ms-ms != 0:
				return i, "first moment"
			case vs-vs != 0:
				return i, "second moment"
			}
			return i, "value"
		}
	}
	return -1, ""
}

// valueView returns the backing store of a Gorgonia value without copying:
// a float32 or a float64 slice (one of them nil). Scalars (*G.F32, *G.F64)
// are viewed as 1-element slices over the value itself.
func valueView(v G.Value) ([]float32, []float64, error) {
	switch x := v.(type) {
	case *G.F64:
		return nil, unsafe.Slice((*float64)(x), 1), nil
	case *G.F32:
		return unsafe.Slice((*float32)(x), 1), nil, nil
	case tensor.Tensor:
		switch d := x.Data().(type) {
		case []float64:
			return nil, d, nil
		case []float32:
			return d, nil, nil
		case float64, float32:
			return nil, nil, fmt.Errorf("0-d tensor values are not supported (use a scalar node)")
		}
		return nil, nil, fmt.Errorf("unsupported tensor data %T", x.Data())
	case nil:
		return nil, nil, fmt.Errorf("no value")
	}
	return nil, nil, fmt.Errorf("unsupported value type %T", v)
}

// readInto copies a value's elements into dst (converted to float64); the
// sizes must match.
func readInto(dst []float64, v G.Value) error {
	f32, f64, err := valueView(v)
	if err != nil {
		return err
	}
	switch {
	case f64 != nil:
		if len(f64) != len(dst) {
			return fmt.Errorf("has %d elements, want %d", len(f64), len(dst))
		}
		copy(dst, f64)
	default:
		if len(f32) != len(dst) {
			return fmt.Errorf("has %d elements, want %d", len(f32), len(dst))
		}
		for i, x := range f32 {
			dst[i] = float64(x)
		}
	}
	return nil
}

// firstNonFinite returns the index of the first NaN or ±Inf in vs, or -1:
// the first element whose exponent bits are all ones (no conversion or
// branch per element beyond the compare).
func firstNonFinite[T float32 | float64](vs []T) int {
	switch x := any(vs).(type) {
	case []float32:
		start := 0
		if haveAdamAVX2 && len(x) >= 32 {
			start = finiteRun32(&x[0], len(x)) // 32 at a time up to the first block with one
		}
		for i := start; i < len(x); i++ {
			if v := x[i]; math.Float32bits(v)&0x7f800000 == 0x7f800000 {
				return i
			}
		}
	case []float64:
		for i, v := range x {
			if math.Float64bits(v)&0x7ff0000000000000 == 0x7ff0000000000000 {
				return i
			}
		}
	}
	return -1
}
