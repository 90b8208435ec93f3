package ops

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestHeadSeqsBits checks the full head's per-sequence part computed a
// block of sequences at a time (headForwardSeqs, headBackwardSeqs, the
// default where the CPU has the narrow kernels) against the loop over
// sequences (headForwardLoop, headBackwardLoop) bit for bit: the output,
// scores and weights, dz, gb, the matrices' gradients and dg; float32 and
// float64, every dot-product kernel, context keys or not, several blocks
// and a partial one, the paper's sizes (T = 11, D = 25) and odd ones.
func TestHeadSeqsBits(t *testing.T) {
	testHeadSeqsBits[float32](t)
	testHeadSeqsBits[float64](t)
}

func testHeadSeqsBits[F float32 | float64](t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	rnd := func(n int, s float64) []F {
		x := make([]F, n)
		for i := range x {
			x[i] = F(s * rng.NormFloat64())
		}
		return x
	}
	for _, sz := range [][5]int{{2*headSeqBlock + 5, 11, 25, 25, 10}, {headSeqBlock, 11, 25, 25, 5}, {9, 5, 7, 3, 4}, {3, 17, 6, 9, 2}} {
		B, T, Din, Dout, Dk := sz[0], sz[1], sz[2], sz[3], sz[4]
		for _, kind := range []KernelKind{KindLinear, KindExp, KindSoftmax} {
			for _, ctx := range []bool{true, false} {
				name := fmt.Sprintf("%T B %d T %d Din %d Dout %d %v ctx %v", F(0), B, T, Din, Dout, kind, ctx)
				op := &HeadOp{kind: kind, gFixed: 0.7, ctx: ctx}
				d := headDims{b: B, t: T, tk: T, din: Din, dk: Dk, dv: Dk, dout: Dout, rows: T, g: 0.7}
				if ctx {
					d.tk--
				}
				if !headSeqsOK(d) {
					if haveNarrowAVX2 && HaveRowKernel() && d.tk <= 16 {
						t.Fatalf("%s: blocks not taken", name)
					}
					continue
				}
				in := headInputs[F]{z: rnd(B*T*Din, 1), wq: rnd(Din*Dk, 0.3), wk: rnd(Din*Dk, 0.3), wv: rnd(Din*Dk, 0.3), wo: rnd(Dk*Dout, 0.3)}
				dout := rnd(B*T*Dout, 1)
				// The default path (blocks).
				st := &headState[F]{}
				out := make([]F, B*T*Dout)
				headForward(op, st, d, in, out)
				dz := make([]F, len(in.z))
				headBackward(op, st, d, in, out, dout, dz)
				// The loop over sequences, with headForward's and
				// headBackward's other steps.
				ref := &headState[F]{}
				headMatrices(ref, d, in)
				M, nh := B*T, Din+Dout
				ref.zh = make([]F, M*nh)
				tokenGemm(false, M, nh, Din, in.z, Din, ref.h, nh, 0, ref.zh, nh)
				ref.s, ref.w = make([]F, M*d.tk), make([]F, M*d.tk)
				rout := make([]F, len(out))
				headForwardLoop(op, ref, d, in, rout)
				ref.gb = make([]F, M*nh)
				rdz := make([]F, len(in.z))
				dg := headBackwardLoop(op, ref, d, in, dout, rdz)
				tokenGemm(true, M, Din, nh, ref.gb, nh, ref.h, nh, 1, rdz, Din)
				headParamGrads(ref, d, in, dg, rdz)
				for _, c := range []struct {
					what      string
					got, want []F
				}{{"out", out, rout}, {"s", st.s, ref.s}, {"w", st.w, ref.w}, {"dz", dz, rdz}, {"gb", st.gb, ref.gb},
					{"dW_Q", st.dwq, ref.dwq}, {"dW_K", st.dwk, ref.dwk}, {"dW_V", st.dwv, ref.dwv}, {"dP", st.dwo, ref.dwo}} {
					for i := range c.want {
						if c.got[i] != c.want[i] {
							t.Fatalf("%s: %s[%d] = %v, want %v (a sequence at a time)", name, c.what, i, c.got[i], c.want[i])
						}
					}
				}
				if st.dg != ref.dg {
					t.Fatalf("%s: dg = %v, want %v", name, st.dg, ref.dg)
				}
			}
		}
	}
}

// TestRegroupedSeqsBits checks the regrouped query head's backward pass,
// whose context rows' dz = wdᵀ·up run a block of sequences at a time
// (mulAddRowsSeqs), against that product and dP_q a sequence at a time
// (mulAddRows), bit for bit: dz, dP_q and dg, float32 and float64, several
// blocks and a partial one.
func TestRegroupedSeqsBits(t *testing.T) {
	testRegroupedSeqsBits[float32](t)
	testRegroupedSeqsBits[float64](t)
}

func testRegroupedSeqsBits[F float32 | float64](t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	rnd := func(n int, s float64) []F {
		x := make([]F, n)
		for i := range x {
			x[i] = F(s * rng.NormFloat64())
		}
		return x
	}
	for _, sz := range [][4]int{{2*headSeqBlock + 5, 11, 25, 25}, {7, 5, 6, 3}, {3, 3, 4, 2}} {
		B, T, Din, Dout := sz[0], sz[1], sz[2], sz[3]
		for _, kind := range []KernelKind{KindLinear, KindExp, KindSoftmax} {
			op := &HeadOp{kind: kind, gFixed: 0.7, ctx: true, query: true, regroup: true}
			d := headDims{b: B, t: T, tk: T - 1, din: Din, dk: 4, dv: 4, dout: Dout, rows: 1, g: 0.7}
			in := headInputs[F]{z: rnd(B*T*Din, 1), wq: rnd(Din*4, 0.3), wk: rnd(Din*4, 0.3), wv: rnd(Din*4, 0.3), wo: rnd(4*Dout, 0.3)}
			dout := rnd(B*Dout, 1)
			st := &headState[F]{}
			out := make([]F, B*Dout)
			headForward(op, st, d, in, out)
			dz := make([]F, len(in.z))
			headBackward(op, st, d, in, out, dout, dz)
			// A sequence at a time, from the forward values in st.
			Tk, nh, q := T-1, Din+Dout, T-1
			g := F(d.g)
			u := make([]F, B*Din)
			tokenGemm(true, B, Din, Dout, dout, Dout, st.h[Din:], nh, 0, u, Din)
			rdz, dpq := make([]F, len(dz)), make([]F, B*Din)
			dw, wd, up := make([]F, Tk), make([]F, 2*Tk), make([]F, 2*Din)
			var dots []float64
			var dg float64
			for b := 0; b < B; b++ {
				zb := in.z[b*T*Din : (b+1)*T*Din]
				ub := u[b*Din : (b+1)*Din]
				dots = rowsDot(ub, zb, dw, dots)
				dg = scoreGrads(kind, g, wd[Tk:], st.w[b*Tk:(b+1)*Tk], dw, st.s[b*Tk:(b+1)*Tk], dg)
				copy(wd[:Tk], st.w[b*Tk:(b+1)*Tk])
				copy(up[:Din], ub)
				copy(up[Din:], st.pq[b*Din:(b+1)*Din])
				mulAddRows(Tk, Din, 2, wd, 1, Tk, up, Din, rdz[b*T*Din:], Din, false)
				mulAddRows(1, Din, Tk, wd[Tk:], Tk, 1, zb, Din, dpq[b*Din:], Din, false)
			}
			tokenGemm(true, B, Din, Din, dpq, Din, st.h, nh, 0, rdz[q*Din:], T*Din)
			for i := range rdz {
				if dz[i] != rdz[i] {
					t.Fatalf("%T B %d T %d %v: dz[%d] = %v, want %v (a sequence at a time)", dz[0], B, T, kind, i, dz[i], rdz[i])
				}
			}
			for i := range dpq {
				if st.dpq[i] != dpq[i] {
					t.Fatalf("%T B %d T %d %v: dP_q[%d] = %v, want %v", dz[0], B, T, kind, i, st.dpq[i], dpq[i])
				}
			}
			if st.dg != dg {
				t.Fatalf("%T B %d T %d %v: dg = %v, want %v", dz[0], B, T, kind, st.dg, dg)
			}
		}
	}
}
