package ops

// axpyRound sets y[i] += F(a·float64(x[i])) for i < len(y) (len(x) ≥
// len(y)): each product in float64, rounded to F, then added in F. The
// elements are independent, so the AVX2 form (float32) gives the same bits.
func axpyRound[F float32 | float64](y, x []F, a float64) {
	if len(y) == 0 {
		return
	}
	x = x[:len(y)]
	if haveAxpyAVX2 {
		if y32, ok := any(y).([]float32); ok {
			axpyRound32(&y32[0], &any(x).([]float32)[0], len(y32), a)
			return
		}
	}
	for c := range y {
		y[c] += F(a * float64(x[c]))
	}
}

// dot4 returns the dot products of q with k0..k3 (each of len(q) or
// longer), each summed in float64 in index order as dot does: four
// independent chains of additions, so the same bits as four dot calls.
func dot4[F float32 | float64](q, k0, k1, k2, k3 []F) (s0, s1, s2, s3 float64) {
	n := len(q)
	k0, k1, k2, k3 = k0[:n], k1[:n], k2[:n], k3[:n]
	for c, qv := range q {
		x := float64(qv)
		s0 += x * float64(k0[c])
		s1 += x * float64(k1[c])
		s2 += x * float64(k2[c])
		s3 += x * float64(k3[c])
	}
	return
}

// keyDots sets dots[i] = q·k_i (dot's sums) for the keys k_i, rows of d in
// k, that keep marks (every key when keep is nil); the others are left
// unspecified. Groups of four keys with no kept one are skipped.
func keyDots[F float32 | float64](q, k []F, d int, keep []F, dots []float64) {
	n := len(dots)
	i := 0
	if q32, ok := any(q).([]float32); ok && haveAxpyAVX2 && d > 0 && d%4 == 0 && len(q) >= d {
		// Sixteen keys at a time in AVX2 (the same sums, so the same bits),
		// groups with no kept key skipped.
		k32 := any(k).([]float32)
		for ; i+16 <= n; i += 16 {
			if keep != nil && !anyKept(keep[i:i+16]) {
				continue
			}
			_ = k32[(i+16)*d-1]
			keyDots16(&q32[0], &k32[i*d], d, &dots[i])
		}
	}
	for ; i+4 <= n; i += 4 {
		if keep != nil && keep[i] == 0 && keep[i+1] == 0 && keep[i+2] == 0 && keep[i+3] == 0 {
			continue
		}
		o := i * d
		dots[i], dots[i+1], dots[i+2], dots[i+3] = dot4(q, k[o:o+d], k[o+d:o+2*d], k[o+2*d:o+3*d], k[o+3*d:o+4*d])
	}
	for ; i < n; i++ {
		if keep == nil || keep[i] != 0 {
			dots[i] = dot(q, k[i*d:(i+1)*d])
		}
	}
}

// anyKept reports whether some element of keep is not zero.
func anyKept[F float32 | float64](keep []F) bool {
	for _, v := range keep {
		if v != 0 {
			return true
		}
	}
	return false
}

// axpyRows32 sets y[c] += float32(a_i·float64(x[i·ldx + c])) for c <
// len(y), i = 0..n-1 in order, a_i = coef[i·inc], skipping the a_i that are
// zero: for each element the chain of additions of axpyRound(y, x_i, a_i)
// called for the nonzero a_i in turn (the same bits), with y held in
// registers across the rows. AVX2 only (haveAxpyAVX2); len(y) is a
// multiple of 8.
func axpyRows32(y, x []float32, ldx int, coef []float64, inc, n int) {
	if n <= 0 || len(y) == 0 {
		return
	}
	_ = x[(n-1)*ldx+len(y)-1]
	_ = coef[(n-1)*inc]
	c := 0
	for ; c+32 <= len(y); c += 32 {
		axpyRows32x32(&y[c], &x[c], ldx, &coef[0], inc, n)
	}
	for ; c+8 <= len(y); c += 8 {
		axpyRows32x8(&y[c], &x[c], ldx, &coef[0], inc, n)
	}
}

// keptRange32 returns the range lo..hi-1 of keep from its first element
// that is not 0 to its last (NaN counts as not 0); lo = hi = 0 when every
// element is 0. With haveAxpyAVX2 the end is found eight elements at a time.
func keptRange32(keep []float32) (lo, hi int) {
	hi = len(keep)
	for hi%8 != 0 && keep[hi-1] == 0 {
		hi--
	}
	if hi%8 == 0 {
		if haveAxpyAVX2 && hi > 0 {
			hi = lastKept8(&keep[0], hi/8)
		} else {
			for hi > 0 && keep[hi-1] == 0 {
				hi--
			}
		}
	}
	for lo < hi && keep[lo] == 0 {
		lo++
	}
	return lo, hi
}

// divRow32 sets y[i] = float32(float64(y[i]) / s): the quotient in float64,
// rounded to float32 (eight at a time with haveAxpyAVX2, the same bits).
func divRow32(y []float32, s float64) {
	i := 0
	if haveAxpyAVX2 && len(y) >= 8 {
		i = len(y) &^ 7
		divRound32(&y[0], i, s)
	}
	for ; i < len(y); i++ {
		y[i] = float32(float64(y[i]) / s)
	}
}
