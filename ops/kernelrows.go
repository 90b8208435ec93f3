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
