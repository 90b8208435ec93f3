package regression

import (
	"math"
	"testing"

	"github.com/gdattn/gdattn/data"
)

// TestOptimalAlpha: the closed-form one-step rate agrees with the Monte
// Carlo estimate over the task distribution, noiseless and noisy.
func TestOptimalAlpha(t *testing.T) {
	for _, c := range []struct {
		d, n  int
		sigma float64
	}{{10, 10, 0}, {5, 20, 0.5}, {3, 4, 1}} {
		a, m := optimalAlpha(c.d, c.n, c.sigma)
		task, _ := data.NewLinearRegression(data.LinearRegressionConfig{D: c.d, N: c.n, Noise: c.sigma})
		amc, mmc, err := optimalAlphaMC(task, 200_000, 1)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%+v: α* %.4f (MC %.4f), MSE %.4f (MC %.4f)", c, a, amc, m, mmc)
		if math.Abs(a-amc) > 0.02*a || math.Abs(m-mmc) > 0.02*m {
			t.Errorf("%+v: closed form α* %.4f, MSE %.4f; Monte Carlo %.4f, %.4f", c, a, m, amc, mmc)
		}
	}
}
