package ops

// The float32 expectation op on the lane kernels (expectlanes_amd64.s):
// four rows of f at a time, row i of the four in lane i, through the
// logits f_r·K, the row's softmax and E_r = p_r·Vᵀ (backward: dl_r =
// dout_r·V, the softmax gradient, df_r = dl_r·Kᵀ) without leaving the
// registers and a small buffer, instead of gemm calls over all M rows and
// a softmax a row at a time. Every element is the same operations in the
// same order as on the gemm path (expectForwardGemm, expectBackwardGemm):
// each product element one chain of fused multiply-adds from zero, the
// softmax softmaxRowInPlace's (exp32Core, the float64 sum in index order,
// the float32 scaling), the softmax gradient's dot product dotF's four
// float32 sums. So the results are the same bits; TestExpectationLanesBits
// checks them. A group of rows with a non-finite logit or one more than 700
// below its row's maximum is computed on the gemm path.

// expectLanes reports whether the float32 expectation of d' = dp, C = c
// runs on the lane kernels.
func expectLanes(dp, c int) bool {
	return haveNarrowAVX2 && haveExpAVX2 && HaveRowKernel() && dp >= 1 && c >= 1
}

// transpose4 sets ft[l·4 + i] = a[i·ld + l] for i < 4, l < k: four rows
// of a as lanes.
func transpose4(ft, a []float32, ld, k int) {
	ft = ft[:4*k]
	r0, r1, r2, r3 := a[:k], a[ld:ld+k], a[2*ld:2*ld+k], a[3*ld:3*ld+k]
	for l := range r0 {
		d := ft[4*l : 4*l+4]
		d[0], d[1], d[2], d[3] = r0[l], r1[l], r2[l], r3[l]
	}
}

// expectForwardLanes is expectForward's float32 body on the lane kernels.
func expectForwardLanes(st *expectState[float32], m, dp, c int, f, k, v, out []float32) {
	m4 := m &^ 3
	st.pl = grow(st.pl, m4*c)
	st.ft = grow(st.ft, 4*dp)
	p, pl, ft := st.p, st.pl, st.ft
	for r0 := 0; r0 < m4; r0 += 4 {
		transpose4(ft, f[r0*dp:], dp, dp)
		ls := pl[r0*c : (r0+4)*c]
		lanes4Product(&ls[0], &ft[0], &k[0], dp, c, c)
		if !lanes4Softmax(&ls[0], c, &p[r0*c], c) {
			expectRowsGemm(4, dp, c, f[r0*dp:], k, p[r0*c:])
			transpose4(ls, p[r0*c:], c, c)
		}
		lanes4Rows(&out[r0*dp], dp, &ls[0], &v[0], dp, c, c)
	}
	if m4 < m {
		expectRowsGemm(m-m4, dp, c, f[m4*dp:], k, p[m4*c:])
		gemm(false, true, m-m4, dp, c, p[m4*c:], c, v, c, 0, out[m4*dp:], dp)
	}
}

// expectRowsGemm sets the m rows of p to softmax(f K) on the gemm path.
func expectRowsGemm[F float32 | float64](m, dp, c int, f, k, p []F) {
	gemm(false, false, m, c, dp, f, dp, k, c, 0, p, c) // logits
	for r := 0; r < m; r++ {
		softmaxRowInPlace(p[r*c : (r+1)*c])
	}
}

// expectBackwardLanes is expectBackward's float32 rows (dl and df) on the
// lane kernels; st holds the forward pass's probabilities.
func expectBackwardLanes(st *expectState[float32], m, dp, c int, k, v, dout, df []float32) {
	m4 := m &^ 3
	st.ft = grow(st.ft, 4*dp)
	st.dll = grow(st.dll, 4*c)
	p, pl, dl, ft, dll := st.p, st.pl, st.dpb, st.ft, st.dll
	for r0 := 0; r0 < m4; r0 += 4 {
		transpose4(ft, dout[r0*dp:], dp, dp)
		lanes4Product(&dll[0], &ft[0], &v[0], dp, c, c)
		lanes4SoftmaxGrad(&dll[0], &pl[r0*c], c, &dl[r0*c], c)
		lanes4Rows(&df[r0*dp], dp, &dll[0], &k[0], dp, c, c)
	}
	if m4 < m {
		expectRowsGradGemm(m-m4, dp, c, k, v, p[m4*c:], dout[m4*dp:], dl[m4*c:], df[m4*dp:])
	}
}

// expectRowsGradGemm sets the m rows of dl (the logits' gradient) and df
// on the gemm path.
func expectRowsGradGemm[F float32 | float64](m, dp, c int, k, v, p, dout, dl, df []F) {
	gemm(false, false, m, c, dp, dout, dp, v, c, 0, dl, c) // dp = dout V
	for r := 0; r < m; r++ {
		pr, dr := p[r*c:(r+1)*c], dl[r*c:(r+1)*c]
		s := dotF(pr, dr)
		for i, pi := range pr {
			dr[i] = pi * (dr[i] - s)
		}
	}
	gemm(false, true, m, dp, c, dl, c, k, c, 0, df, dp) // df = dl Kᵀ
}
