package gd

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/internal/numeric"
	"github.com/gdattn/gdattn/layers"
)

// userGamma and userBeta are the initial g and β of the user kernel
// κ(q, k) = exp(−g‖q−k‖²) + β q·k of these tests: neither 1, so that a
// model ignoring one of them fails.
const userGamma, userBeta = 0.7, 0.3

// userKernel is κ = rbf + β·linear as a value, with g and β learned.
func userKernel() layers.KernelSpec {
	return layers.Sum(layers.RBF(userGamma), layers.Scaled(userBeta, layers.Linear()))
}

// userKernelFunc is the same κ in plain Go, for the reference.
func userKernelFunc(q, k []float64) float64 {
	var d2, dot float64
	for i := range q {
		d2 += (q[i] - k[i]) * (q[i] - k[i])
		dot += q[i] * k[i]
	}
	return math.Exp(-userGamma*d2) + userBeta*dot
}

// TestModelUserKernelMatchesReference: a GD model whose kernel is a user
// combination, κ = rbf + β·linear, performs exactly the functional GD of
// the plain-Go reference with the same κ (ReferenceConfig.KernelFunc), for
// K = 1, 2, 3 interleaved steps (token-level and structured builds) and the
// one-step form, with α learned.
func TestModelUserKernelMatchesReference(t *testing.T) {
	const B, N, d, dp, C = 4, 10, 10, 5, 25
	T := N + 1
	type tc struct {
		name string
		cfg  Config
	}
	var cases []tc
	for _, literal := range []bool{false, true} {
		for K := 1; K <= 3; K++ {
			cases = append(cases, tc{fmt.Sprintf("interleaved/literal=%v/K=%d", literal, K), Config{Blocks: K, Literal: literal}})
		}
		cases = append(cases, tc{fmt.Sprintf("onestep/literal=%v", literal), Config{Form: OneStep, Literal: literal}})
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.D, cfg.DPrime, cfg.C, cfg.N, cfg.Kernel, cfg.Alpha = d, dp, C, N, userKernel(), 2
			x, y := randomBatch(uint64(20+i), B, T, d, C)
			m := runForward(t, cfg, B, 3, x, y)
			want := []string{"we", "log_alpha", "kernel/term0/log_gamma", "kernel/term1/beta"}
			if diff := cmp.Diff(want, m.Scope().ParamNames()); diff != "" {
				t.Errorf("parameter names (-want +got):\n%s", diff)
			}
			we, _ := graph.Values(m.We)
			K := m.Cfg.Blocks
			ref, err := Reference(x, y, B, T, d, we, dp, C, ReferenceConfig{Steps: K, Alpha: 2, KernelFunc: userKernelFunc})
			if err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for k := 0; k <= K; k++ {
				got, _ := graph.Values(m.F[k])
				worst = math.Max(worst, maxAbsDiff(got, ref.F[k]))
			}
			t.Logf("max abs error %.3g", worst)
			if worst > 1e-10 {
				t.Errorf("max |f - f_ref| over %d steps = %.3g, want <= 1e-10", K, worst)
			}
			probs, _ := graph.Values(m.Logits)
			if e := maxAbsDiff(softmaxRows(probs, C), ref.Probs); e > 1e-10 {
				t.Errorf("max |p - p_ref| = %.3g, want <= 1e-10", e)
			}
		})
	}
}

// softmaxRows applies a softmax to each C-wide row of logits.
func softmaxRows(logits []float64, C int) []float64 {
	out := make([]float64, len(logits))
	for r := 0; r < len(logits)/C; r++ {
		numeric.SoftmaxInto(out[r*C:(r+1)*C], logits[r*C:(r+1)*C])
	}
	return out
}

// TestModelUserKernelGradients: α, W_e and the user kernel's own
// parameters (g and β) get the gradients finite differences give.
func TestModelUserKernelGradients(t *testing.T) {
	const B, N, d, dp, C = 2, 4, 3, 2, 5
	for i, cfg := range []Config{
		{D: d, DPrime: dp, C: C, N: N, Blocks: 2, Kernel: userKernel(), Alpha: 1.5, WeInit: graph.Normal(0.5)},
		{D: d, DPrime: dp, C: C, N: N, Blocks: 2, Kernel: userKernel(), Alpha: 1.5, WeInit: graph.Normal(0.5), Literal: true},
	} {
		t.Run(fmt.Sprintf("literal=%v", cfg.Literal), func(t *testing.T) {
			worst := graphtest.CheckGrad(t, modelLoss(cfg, B, uint64(200+i)), graphtest.Options{Seed: 1})
			t.Logf("max relative error %.2e", worst)
		})
	}
}

func TestReferenceKernelFuncErrors(t *testing.T) {
	const B, T, d, dp, C = 1, 3, 2, 2, 3
	x, y := randomBatch(1, B, T, d, C)
	we := make([]float64, dp*C)
	for _, tc := range []struct {
		name string
		cfg  ReferenceConfig
		want string
	}{
		{"both", ReferenceConfig{Steps: 1, Alpha: 1, Kernel: "rbf", KernelFunc: userKernelFunc}, "both set"},
		{"NaN", ReferenceConfig{Steps: 1, Alpha: 1, KernelFunc: func(q, k []float64) float64 { return math.NaN() }}, "cfg.KernelFunc"},
	} {
		_, err := Reference(x, y, B, T, d, we, dp, C, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
