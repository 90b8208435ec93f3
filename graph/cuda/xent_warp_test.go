//go:build gdcuda || cudaemu

package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// lseWarp is xent_lse_warp's log-sum-exp of row evaluated directly in its
// order: each lane's running maximum and rescaled sum over the elements
// j ≡ lane (mod 32), then the butterfly of gdattn_lse_join, lane 0's pair.
func lseWarp(row []float64) float64 {
	var m, s [32]float64
	for l := range m {
		m[l] = math.Inf(-1)
		for j := l; j < len(row); j += 32 {
			v := row[j]
			if v > m[l] {
				if s[l] != 0 {
					s[l] *= math.Exp(m[l] - v)
				}
				m[l] = v
			}
			if !math.IsInf(v, -1) {
				s[l] += math.Exp(v - m[l])
			}
		}
	}
	for o := 16; o > 0; o >>= 1 {
		pm, ps := m, s
		for l := range m {
			om, os := pm[l^o], ps[l^o]
			mx := pm[l]
			if om > mx {
				mx = om
			}
			a, b := 0.0, 0.0
			if ps[l] != 0 {
				a = ps[l] * math.Exp(pm[l]-mx)
			}
			if os != 0 {
				b = os * math.Exp(om-mx)
			}
			m[l], s[l] = mx, a+b
		}
	}
	return m[0] + math.Log(s[0])
}

// TestXentLSEWarp: the cross-entropy's one-warp-per-row log-sum-exp
// (xent_lse_warp) against its own order evaluated in Go (within 1e-14:
// the exp and log of C and Go may differ in the last bit) and against the
// serial two-pass log-sum-exp (within 1e-12), for rows of 1 to 3000
// logits, float64 and float32: unscored rows untouched, −Inf logits
// ignored, a row of −Inf giving −Inf, a NaN logit giving NaN; with
// wantloss, the rows' loss terms, and xent_loss's mean of them in row order
// (NaN with a NaN row, 0 with none scored).
func TestXentLSEWarp(t *testing.T) {
	be, _ := execBackend(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, c := range []int{1, 7, 32, 33, 300, 3000} {
			const rows = 6
			x := make([]float64, rows*c)
			for i := range x {
				x[i] = 8 * rng.NormFloat64()
				if dt == tensor.Float32 {
					x[i] = float64(float32(x[i]))
				}
			}
			labels := []int64{0, int64(c - 1), -1, int64(c / 2), 0, 0}
			// Row 3: some −Inf logits (not its label's); row 4: all −Inf;
			// row 5: a NaN.
			for j := 0; j < c; j += 3 {
				if int64(j) != labels[3] {
					x[3*c+j] = math.Inf(-1)
				}
			}
			for j := range c {
				x[4*c+j] = math.Inf(-1)
			}
			x[5*c+c-1] = math.NaN()
			kernel := "xent_lse_warp" + suffix(dt)
			xp := mustAlloc(t, be, int64(8*len(x)))
			if dt == tensor.Float32 {
				x32 := make([]float32, len(x))
				for i, v := range x {
					x32[i] = float32(v)
				}
				put32(t, be, xp, x32)
			} else {
				put64(t, be, xp, x)
			}
			lp := mustAlloc(t, be, 8*rows)
			lb := make([]float64, rows)
			for i, l := range labels {
				lb[i] = math.Float64frombits(uint64(l))
			}
			put64(t, be, lp, lb)
			lse := mustAlloc(t, be, 8*rows)
			sentinel := make([]float64, rows)
			for i := range sentinel {
				sentinel[i] = -12345
			}
			put64(t, be, lse, sentinel)
			must(t, be.Launch(kernel, rows, int64(rows), int32(c), xp, lp, lse, int32(0)))
			must(t, be.Sync())
			got := get64(t, be, lse, rows)
			for r := range rows {
				row := x[r*c : (r+1)*c]
				if labels[r] < 0 {
					if got[r] != -12345 {
						t.Errorf("%s, %d logits: unscored row %d written: %v", kernel, c, r, got[r])
					}
					continue
				}
				want := lseWarp(row)
				mx := math.Inf(-1)
				for _, v := range row {
					mx = math.Max(mx, v)
				}
				s := 0.0
				for _, v := range row {
					s += math.Exp(v - mx)
				}
				serial := mx + math.Log(s)
				switch r {
				case 4:
					if !math.IsInf(got[r], -1) {
						t.Errorf("%s, %d logits: a row of −Inf gives %v, want −Inf", kernel, c, got[r])
					}
					continue
				case 5:
					if !math.IsNaN(got[r]) {
						t.Errorf("%s, %d logits: a row with a NaN gives %v, want NaN", kernel, c, got[r])
					}
					continue
				}
				if math.Abs(got[r]-want) > 1e-14*math.Abs(want) || math.Abs(got[r]-serial) > 1e-12*math.Abs(serial) {
					t.Errorf("%s, %d logits, row %d: %v; in the warp's order %v, serially %v", kernel, c, r, got[r], want, serial)
				}
			}
			// With wantloss: the scored rows' loss terms, the log-sum-exp
			// less the label's logit; then xent_loss, their sum in row
			// order over the number of scored rows (the host op's order).
			lse2 := lse
			put64(t, be, lse2, sentinel)
			must(t, be.Launch(kernel, rows, int64(rows), int32(c), xp, lp, lse2, int32(1)))
			loss := mustAlloc(t, be, 8)
			must(t, be.Launch("xent_loss"+suffix(dt), 1, int64(1), int64(rows), lp, lse2, loss))
			must(t, be.Sync())
			nll := get64(t, be, lse2, rows)
			for r := range rows {
				if labels[r] < 0 {
					if nll[r] != -12345 {
						t.Errorf("%s, %d logits: unscored row %d written with wantloss: %v", kernel, c, r, nll[r])
					}
					continue
				}
				if want := got[r] - x[r*c+int(labels[r])]; !sameFloat(nll[r], want) {
					t.Errorf("%s, %d logits, row %d: loss term %v, want %v", kernel, c, r, nll[r], want)
				}
			}
			// Rows 4 and 5 give −Inf − x and NaN: the loss is NaN.
			if a := getT(t, be, dt, loss, 1)[0]; !math.IsNaN(a) {
				t.Errorf("xent_loss%s, %d logits: loss %v with a NaN row, want NaN", suffix(dt), c, a)
			}
			// Without the bad rows, and with none scored.
			lb[4], lb[5] = math.Float64frombits(^uint64(0)), math.Float64frombits(^uint64(0)) // −1: unscored
			put64(t, be, lp, lb)
			must(t, be.Launch("xent_loss"+suffix(dt), 1, int64(1), int64(rows), lp, lse2, loss))
			must(t, be.Sync())
			total, s := 0.0, 0
			for r, l := range labels[:4] {
				if l >= 0 {
					total += nll[r]
					s++
				}
			}
			if a, want := getT(t, be, dt, loss, 1)[0], roundT(dt == tensor.Float32, total/float64(s)); !sameFloat(a, want) {
				t.Errorf("xent_loss%s, %d logits: loss %v, want %v (the scored rows' terms in row order over %d)", suffix(dt), c, a, want, s)
			}
			for i := range lb {
				lb[i] = math.Float64frombits(^uint64(0))
			}
			put64(t, be, lp, lb)
			must(t, be.Launch("xent_loss"+suffix(dt), 1, int64(1), int64(rows), lp, lse2, loss))
			must(t, be.Sync())
			if a := getT(t, be, dt, loss, 1)[0]; a != 0 || math.Signbit(a) {
				t.Errorf("xent_loss%s: loss %v with no scored row, want 0", suffix(dt), a)
			}
		}
	}
}
