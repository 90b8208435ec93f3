package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSoftmaxRowInPlaceBits checks the expectation op's float32 softmax
// row, on the fused exponential, against the loop calling Exp32 per
// element that it replaces: the same bits, for rows of every length up to
// 70 (chunks of four and a tail) and with entries far below the maximum
// (outside the fused range), ±Inf and NaN.
func TestSoftmaxRowInPlaceBits(t *testing.T) {
	ref := func(x []float32) {
		mx := x[0]
		for _, v := range x[1:] {
			if v > mx {
				mx = v
			}
		}
		var sum float64
		for i, v := range x {
			e := Exp32(float64(v - mx))
			x[i] = float32(e)
			sum += e
		}
		inv := float32(1 / sum)
		for i := range x {
			x[i] *= inv
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 70; n++ {
		for trial := 0; trial < 20; trial++ {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.NormFloat64() * 5)
			}
			switch trial {
			case 1:
				x[rng.IntN(n)] = -800 // exp underflows: outside the fused range
			case 2:
				x[rng.IntN(n)] = float32(math.Inf(-1))
			case 3:
				x[rng.IntN(n)] = float32(math.NaN())
			case 4:
				x[rng.IntN(n)] = float32(math.Inf(1))
			}
			want := append([]float32(nil), x...)
			ref(want)
			softmaxRowInPlace(x)
			for i := range x {
				if math.Float32bits(x[i]) != math.Float32bits(want[i]) && !(x[i] != x[i] && want[i] != want[i]) {
					t.Fatalf("n %d trial %d: [%d] = %v, the Exp32 loop gives %v", n, trial, i, x[i], want[i])
				}
			}
		}
	}
}

// TestSoftmaxRowsBits checks the float32 softmax and log-softmax rows, on
// the fused exponential and four rows at a time on the lane kernels,
// against the per-element Exp32 loop they replace: groups of four rows and
// a rest, −900, ±Inf and NaN entries (groups that leave the lane kernels).
func TestSoftmaxRowsBits(t *testing.T) {
	ref := func(x, out []float32, n int, log bool) {
		for r := 0; r+n <= len(x); r += n {
			row, o := x[r:r+n], out[r:r+n]
			mx := row[0]
			for _, v := range row[1:] {
				if v > mx {
					mx = v
				}
			}
			var sum float64
			for i, v := range row {
				e := Exp32(float64(v - mx))
				sum += e
				if !log {
					o[i] = float32(e)
				}
			}
			if log {
				ls := math.Log(sum)
				for i, v := range row {
					o[i] = float32(float64(v-mx) - ls)
				}
				continue
			}
			inv := 1 / sum
			for i := range o {
				o[i] = float32(float64(o[i]) * inv)
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 3, 4, 5, 25, 64, 67} {
		for _, log := range []bool{false, true} {
			for trial := 0; trial < 3; trial++ {
				rows := 7 + 6*trial // groups of four rows and a rest
				x := make([]float32, rows*n)
				for i := range x {
					x[i] = float32(rng.NormFloat64() * 8)
				}
				switch trial {
				case 1:
					x[rng.IntN(len(x))] = -900
					x[rng.IntN(len(x))] = float32(math.Inf(-1))
				case 2:
					x[rng.IntN(len(x))] = float32(math.NaN())
					x[rng.IntN(len(x))] = float32(math.Inf(1))
				}
				got, want := make([]float32, len(x)), make([]float32, len(x))
				softmaxRows(x, got, n, log)
				ref(x, want, n, log)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
						t.Fatalf("n %d log %v trial %d: [%d] = %v, the Exp32 loop gives %v", n, log, trial, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestLogSoftmaxGradBits checks the float32 log-softmax gradient rows, on
// the fused exponential and four rows at a time on the lane kernels,
// against the per-element Exp32 loop they replace: groups of four rows and
// a rest, −800, −Inf and NaN entries (groups that leave the lane kernels).
func TestLogSoftmaxGradBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 3, 4, 5, 25, 64, 67, 130} {
		for trial := 0; trial < 2; trial++ {
			rows := 5 + 4*trial // groups of four rows (lanes) and a rest
			y, dy := make([]float32, rows*n), make([]float32, rows*n)
			for i := range y {
				y[i] = float32(-math.Abs(rng.NormFloat64() * 6))
				dy[i] = float32(rng.NormFloat64())
			}
			if trial == 1 {
				y[rng.IntN(len(y))] = -800
				y[rng.IntN(len(y))] = float32(math.Inf(-1))
				y[rng.IntN(len(y))] = float32(math.NaN())
			}
			got, want := make([]float32, len(y)), make([]float32, len(y))
			softmaxGradRows(y, dy, got, n, true)
			for r := 0; r < len(y); r += n {
				var s float64
				for _, g := range dy[r : r+n] {
					s += float64(g)
				}
				for i := r; i < r+n; i++ {
					want[i] = float32(float64(dy[i]) - Exp32(float64(y[i]))*s)
				}
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
					t.Fatalf("n %d trial %d: [%d] = %v, the Exp32 loop gives %v", n, trial, i, got[i], want[i])
				}
			}
		}
	}
}
