package gd_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gdattn/gdattn/gd"
)

// refApprox compares floats to a relative and absolute tolerance of tol.
func refApprox(tol float64) cmp.Option { return cmpopts.EquateApprox(tol, tol) }

// refSigmoid is the logistic function; for C = 2, d' = 1 and W_e = [a, b],
// softmax(W_eᵀ f) = [σ((a−b) f), σ((b−a) f)].
func refSigmoid(z float64) float64 { return 1 / (1 + math.Exp(-z)) }

// refRandomTask draws a batch x ~ U(-1,1), context labels uniform in 0..C-1,
// query label -1, and W_e ~ N(0, 1), all from seed.
func refRandomTask(seed uint64, B, T, d, dPrime, C int) (x []float64, y []int, we []float64) {
	rng := rand.New(rand.NewPCG(seed, seed))
	x = make([]float64, B*T*d)
	for i := range x {
		x[i] = 2*rng.Float64() - 1
	}
	y = make([]int, B*T)
	for i := range y {
		if i%T == T-1 {
			y[i] = -1
			continue
		}
		y[i] = rng.IntN(C)
	}
	we = make([]float64, dPrime*C)
	for i := range we {
		we[i] = rng.NormFloat64()
	}
	return x, y, we
}

// refNaiveGD is an independent, deliberately plain implementation of the
// functional GD of eqs. (2)-(3): kappa(b, i, j) is the kernel between context
// position i and position j of context b. It returns f after the given number
// of steps, shape (B, T, d').
func refNaiveGD(y []int, B, T int, we []float64, dPrime, C, steps int, alpha float64, kappa func(b, i, j int) float64) []float64 {
	N := T - 1
	f := make([][][]float64, B)
	for b := range f {
		f[b] = make([][]float64, T)
		for j := range f[b] {
			f[b][j] = make([]float64, dPrime)
		}
	}
	expect := func(fv []float64) []float64 {
		logits := make([]float64, C)
		for c := range logits {
			for r := range fv {
				logits[c] += we[r*C+c] * fv[r]
			}
		}
		m := logits[0]
		for _, l := range logits {
			m = math.Max(m, l)
		}
		z := 0.0
		for _, l := range logits {
			z += math.Exp(l - m)
		}
		e := make([]float64, dPrime)
		for c, l := range logits {
			for r := range e {
				e[r] += we[r*C+c] * math.Exp(l-m) / z
			}
		}
		return e
	}
	for k := 0; k < steps; k++ {
		next := make([][][]float64, B)
		for b := range next {
			next[b] = make([][]float64, T)
			for j := range next[b] {
				next[b][j] = append([]float64(nil), f[b][j]...)
				for i := 0; i < N; i++ {
					ei := expect(f[b][i])
					for r := 0; r < dPrime; r++ {
						next[b][j][r] += alpha / float64(N) * (we[r*C+y[b*T+i]] - ei[r]) * kappa(b, i, j)
					}
				}
			}
		}
		f = next
	}
	var flat []float64
	for b := range f {
		for j := range f[b] {
			flat = append(flat, f[b][j]...)
		}
	}
	return flat
}

// refKappa returns κ(x_i, x_j) for the named kernel, built from RefKernel,
// with the softmax normalisation over the N context keys done here.
func refKappa(t *testing.T, x []float64, T, d int, name string, gamma float64) func(b, i, j int) float64 {
	t.Helper()
	k, err := gd.RefKernel(name, gamma)
	if err != nil {
		t.Fatal(err)
	}
	row := func(b, p int) []float64 { return x[(b*T+p)*d : (b*T+p+1)*d] }
	return func(b, i, j int) float64 {
		v := k(row(b, i), row(b, j))
		if name != "softmax" {
			return v
		}
		z := 0.0
		for ip := 0; ip < T-1; ip++ {
			z += k(row(b, ip), row(b, j))
		}
		return v / z
	}
}

// refContextLoss is the context cross-entropy −(1/N) Σ_i log p(y_i | f_i),
// averaged over the B contexts, for f of shape (B, T, d').
func refContextLoss(t *testing.T, f []float64, y []int, B, T int, we []float64, dPrime, C int) float64 {
	t.Helper()
	loss := 0.0
	for b := 0; b < B; b++ {
		for i := 0; i < T-1; i++ {
			p, err := gd.RefSoftmax(we, dPrime, C, f[(b*T+i)*dPrime:(b*T+i+1)*dPrime])
			if err != nil {
				t.Fatal(err)
			}
			loss -= math.Log(p[y[b*T+i]])
		}
	}
	return loss / float64(B*(T-1))
}

func TestRefKernel(t *testing.T) {
	// q = (1, 2), k = (3, -1): q·k = 1, ‖q−k‖² = 4 + 9 = 13.
	q, k := []float64{1, 2}, []float64{3, -1}
	tests := []struct {
		name  string
		gamma float64
		want  float64
	}{
		{"linear", 7, 1}, // gamma ignored
		{"rbf", 0.5, math.Exp(-0.5 * 13)},
		{"exp", 0.5, math.Exp(0.5)},
		{"laplacian", 0.5, math.Exp(-0.5 * math.Sqrt(13))},
		{"softmax", 0.5, math.Exp(0.5)}, // unnormalised
		{"rbf", 0, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/g=%v", tt.name, tt.gamma), func(t *testing.T) {
			kern, err := gd.RefKernel(tt.name, tt.gamma)
			if err != nil {
				t.Fatal(err)
			}
			if got := kern(q, k); !cmp.Equal(got, tt.want, refApprox(1e-14)) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	if got, want := gd.RefKernelNames(), []string{"linear", "rbf", "exp", "laplacian", "softmax"}; !cmp.Equal(got, want) {
		t.Errorf("RefKernelNames() = %v, want %v", got, want)
	}
}

func TestRefKernelErrors(t *testing.T) {
	tests := []struct {
		name    string
		kernel  string
		gamma   float64
		wantErr string
	}{
		{"unknown", "cosine", 1, `name = "cosine"`},
		{"empty", "", 1, `name = ""`},
		{"case", "RBF", 1, `name = "RBF"`},
		{"nan gamma", "rbf", math.NaN(), "gamma = NaN"},
		{"inf gamma", "exp", math.Inf(1), "gamma = +Inf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := gd.RefKernel(tt.kernel, tt.gamma)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestRefSoftmaxAndExpectedEmbedding(t *testing.T) {
	// W_e is 2×3: columns w_0 = (1, 0), w_1 = (0, 1), w_2 = (-1, -1).
	we := []float64{
		1, 0, -1,
		0, 1, -1,
	}
	// The logits W_eᵀ f for f = (a, b) are (a, b, −a−b).
	s := func(a, b float64) []float64 {
		z := math.Exp(a) + math.Exp(b) + math.Exp(-a-b)
		return []float64{math.Exp(a) / z, math.Exp(b) / z, math.Exp(-a-b) / z}
	}
	e := func(p []float64) []float64 { return []float64{p[0] - p[2], p[1] - p[2]} }
	tests := []struct {
		name      string
		f         []float64
		wantP     []float64
		wantE     []float64
		tolerance float64
	}{
		// f = 0: uniform probabilities, E = mean of the columns = (0, 0).
		{"zero", []float64{0, 0}, []float64{1. / 3, 1. / 3, 1. / 3}, []float64{0, 0}, 1e-15},
		{"small", []float64{0.3, -0.7}, s(0.3, -0.7), e(s(0.3, -0.7)), 1e-14},
		// Logits (800, 0, −800): a naive exp overflows; the stable form
		// gives the one-hot (1, 0, 0) and E = w_0.
		{"large", []float64{800, 0}, []float64{1, 0, 0}, []float64{1, 0}, 1e-15},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := gd.RefSoftmax(we, 2, 3, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if !cmp.Equal(p, tt.wantP, refApprox(tt.tolerance)) {
				t.Errorf("RefSoftmax: got %v, want %v", p, tt.wantP)
			}
			ev, err := gd.RefExpectedEmbedding(we, 2, 3, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if !cmp.Equal(ev, tt.wantE, refApprox(tt.tolerance)) {
				t.Errorf("RefExpectedEmbedding: got %v, want %v", ev, tt.wantE)
			}
		})
	}
}

func TestRefEmbeddingErrors(t *testing.T) {
	we := []float64{1, 0, 0, 1} // 2×2
	tests := []struct {
		name    string
		we      []float64
		dPrime  int
		C       int
		f       []float64
		wantErr string
	}{
		{"dPrime zero", we, 0, 2, []float64{0, 0}, "dPrime = 0"},
		{"C negative", we, 2, -1, []float64{0, 0}, "C = -1"},
		{"we length", we[:3], 2, 2, []float64{0, 0}, "len(we) = 3"},
		{"f length", we, 2, 2, []float64{0}, "len(f) = 1"},
		{"we NaN", []float64{1, math.NaN(), 0, 1}, 2, 2, []float64{0, 0}, "we: element 1 is NaN"},
		{"f Inf", we, 2, 2, []float64{0, math.Inf(-1)}, "f: element 1 is -Inf"},
		{"logit overflow", []float64{1e308, 0, 1e308, 1}, 2, 2, []float64{1e308, 1e308}, "overflowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := gd.RefSoftmax(tt.we, tt.dPrime, tt.C, tt.f); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("RefSoftmax: got error %v, want one containing %q", err, tt.wantErr)
			}
			if _, err := gd.RefExpectedEmbedding(tt.we, tt.dPrime, tt.C, tt.f); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("RefExpectedEmbedding: got error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestReferenceHandComputed checks tiny cases with d = d' = 1 and C = 2,
// worked out in closed form in the comments.
func TestReferenceHandComputed(t *testing.T) {
	th1 := math.Tanh(1)
	tests := []struct {
		name  string
		x     []float64
		y     []int
		we    []float64
		cfg   gd.ReferenceConfig
		wantF [][]float64
		wantE [][]float64
		wantP []float64
	}{
		{
			// N = 1, W_e = [1, −1]: mean 0 and E(w_e|f) = σ(2f) − σ(−2f) = tanh f.
			// Linear kernel, α = 1, x_1 = 1, x_q = 2, y_1 = 0 (w_{y_1} = 1):
			//   step 1: f_j = 1·(1 − 0)·x_1·x_j          → (1, 2)
			//   step 2: f_j += (1 − tanh 1)·x_1·x_j      → (2 − tanh 1, 4 − 2 tanh 1)
			name:  "linear N=1 two steps",
			x:     []float64{1, 2},
			y:     []int{0, -1},
			we:    []float64{1, -1},
			cfg:   gd.ReferenceConfig{Steps: 2, Alpha: 1, Kernel: "linear"},
			wantF: [][]float64{{0, 0}, {1, 2}, {2 - th1, 4 - 2*th1}},
			wantE: [][]float64{{0, 0}, {th1, math.Tanh(2)}, {math.Tanh(2 - th1), math.Tanh(4 - 2*th1)}},
			wantP: []float64{refSigmoid(2 * (4 - 2*th1)), refSigmoid(-2 * (4 - 2*th1))},
		},
		{
			// N = 2, W_e = [2, 0]: mean 1, E(w_e|f) = 2σ(2f). y = (0, 1), so the
			// residuals at f = 0 are (2−1, 0−1) = (1, −1). RBF g = 1, α = 2,
			// α/N = 1, x = (0, 1 | 0.25):
			//   f_j = exp(−x_j²) − exp(−(1−x_j)²)
			//   f = (1 − e⁻¹, e⁻¹ − 1, e^{−1/16} − e^{−9/16})
			name:  "rbf N=2 one step",
			x:     []float64{0, 1, 0.25},
			y:     []int{0, 1, -1},
			we:    []float64{2, 0},
			cfg:   gd.ReferenceConfig{Steps: 1, Alpha: 2, Kernel: "rbf", Gamma: 1},
			wantF: [][]float64{{0, 0, 0}, {1 - math.Exp(-1), math.Exp(-1) - 1, math.Exp(-1./16) - math.Exp(-9./16)}},
			wantE: [][]float64{
				{1, 1, 1},
				{2 * refSigmoid(2*(1-math.Exp(-1))), 2 * refSigmoid(2*(math.Exp(-1)-1)), 2 * refSigmoid(2*(math.Exp(-1./16)-math.Exp(-9./16)))},
			},
			wantP: []float64{refSigmoid(2 * (math.Exp(-1./16) - math.Exp(-9./16))), refSigmoid(-2 * (math.Exp(-1./16) - math.Exp(-9./16)))},
		},
		{
			// As above with y = (0, 0): residuals (1, 1), so without bias
			// f_j = exp(−x_j²) + exp(−(1−x_j)²); the bias adds
			// (α/N)(1 + 1) = 2 to every position (kernel κ + 1).
			name: "rbf N=2 bias",
			x:    []float64{0, 1, 0.25},
			y:    []int{0, 0, -1},
			we:   []float64{2, 0},
			cfg:  gd.ReferenceConfig{Steps: 1, Alpha: 2, Kernel: "rbf", Gamma: 1, Bias: true},
			wantF: [][]float64{{0, 0, 0}, {
				1 + math.Exp(-1) + 2,
				math.Exp(-1) + 1 + 2,
				math.Exp(-1./16) + math.Exp(-9./16) + 2,
			}},
			wantE: [][]float64{
				{1, 1, 1},
				{2 * refSigmoid(2*(3+math.Exp(-1))), 2 * refSigmoid(2*(3+math.Exp(-1))), 2 * refSigmoid(2*(2+math.Exp(-1./16)+math.Exp(-9./16)))},
			},
			wantP: []float64{refSigmoid(2 * (2 + math.Exp(-1./16) + math.Exp(-9./16))), refSigmoid(-2 * (2 + math.Exp(-1./16) + math.Exp(-9./16)))},
		},
		{
			// Softmax kernel, g = 1, keys x_1 = 0, x_2 = 1:
			//   κ(x_1, x_j) = 1/(1 + e^{x_j}),  κ(x_2, x_j) = e^{x_j}/(1 + e^{x_j}).
			// Residuals (1, −1) as in the rbf case, α/N = 1:
			//   f_j = (1 − e^{x_j})/(1 + e^{x_j}) = −tanh(x_j/2) → (0, −tanh ½, −tanh ⅛).
			name:  "softmax N=2 one step",
			x:     []float64{0, 1, 0.25},
			y:     []int{0, 1, -1},
			we:    []float64{2, 0},
			cfg:   gd.ReferenceConfig{Steps: 1, Alpha: 2, Kernel: "softmax", Gamma: 1},
			wantF: [][]float64{{0, 0, 0}, {0, -math.Tanh(0.5), -math.Tanh(0.125)}},
			wantE: [][]float64{
				{1, 1, 1},
				{1, 2 * refSigmoid(-2*math.Tanh(0.5)), 2 * refSigmoid(-2*math.Tanh(0.125))},
			},
			wantP: []float64{refSigmoid(-2 * math.Tanh(0.125)), refSigmoid(2 * math.Tanh(0.125))},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			T := len(tt.y)
			res, err := gd.Reference(tt.x, tt.y, 1, T, 1, tt.we, 1, 2, tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			opt := refApprox(1e-14)
			if !cmp.Equal(res.F, tt.wantF, opt) {
				t.Errorf("F: got %v, want %v", res.F, tt.wantF)
			}
			if !cmp.Equal(res.E, tt.wantE, opt) {
				t.Errorf("E: got %v, want %v", res.E, tt.wantE)
			}
			if !cmp.Equal(res.Probs, tt.wantP, opt) {
				t.Errorf("Probs: got %v, want %v", res.Probs, tt.wantP)
			}
		})
	}
}

// TestReferenceFirstStepUsesMeanEmbedding checks Section 2.4: from f = 0,
// E(w_e|f) is the mean w̄_e of the columns of W_e at every position, so the
// first step is the kernel-weighted sum of w_{e,y_i} − w̄_e.
func TestReferenceFirstStepUsesMeanEmbedding(t *testing.T) {
	const B, T, d, dPrime, C = 3, 6, 4, 3, 5
	for _, kernel := range gd.RefKernelNames() {
		t.Run(kernel, func(t *testing.T) {
			x, y, we := refRandomTask(7, B, T, d, dPrime, C)
			cfg := gd.ReferenceConfig{Steps: 1, Alpha: 0.8, Kernel: kernel, Gamma: 0.6}
			res, err := gd.Reference(x, y, B, T, d, we, dPrime, C, cfg)
			if err != nil {
				t.Fatal(err)
			}
			mean := make([]float64, dPrime)
			for r := range mean {
				for c := 0; c < C; c++ {
					mean[r] += we[r*C+c] / C
				}
			}
			kappa := refKappa(t, x, T, d, kernel, cfg.Gamma)
			wantE := make([]float64, B*T*dPrime)
			wantF := make([]float64, B*T*dPrime)
			for b := 0; b < B; b++ {
				for j := 0; j < T; j++ {
					copy(wantE[(b*T+j)*dPrime:], mean)
					for i := 0; i < T-1; i++ {
						for r := 0; r < dPrime; r++ {
							wantF[(b*T+j)*dPrime+r] += cfg.Alpha / (T - 1) * (we[r*C+y[b*T+i]] - mean[r]) * kappa(b, i, j)
						}
					}
				}
			}
			if !cmp.Equal(res.E[0], wantE, refApprox(1e-13)) {
				t.Errorf("E[0]: got %v, want the column mean %v everywhere", res.E[0], mean)
			}
			if !cmp.Equal(res.F[1], wantF, refApprox(1e-12)) {
				t.Errorf("F[1]: got %v, want %v", res.F[1], wantF)
			}
		})
	}
}

// TestReferenceSoftmaxKernelNormalised recovers the kernel matrix used by
// Reference from one GD step and checks that, for "softmax", the weights of
// every query sum to one over the N context keys and match
// exp(g x_i·x_j)/Σ_{i'} exp(g x_{i'}·x_j). The other kernels must match
// RefKernel.
//
// Recovery: take d' = N, C = N+1, W_e = [I_N | 0] and y_i = i. Then
// w̄_e = m·1 with m = 1/(N+1) and the first step gives, for component c,
// Δf_j[c] = (α/N)(κ(x_c, x_j) − m S_j) with S_j = Σ_i κ(x_i, x_j). Summing
// over c, Σ_c Δf_j[c] = (α/N) S_j (1 − N m), so
// S_j = (N/α) Σ_c Δf_j[c] / (1 − N m) and κ(x_c, x_j) = (N/α) Δf_j[c] + m S_j.
func TestReferenceSoftmaxKernelNormalised(t *testing.T) {
	const N, d, alpha = 4, 3, 0.5
	const T, dPrime, C = N + 1, N, N + 1
	m := 1.0 / (N + 1)
	we := make([]float64, dPrime*C)
	for r := 0; r < dPrime; r++ {
		we[r*C+r] = 1
	}
	y := []int{0, 1, 2, 3, -1}
	x, _, _ := refRandomTask(3, 1, T, d, 1, 1)
	for _, kernel := range gd.RefKernelNames() {
		t.Run(kernel, func(t *testing.T) {
			const gamma = 1.5
			res, err := gd.Reference(x, y, 1, T, d, we, dPrime, C, gd.ReferenceConfig{Steps: 1, Alpha: alpha, Kernel: kernel, Gamma: gamma})
			if err != nil {
				t.Fatal(err)
			}
			kern, err := gd.RefKernel(kernel, gamma)
			if err != nil {
				t.Fatal(err)
			}
			row := func(p int) []float64 { return x[p*d : (p+1)*d] }
			got := make([]float64, N*T)  // (N, T): recovered κ(x_i, x_j)
			want := make([]float64, N*T) // (N, T)
			sums := make([]float64, T)
			for j := 0; j < T; j++ {
				df := res.F[1][j*dPrime : (j+1)*dPrime]
				total := 0.0
				for _, v := range df {
					total += v
				}
				S := N / alpha * total / (1 - N*m)
				z := 0.0
				for i := 0; i < N; i++ {
					z += kern(row(i), row(j))
				}
				for i := 0; i < N; i++ {
					got[i*T+j] = N/alpha*df[i] + m*S
					sums[j] += got[i*T+j]
					want[i*T+j] = kern(row(i), row(j))
					if kernel == "softmax" {
						want[i*T+j] /= z
					}
				}
			}
			if !cmp.Equal(got, want, refApprox(1e-12)) {
				t.Errorf("kernel matrix: got %v, want %v", got, want)
			}
			if kernel == "softmax" {
				ones := []float64{1, 1, 1, 1, 1}
				if !cmp.Equal(sums, ones, refApprox(1e-12)) {
					t.Errorf("softmax weights summed over keys: got %v, want %v", sums, ones)
				}
			}
		})
	}
}

// TestReferenceMatchesNaive compares Reference, with and without the bias,
// to refNaiveGD driven by κ and by κ + 1 respectively.
func TestReferenceMatchesNaive(t *testing.T) {
	const B, T, d, dPrime, C, steps = 2, 7, 3, 4, 6, 4
	x, y, we := refRandomTask(11, B, T, d, dPrime, C)
	for _, kernel := range gd.RefKernelNames() {
		for _, bias := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/bias=%v", kernel, bias), func(t *testing.T) {
				cfg := gd.ReferenceConfig{Steps: steps, Alpha: 1.3, Kernel: kernel, Gamma: 0.7, Bias: bias}
				res, err := gd.Reference(x, y, B, T, d, we, dPrime, C, cfg)
				if err != nil {
					t.Fatal(err)
				}
				kappa := refKappa(t, x, T, d, kernel, cfg.Gamma)
				if bias {
					plain := kappa
					kappa = func(b, i, j int) float64 { return plain(b, i, j) + 1 }
				}
				want := refNaiveGD(y, B, T, we, dPrime, C, steps, cfg.Alpha, kappa)
				if !cmp.Equal(res.F[steps], want, refApprox(1e-12)) {
					t.Errorf("F[%d]: got %v, want %v", steps, res.F[steps], want)
				}
				for b := 0; b < B; b++ {
					q := (b*T + T - 1) * dPrime
					p, err := gd.RefSoftmax(we, dPrime, C, want[q:q+dPrime])
					if err != nil {
						t.Fatal(err)
					}
					if got := res.Probs[b*C : (b+1)*C]; !cmp.Equal(got, p, refApprox(1e-12)) {
						t.Errorf("Probs of context %d: got %v, want %v", b, got, p)
					}
				}
			})
		}
	}
}

// TestReferenceDescends checks that, for the positive-definite kernels and a
// small step, the context cross-entropy decreases at every step: the
// functional update is then ordinary GD on (A, b) (Appendix B). Not asserted
// for "softmax", which is not symmetric and so not a GD step.
func TestReferenceDescends(t *testing.T) {
	const B, T, d, dPrime, C, steps = 4, 11, 5, 3, 6, 30
	tests := []struct {
		kernel string
		gamma  float64
		alpha  float64
		bias   bool
	}{
		{"linear", 0, 0.2, false},
		{"linear", 0, 0.2, true},
		{"rbf", 1, 0.5, false},
		{"exp", 0.5, 0.2, false},
		{"laplacian", 1, 0.5, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/bias=%v", tt.kernel, tt.bias), func(t *testing.T) {
			x, y, we := refRandomTask(5, B, T, d, dPrime, C)
			cfg := gd.ReferenceConfig{Steps: steps, Alpha: tt.alpha, Kernel: tt.kernel, Gamma: tt.gamma, Bias: tt.bias}
			res, err := gd.Reference(x, y, B, T, d, we, dPrime, C, cfg)
			if err != nil {
				t.Fatal(err)
			}
			prev := refContextLoss(t, res.F[0], y, B, T, we, dPrime, C)
			if want := math.Log(C); !cmp.Equal(prev, want, refApprox(1e-14)) {
				t.Errorf("loss at f = 0: got %v, want log C = %v", prev, want)
			}
			for k := 1; k <= steps; k++ {
				l := refContextLoss(t, res.F[k], y, B, T, we, dPrime, C)
				if l >= prev {
					t.Errorf("loss after step %d: got %v, want < %v (step %d)", k, l, prev, k-1)
				}
				prev = l
			}
		})
	}
}

func TestReferenceZeroSteps(t *testing.T) {
	x, y, we := refRandomTask(1, 2, 3, 2, 2, 4)
	res, err := gd.Reference(x, y, 2, 3, 2, we, 2, 4, gd.ReferenceConfig{Kernel: "linear"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.F) != 1 || len(res.E) != 1 {
		t.Fatalf("got %d F and %d E, want 1 each", len(res.F), len(res.E))
	}
	uniform := []float64{0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25}
	if !cmp.Equal(res.Probs, uniform, refApprox(1e-15)) {
		t.Errorf("Probs: got %v, want %v", res.Probs, uniform)
	}
}

func TestReferenceErrors(t *testing.T) {
	// A valid call: B = 2, T = 3, d = 2, d' = 2, C = 3.
	const B, T, d, dPrime, C = 2, 3, 2, 2, 3
	x, y, we := refRandomTask(1, B, T, d, dPrime, C)
	cfg := gd.ReferenceConfig{Steps: 2, Alpha: 1, Kernel: "rbf", Gamma: 1}
	with := func(v []float64, i int, a float64) []float64 {
		v = append([]float64(nil), v...)
		v[i] = a
		return v
	}
	withLabel := func(i, l int) []int {
		v := append([]int(nil), y...)
		v[i] = l
		return v
	}
	type args struct {
		x         []float64
		y         []int
		B, T, d   int
		we        []float64
		dPrime, C int
		cfg       gd.ReferenceConfig
	}
	ok := args{x, y, B, T, d, we, dPrime, C, cfg}
	tests := []struct {
		name    string
		edit    func(a *args)
		wantErr string
	}{
		{"B zero", func(a *args) { a.B = 0 }, "B = 0"},
		{"T negative", func(a *args) { a.T = -1 }, "T = -1"},
		{"N zero", func(a *args) { a.T, a.x, a.y = 1, a.x[:B*d], a.y[:B] }, "N = T-1 = 0"},
		{"d zero", func(a *args) { a.d = 0 }, "d = 0"},
		{"dPrime zero", func(a *args) { a.dPrime = 0 }, "dPrime = 0"},
		{"C zero", func(a *args) { a.C = 0 }, "C = 0"},
		{"x short", func(a *args) { a.x = a.x[1:] }, "len(x) = 11"},
		{"y long", func(a *args) { a.y = append(a.y, 0) }, "len(y) = 7"},
		{"we short", func(a *args) { a.we = a.we[:5] }, "len(we) = 5"},
		{"negative steps", func(a *args) { a.cfg.Steps = -1 }, "cfg.Steps = -1"},
		{"NaN alpha", func(a *args) { a.cfg.Alpha = math.NaN() }, "cfg.Alpha = NaN"},
		{"Inf gamma", func(a *args) { a.cfg.Gamma = math.Inf(-1) }, "cfg.Gamma = -Inf"},
		{"unknown kernel", func(a *args) { a.cfg.Kernel = "gauss" }, `cfg.Kernel = "gauss"`},
		{"empty kernel", func(a *args) { a.cfg.Kernel = "" }, `cfg.Kernel = ""`},
		{"NaN in x", func(a *args) { a.x = with(a.x, 4, math.NaN()) }, "x: element 4 is NaN"},
		{"Inf in we", func(a *args) { a.we = with(a.we, 2, math.Inf(1)) }, "we: element 2 is +Inf"},
		{"context label negative", func(a *args) { a.y = withLabel(1, -1) }, "y[1] = -1"},
		{"context label too big", func(a *args) { a.y = withLabel(3, C) }, "y[3] = 3"},
		{"query label too small", func(a *args) { a.y = withLabel(5, -2) }, "y[5] = -2"},
		{"query label too big", func(a *args) { a.y = withLabel(2, C) }, "y[2] = 3"},
		{"kernel overflow", func(a *args) { a.cfg.Kernel, a.cfg.Gamma = "exp", 1e308 }, "overflowed"},
		{"f overflow", func(a *args) { a.cfg.Alpha = 1e308 }, "after 1 steps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := ok
			tt.edit(&a)
			res, err := gd.Reference(a.x, a.y, a.B, a.T, a.d, a.we, a.dPrime, a.C, a.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got error %v, want one containing %q", err, tt.wantErr)
			}
			if res != nil {
				t.Errorf("got a result %v with an error, want nil", res)
			}
		})
	}
	// The unedited arguments are valid, and a known query label is allowed.
	if _, err := gd.Reference(x, withLabel(2, 1), B, T, d, we, dPrime, C, cfg); err != nil {
		t.Errorf("valid call: got error %v", err)
	}
}

// ExampleReference runs two GD steps on one context with N = 2, d = d' = 1 and
// C = 2 categories embedded as w_{e,0} = 1 and w_{e,1} = −1.
func ExampleReference() {
	x := []float64{-1, 1, 0.8} // context x_1 = −1, x_2 = 1; query x_3 = 0.8
	y := []int{1, 0, -1}       // labels of the context; the query's is unknown
	we := []float64{1, -1}     // W_e, d' × C = 1 × 2
	res, err := gd.Reference(x, y, 1, 3, 1, we, 1, 2, gd.ReferenceConfig{
		Steps: 2, Alpha: 1, Kernel: "rbf", Gamma: 1,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for k, f := range res.F {
		fmt.Printf("f after %d steps: %.4f\n", k, f)
	}
	fmt.Printf("p(y_query = 0, 1): %.4f\n", res.Probs)
	// Output:
	// f after 0 steps: [0.0000 0.0000 0.0000]
	// f after 1 steps: [-0.4908 0.4908 0.4608]
	// f after 2 steps: [-0.7584 0.7584 0.7120]
	// p(y_query = 0, 1): [0.8060 0.1940]
}
