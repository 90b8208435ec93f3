package gd

import (
	"fmt"
	"math"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
)

// TestLambdaEraseConverges measures the error of the paper's λ-erase head
// against the exact reference and checks that it falls as λ grows for the
// RBF erase kernel. The plain dot-product softmax erase is measured too:
// softmax_i(λ² x_j·x_i) tends to the key with the largest projection on x_j,
// which need not be x_j itself, so its error does not vanish; the log line
// reports it.
func TestLambdaEraseConverges(t *testing.T) {
	const B, N, d, dp, C, K = 4, 10, 10, 5, 25, 3
	T := N + 1
	x, y := randomBatch(11, B, T, d, C)
	// The same covariates scaled to unit norm: there x_j is the key of
	// largest projection on itself, and the softmax erase converges too.
	xu := append([]float64(nil), x...)
	for r := 0; r < B*T; r++ {
		n := 0.0
		for _, v := range xu[r*d : (r+1)*d] {
			n += v * v
		}
		for k := r * d; k < (r+1)*d; k++ {
			xu[k] /= math.Sqrt(n)
		}
	}
	erasers := []struct {
		name, kernel string
		x            []float64
		converges    bool
	}{
		{"rbf", "rbf", x, true},
		{"softmax", "softmax", x, false},
		{"softmax, unit-norm x", "softmax", xu, true},
	}
	for _, upd := range []string{"rbf", "softmax"} {
		for _, er := range erasers {
			x, ek, name := er.x, er.kernel, er.name
			var errs []float64
			for _, lam := range []float64{1, 3, 10, 100, 1000} {
				cfg := Config{D: d, DPrime: dp, C: C, N: N, Blocks: K, Kernel: layers.Builtin(upd, 0.7), Alpha: 2,
					Erase: EraseLambda, Lambda: lam, EraseKernel: ek}
				m := runForward(t, cfg, B, 3, x, y)
				we, _ := graph.Values(m.We)
				ref, err := Reference(x, y, B, T, d, we, dp, C, ReferenceConfig{Steps: K, Alpha: 2, Kernel: upd, Gamma: 0.7})
				if err != nil {
					t.Fatal(err)
				}
				got, _ := graph.Values(m.F[K])
				errs = append(errs, maxAbsDiff(got, ref.F[K]))
			}
			t.Logf("update %-7s erase %-20s max|f_K - f_ref| at λ = 1, 3, 10, 100, 1000: %s", upd, name, fmtErrs(errs))
			if er.converges && !(errs[2] < errs[0] && errs[4] <= 1e-10) {
				t.Errorf("%s λ-erase error does not fall to <= 1e-10: %v", name, errs)
			}
		}
	}
}

func fmtErrs(e []float64) string {
	s := ""
	for _, v := range e {
		if math.IsNaN(v) {
			s += " NaN"
			continue
		}
		s += fmt.Sprintf(" %.2e", v)
	}
	return s
}
