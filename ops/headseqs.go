package ops

// headSeqBlock is the number of sequences whose per-sequence products the
// full head runs together (mulAddRowsSeqs): one call of a kernel per group
// of rows and chunk of columns for all of them, while their values (32
// sequences of T = 11 positions, D = 25: z[A U] 70 KB, the scores, weights
// and their gradients 14 KB each) stay in the core's L2 cache from one
// product to the next.
const headSeqBlock = 32

// headSeqsOK reports whether the full head's per-sequence products may run
// a block of sequences at a time (headForwardSeqs, headBackwardSeqs): where
// seqGemmT runs the products A·Bᵀ (T × Tk, depth DIn or DOut) on
// mulAddRows' kernels rather than Gemm, so that the blocks compute what
// the loop over sequences computes.
func headSeqsOK(d headDims) bool {
	return haveNarrowAVX2 && HaveRowKernel() && d.t >= 4 && d.tk >= 1 && d.tk <= 16 && d.din >= 1 && d.dout >= 1
}

// headForwardSeqs is the per-sequence part of headForward (the scores, the
// weights and the values), headSeqBlock sequences at a time: each product
// for all the block's sequences in one mulAddRowsSeqs (the same chains as
// seqGemmT and mulAddRows a sequence at a time), the weights of all their
// rows in one kernelRows (row by row the same). st.zh must hold z[A U].
func headForwardSeqs[F float32 | float64](op *HeadOp, st *headState[F], d headDims, in headInputs[F], out []F) {
	B, T, Tk, Din, Dout := d.b, d.t, d.tk, d.din, d.dout
	nh := Din + Dout
	g := F(d.g)
	for b0 := 0; b0 < B; b0 += headSeqBlock {
		nb := min(headSeqBlock, B-b0)
		// The keys of each sequence transposed (Din × Tk), as seqGemmT.
		st.bt = grow(st.bt, nb*Din*Tk)
		for i := 0; i < nb; i++ {
			transposeInto(st.bt[i*Din*Tk:], in.z[(b0+i)*T*Din:], Din, Tk, Din)
		}
		sb, wb := st.s[b0*T*Tk:(b0+nb)*T*Tk], st.w[b0*T*Tk:(b0+nb)*T*Tk]
		hb := st.zh[b0*T*nh:]
		st.tail = mulAddRowsSeqs(nb, T, Tk, Din, hb, nh, 1, T*nh, st.bt, Tk, Din*Tk, sb, Tk, T*Tk, false, st.tail) // s_ji = P_j·z_i
		kernelRows(op.kind, g, sb, wb, nb*T, Tk)
		st.tail = mulAddRowsSeqs(nb, T, Dout, Tk, wb, Tk, 1, T*Tk, hb[Din:], nh, T*nh, out[b0*T*Dout:], Dout, T*Dout, false, st.tail) // out_j = Σ_i w_ji Vu_i
	}
}

// headBackwardSeqs is the per-sequence part of headBackward (dL/dw, the
// score gradients and dg, dVu and dP into gb, dZc into dz), headSeqBlock
// sequences at a time as headForwardSeqs: the same chains, and dg summed
// over the sequences and rows in the same order. It returns dg.
func headBackwardSeqs[F float32 | float64](op *HeadOp, st *headState[F], d headDims, in headInputs[F], dout, dz []F) float64 {
	B, T, Tk, Din, Dout := d.b, d.t, d.tk, d.din, d.dout
	nh := Din + Dout
	g := F(d.g)
	gb := st.gb
	st.dw = grow(st.dw, min(B, headSeqBlock)*T*Tk)
	st.dsb = grow(st.dsb, min(B, headSeqBlock)*T*Tk)
	var dg float64
	var rsb []F
	if op.kind == KindSoftmax {
		rsb = make([]F, T)
	}
	for b0 := 0; b0 < B; b0 += headSeqBlock {
		nb := min(headSeqBlock, B-b0)
		// The values Vu of each sequence transposed (Dout × Tk).
		st.bt = grow(st.bt, nb*Dout*Tk)
		for i := 0; i < nb; i++ {
			transposeInto(st.bt[i*Dout*Tk:], st.zh[(b0+i)*T*nh+Din:], nh, Tk, Dout)
		}
		dwB, dsB := st.dw[:nb*T*Tk], st.dsb[:nb*T*Tk]
		db := dout[b0*T*Dout:]
		st.tail = mulAddRowsSeqs(nb, T, Tk, Dout, db, Dout, 1, T*Dout, st.bt, Tk, Dout*Tk, dwB, Tk, T*Tk, false, st.tail) // dw_ji = d_j·Vu_i
		for i := 0; i < nb; i++ {
			o := (b0 + i) * T * Tk
			wb := st.w[o : o+T*Tk]
			dwb, dsb := dwB[i*T*Tk:(i+1)*T*Tk], dsB[i*T*Tk:(i+1)*T*Tk]
			if op.kind == KindSoftmax {
				rowDots(rsb, wb, dwb, T, Tk) // rs_j = Σ_i w_ji dw_ji
			}
			for j := 0; j < T; j++ {
				srow, wrow := st.s[o+j*Tk:o+(j+1)*Tk], wb[j*Tk:(j+1)*Tk]
				dw := dwb[j*Tk : (j+1)*Tk]
				ds := dsb[j*Tk : (j+1)*Tk]
				dg = rowScoreGrads(op.kind, ds, wrow, dw, srow, rsb, j, g, dg)
			}
		}
		// dVu = wᵀ dout, dP = ds Zc (into gb), dZc += dsᵀ P.
		gbb, hb := gb[b0*T*nh:], st.zh[b0*T*nh:]
		st.tail = mulAddRowsSeqs(nb, Tk, Dout, T, st.w[b0*T*Tk:], 1, Tk, T*Tk, db, Dout, T*Dout, gbb[Din:], nh, T*nh, false, st.tail)
		st.tail = mulAddRowsSeqs(nb, Tk, Din, T, dsB, 1, Tk, T*Tk, hb, nh, T*nh, dz[b0*T*Din:], Din, T*Din, true, st.tail)
		st.tail = mulAddRowsSeqs(nb, T, Din, Tk, dsB, Tk, 1, T*Tk, in.z[b0*T*Din:], Din, T*Din, gbb, nh, T*nh, false, st.tail)
	}
	return dg
}
