package data

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestLinearRegressionBayes: the posterior-mean prediction's squared error,
// averaged over many contexts, equals the closed-form Bayes error the batch
// carries (within 4 standard errors), for noiseless and noisy tasks with N
// below, at and above D.
func TestLinearRegressionBayes(t *testing.T) {
	cases := []LinearRegressionConfig{
		{D: 5, DY: 2, N: 3},
		{D: 5, DY: 1, N: 5, Noise: 0.5},
		{D: 4, DY: 1, N: 8, Noise: 0.3},
		{D: 6, DY: 3, N: 4, Noise: 0.1},
		{D: 3, DY: 2, N: 6}, // noiseless, N > D: the context determines W
	}
	for _, cfg := range cases {
		task, err := NewLinearRegression(cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := task.Sample(20000, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Validate(); err != nil {
			t.Fatal(err)
		}
		pred, err := task.PosteriorMean(b)
		if err != nil {
			t.Fatal(err)
		}
		y := b.QueryTargets()
		var sum, sq float64
		for i := 0; i < b.B; i++ {
			e := 0.0
			for r := 0; r < b.DY; r++ {
				d := pred[i*b.DY+r] - y[i*b.DY+r]
				e += d * d / float64(b.DY)
			}
			sum += e
			sq += e * e
		}
		n := float64(b.B)
		mean := sum / n
		se := math.Sqrt((sq/n - mean*mean) / n)
		oracle := b.Oracle()
		t.Logf("%+v: empirical %.4f ± %.4f, Bayes %.4f", cfg, mean, se, oracle)
		if math.Abs(mean-oracle) > 4*se+1e-12 {
			t.Errorf("%+v: posterior-mean MSE %.4f ± %.4f, closed-form Bayes error %.4f", cfg, mean, se, oracle)
		}
	}
	// Noiseless with N >= D: the context determines W, the error is 0.
	task, _ := NewLinearRegression(LinearRegressionConfig{D: 3, N: 5})
	b, _ := task.Sample(10, rand.New(rand.NewPCG(3, 3)))
	if o := b.Oracle(); o > 1e-9 {
		t.Errorf("noiseless N > D: Bayes error %v, want 0", o)
	}
}

func TestRegressionBatch(t *testing.T) {
	task, err := NewRBFRegression(RBFRegressionConfig{D: 3, DY: 2, N: 4, Noise: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	b, err := task.Sample(6, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	if o := b.Oracle(); math.Abs(o-0.04) > 1e-15 {
		t.Errorf("oracle %v, want the noise variance 0.04", o)
	}
	s, err := b.Slice(2, 5)
	if err != nil {
		t.Fatal(err)
	}
	if s.B != 3 || len(s.R) != 3*5*2 || s.R[0] != b.R[2*5*2] || len(s.Bayes) != 3 {
		t.Errorf("Slice: %+v", s)
	}
	// The query's target may be unknown (NaN), a context target may not.
	b.R[(0*5+4)*2] = math.NaN()
	if err := b.Validate(); err != nil {
		t.Errorf("NaN query target: %v", err)
	}
	bad := func(name string, mod func(*Batch), want string) {
		c := *b
		c.R = append([]float64(nil), b.R...)
		mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want one containing %q", name, err, want)
		}
	}
	bad("NaN context", func(c *Batch) { c.R[0] = math.NaN() }, "R[0]")
	bad("short R", func(c *Batch) { c.R = c.R[1:] }, "len(R)")
	bad("categories", func(c *Batch) { c.C = 3 }, "C = 3")
	bad("labels", func(c *Batch) { c.Y = make([]int, c.B*c.T) }, "Y or P")
	bad("bayes", func(c *Batch) { c.Bayes = []float64{1} }, "len(Bayes)")
	for _, cfg := range []RBFRegressionConfig{{Active: 1}, {Noise: -1}, {D: -1}} {
		if _, err := NewRBFRegression(cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
	if _, err := NewLinearRegression(LinearRegressionConfig{Noise: math.NaN()}); err == nil {
		t.Errorf("NaN noise: no error")
	}
}
