package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
)

// Shared helpers of the kernel, attention, cross-attention and softmax-head
// tests (internal tests, package layers).

// testDtypes are the two dtypes every forward test runs in, with the
// tolerance of a comparison against a float64 plain-Go reference.
var testDtypes = []struct {
	name string
	dt   tensor.Dtype
	tol  float64
}{
	{"float64", tensor.Float64, 1e-12},
	{"float32", tensor.Float32, 1e-5},
}

// newTestRand is the generator test data is drawn from.
func newTestRand() *rand.Rand { return newTestRandSeed(1) }

// newTestRandSeed is a PCG generator seeded (seed, 1), for a second,
// independent stream of test data.
func newTestRandSeed(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 1)) }

// randn returns n draws of scale·N(0, 1).
func randn(rng *rand.Rand, n int, scale float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = scale * rng.NormFloat64()
	}
	return out
}

// rounded returns vals rounded to the precision of dt, i.e. the values a graph
// of dtype dt actually holds, so that references see the same inputs.
func rounded(dt tensor.Dtype, vals []float64) []float64 {
	out := append([]float64(nil), vals...)
	if dt == tensor.Float32 {
		for i, v := range out {
			out[i] = float64(float32(v))
		}
	}
	return out
}

// newTestScope returns a root scope of dtype dt seeded with 1.
func newTestScope(t testing.TB, dt tensor.Dtype) *graph.Scope {
	t.Helper()
	s, err := graph.NewScope(dt, 1)
	if err != nil {
		t.Fatalf("NewScope: %v", err)
	}
	return s
}

// mustConst creates the constant name in s, failing the test on error.
func mustConst(t testing.TB, s *graph.Scope, name string, shape tensor.Shape, vals []float64) *G.Node {
	t.Helper()
	n, err := s.Const(name, shape, vals)
	if err != nil {
		t.Fatalf("Const %q: %v", name, err)
	}
	return n
}

// runNodes compiles s's graph into a forward-only machine, runs it once and
// returns the values of nodes (row-major, as float64).
func runNodes(t testing.TB, s *graph.Scope, nodes ...*G.Node) [][]float64 {
	t.Helper()
	m, err := graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true})
	if err != nil {
		t.Fatalf("NewMachine: %v", err)
	}
	defer m.Close()
	if err := m.Run(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	out := make([][]float64, len(nodes))
	for i, n := range nodes {
		if out[i], err = graph.Values(n); err != nil {
			t.Fatalf("Values(%s): %v", n.Name(), err)
		}
	}
	return out
}

// weightedSum returns Σ x ⊙ r for a fixed random tensor r drawn from s.Rand():
// a scalar loss whose gradient reaches every element of x with a different
// weight.
func weightedSum(s *graph.Scope, name string, x *G.Node) (*G.Node, error) {
	r, err := s.Const(name, x.Shape(), graphtest.RandValues(s, x.Shape().TotalSize()))
	if err != nil {
		return nil, err
	}
	p, err := G.HadamardProd(x, r)
	if err != nil {
		return nil, err
	}
	return G.Sum(p)
}

// errContains fails t unless err is non-nil and its message contains every
// one of wants.
func errContains(t testing.TB, err error, wants ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", wants)
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

// Reference kernel names beyond the NewKernel ones: the erase kernel and
// the bias variant of the RBF kernel.
const (
	refDelta   = "delta"
	refRBFBias = "rbf+1"
)

// refKernel computes the (tq, tk) weights κ(q_j, k_i) of one sequence in plain
// Go: q is (tq, d), k is (tk, d), row-major. Pairs with visible(j, i) false
// (visible nil means all visible) get 0; the softmax kernel normalises over
// the visible keys, stably, and a query that sees no key gets zeros.
func refKernel(name string, g float64, q, k []float64, tq, tk, d int, visible func(j, i int) bool) []float64 {
	w := make([]float64, tq*tk)
	for j := 0; j < tq; j++ {
		row := w[j*tk : (j+1)*tk]
		seen := make([]bool, tk)
		for i := 0; i < tk; i++ {
			if visible != nil && !visible(j, i) {
				continue
			}
			seen[i] = true
			var dot, d2 float64
			for a := 0; a < d; a++ {
				qa, ka := q[j*d+a], k[i*d+a]
				dot += qa * ka
				d2 += (qa - ka) * (qa - ka)
			}
			switch name {
			case KernelLinear:
				row[i] = dot
			case KernelRBF:
				row[i] = math.Exp(-g * d2)
			case refRBFBias:
				row[i] = math.Exp(-g*d2) + 1
			case KernelExp:
				row[i] = math.Exp(g * dot)
			case KernelLaplacian:
				row[i] = math.Exp(-g * math.Sqrt(d2))
			case KernelSoftmax:
				row[i] = g * dot // score, normalised below
			case refDelta:
				if i == j {
					row[i] = 1
				}
			default:
				panic("refKernel: unknown kernel " + name)
			}
		}
		if name != KernelSoftmax {
			continue
		}
		mx := math.Inf(-1)
		for i, v := range row {
			if seen[i] && v > mx {
				mx = v
			}
		}
		var sum float64
		for i, v := range row {
			if seen[i] {
				row[i] = math.Exp(v - mx)
				sum += row[i]
			}
		}
		for i := range row {
			if seen[i] {
				row[i] /= sum
			}
		}
	}
	return w
}

// refKernelBatch applies refKernel to each of the b sequences of q (b, tq, d)
// and k (b, tk, d), giving (b, tq, tk).
func refKernelBatch(name string, g float64, q, k []float64, b, tq, tk, d int, visible func(j, i int) bool) []float64 {
	var out []float64
	for bb := 0; bb < b; bb++ {
		out = append(out, refKernel(name, g, q[bb*tq*d:(bb+1)*tq*d], k[bb*tk*d:(bb+1)*tk*d], tq, tk, d, visible)...)
	}
	return out
}

// Kernel test sizes: B sequences, Tq queries, Tk keys, D features.
const (
	kB, kTq, kTk, kD = 2, 4, 3, 3
	// kGamma is the kernel parameter g of the tests: not 1, so that a kernel
	// ignoring g fails.
	kGamma = 0.7
)

// kVisible is the test mask: query 0 sees keys 0 and 2, query 1 only key 1
// (its softmax weight is then exactly 1), query 2 keys 0 and 2, query 3
// no key at all.
func kVisible(j, i int) bool { return j != 3 && (i+j)%2 == 0 }

// kernelData draws q (B, Tq, D) and k (B, Tk, D) from N(0, 1).
func kernelData() (q, k []float64) {
	rng := newTestRand()
	return randn(rng, kB*kTq*kD, 1), randn(rng, kB*kTk*kD, 1)
}

// kernelCases covers every named kernel with a fixed and a learnable g.
var kernelCases = []struct {
	name      string
	kernel    string
	learnable bool
}{
	{"linear", KernelLinear, false},
	{"rbf", KernelRBF, false},
	{"rbf/learnable", KernelRBF, true},
	{"exp", KernelExp, false},
	{"exp/learnable", KernelExp, true},
	{"laplacian", KernelLaplacian, false},
	{"laplacian/learnable", KernelLaplacian, true},
	{"softmax", KernelSoftmax, false},
	{"softmax/learnable", KernelSoftmax, true},
}

func TestKernelForward(t *testing.T) {
	qv, kv := kernelData()
	for _, tc := range kernelCases {
		for _, dc := range testDtypes {
			for _, masked := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/masked=%v", tc.name, dc.name, masked)
				t.Run(name, func(t *testing.T) {
					s := newTestScope(t, dc.dt)
					q := mustConst(t, s, "q", tensor.Shape{kB, kTq, kD}, qv)
					k := mustConst(t, s, "k", tensor.Shape{kB, kTk, kD}, kv)
					kern, err := NewKernel(s.Sub("kernel"), tc.kernel, KernelConfig{Gamma: kGamma, Learnable: tc.learnable})
					if err != nil {
						t.Fatalf("NewKernel: %v", err)
					}
					var mask *Mask
					var visible func(j, i int) bool
					if masked {
						if mask, err = NewMask(s, "mask", kB, kTq, kTk, kVisible); err != nil {
							t.Fatalf("NewMask: %v", err)
						}
						visible = kVisible
					}
					w, err := kern(q, k, mask)
					if err != nil {
						t.Fatalf("kernel: %v", err)
					}
					if want := (tensor.Shape{kB, kTq, kTk}); !w.Shape().Eq(want) {
						t.Fatalf("weights have shape %v, want %v", w.Shape(), want)
					}
					got := runNodes(t, s, w)[0]
					want := refKernelBatch(tc.kernel, kGamma, rounded(dc.dt, qv), rounded(dc.dt, kv), kB, kTq, kTk, kD, visible)
					graphtest.AllClose(t, "weights", got, want, dc.tol)
					if !graph.AllFinite(got) {
						t.Errorf("weights are not all finite: %v", got)
					}
					if masked {
						for o, v := range got {
							j, i := (o/kTk)%kTq, o%kTk
							if !kVisible(j, i) && v != 0 {
								t.Errorf("masked pair (query %d, key %d): got weight %v, want exactly 0", j, i, v)
							}
						}
					}
				})
			}
		}
	}
}

// TestKernelLearnableParam checks that a learnable kernel creates exactly
// one parameter, kernel/log_gamma = log(Gamma), and a fixed one none.
func TestKernelLearnableParam(t *testing.T) {
	for _, tc := range kernelCases {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestScope(t, tensor.Float64)
			if _, err := NewKernel(s.Sub("kernel"), tc.kernel, KernelConfig{Gamma: kGamma, Learnable: tc.learnable}); err != nil {
				t.Fatalf("NewKernel: %v", err)
			}
			var want []string
			if tc.learnable {
				want = []string{"kernel/log_gamma"}
			}
			if got := s.ParamNames(); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("params %v, want %v", got, want)
			}
			if tc.learnable {
				p, _ := s.Lookup("kernel/log_gamma")
				v, err := graph.Scalar(p)
				if err != nil {
					t.Fatal(err)
				}
				if want := math.Log(kGamma); v != want {
					t.Errorf("log_gamma = %v, want %v", v, want)
				}
			}
		})
	}
}

func TestSoftmaxKernelRowsSumToOne(t *testing.T) {
	qv, kv := kernelData()
	for _, dc := range testDtypes {
		for _, masked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/masked=%v", dc.name, masked), func(t *testing.T) {
				s := newTestScope(t, dc.dt)
				q := mustConst(t, s, "q", tensor.Shape{kB, kTq, kD}, qv)
				k := mustConst(t, s, "k", tensor.Shape{kB, kTk, kD}, kv)
				kern, err := NewKernel(s, KernelSoftmax, KernelConfig{Gamma: kGamma})
				if err != nil {
					t.Fatal(err)
				}
				var mask *Mask
				if masked {
					if mask, err = NewMask(s, "mask", kB, kTq, kTk, kVisible); err != nil {
						t.Fatal(err)
					}
				}
				w, err := kern(q, k, mask)
				if err != nil {
					t.Fatal(err)
				}
				got := runNodes(t, s, w)[0]
				for row := 0; row < kB*kTq; row++ {
					j := row % kTq
					var sum float64
					for _, v := range got[row*kTk : (row+1)*kTk] {
						sum += v
					}
					want := 1.0
					if masked && j == 3 { // query 3 sees no key: all-zero weights
						want = 0
					}
					if math.Abs(sum-want) > dc.tol {
						t.Errorf("row %d (query %d) sums to %.17g, want %v", row, j, sum, want)
					}
				}
			})
		}
	}
}

// TestSoftmaxKernelHugeScores is the regression test for the gorgonia
// softmax bug (ops.SoftMax's doc): with scores g·q·k of order 1e5, rows
// whose scores all lie far below the first score of the tensor must still
// come out finite and normalised.
func TestSoftmaxKernelHugeScores(t *testing.T) {
	// q, k ~ 300·N(0, 1) in D = 3 makes q·k of order 3·300² ≈ 1e5.
	rng := newTestRand()
	qv, kv := randn(rng, kB*kTq*kD, 300), randn(rng, kB*kTk*kD, 300)
	scores := refKernelBatch(KernelLinear, 1, qv, kv, kB, kTq, kTk, kD, nil)
	// Guard: the data must contain a row whose every score lies more than
	// 1000 below the tensor's first score (where the buggy op gives NaN).
	exercised := false
	for row := 0; row < kB*kTq; row++ {
		mx := math.Inf(-1)
		for _, v := range scores[row*kTk : (row+1)*kTk] {
			mx = math.Max(mx, v)
		}
		exercised = exercised || mx < scores[0]-1000
	}
	if !exercised {
		t.Fatalf("test data does not exercise the bug: scores %v", scores)
	}
	for _, dc := range testDtypes {
		t.Run(dc.name, func(t *testing.T) {
			s := newTestScope(t, dc.dt)
			q := mustConst(t, s, "q", tensor.Shape{kB, kTq, kD}, qv)
			k := mustConst(t, s, "k", tensor.Shape{kB, kTk, kD}, kv)
			kern, err := NewKernel(s, KernelSoftmax, KernelConfig{Gamma: 1})
			if err != nil {
				t.Fatal(err)
			}
			w, err := kern(q, k, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := runNodes(t, s, w)[0]
			if !graph.AllFinite(got) {
				t.Fatalf("weights are not finite: %v", got)
			}
			for row := 0; row < kB*kTq; row++ {
				var sum float64
				for _, v := range got[row*kTk : (row+1)*kTk] {
					sum += v
				}
				if math.Abs(sum-1) > dc.tol {
					t.Errorf("row %d sums to %.17g, want 1", row, sum)
				}
			}
			// In float32 the inputs are rounded by ~1e-5 relative, which moves
			// scores of 1e5 by O(1): compare with the reference on the rounded
			// inputs, and only loosely (the weights are near 0/1 anyway).
			tol := dc.tol
			if dc.dt == tensor.Float32 {
				tol = 1e-3
			}
			want := refKernelBatch(KernelSoftmax, 1, rounded(dc.dt, qv), rounded(dc.dt, kv), kB, kTq, kTk, kD, nil)
			graphtest.AllClose(t, "weights", got, want, tol)
		})
	}
}

func TestNewMask(t *testing.T) {
	s := newTestScope(t, tensor.Float64)
	m, err := NewMask(s, "mask", kB, kTq, kTk, kVisible)
	if err != nil {
		t.Fatal(err)
	}
	vals := runNodes(t, s, m.Keep, m.Bias)
	for o := range vals[0] {
		j, i := (o/kTk)%kTq, o%kTk
		wantKeep, wantBias := 0.0, -1e30
		if kVisible(j, i) {
			wantKeep, wantBias = 1, 0
		}
		if vals[0][o] != wantKeep || vals[1][o] != wantBias {
			t.Errorf("(query %d, key %d): keep %v bias %v, want %v %v", j, i, vals[0][o], vals[1][o], wantKeep, wantBias)
		}
	}
	if _, err := NewMask(s, "mask", kB, kTq, kTk, kVisible); err == nil {
		t.Errorf("second NewMask with the same name: got no error")
	}
}

func TestDeltaKernel(t *testing.T) {
	qv, kv := kernelData()
	for _, dc := range testDtypes {
		for _, masked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/masked=%v", dc.name, masked), func(t *testing.T) {
				s := newTestScope(t, dc.dt)
				q := mustConst(t, s, "q", tensor.Shape{kB, kTq, kD}, qv)
				k := mustConst(t, s, "k", tensor.Shape{kB, kTk, kD}, kv)
				var mask *Mask
				var visible func(j, i int) bool
				if masked {
					var err error
					if mask, err = NewMask(s, "mask", kB, kTq, kTk, kVisible); err != nil {
						t.Fatal(err)
					}
					visible = kVisible
				}
				w, err := DeltaKernel()(q, k, mask)
				if err != nil {
					t.Fatal(err)
				}
				got := runNodes(t, s, w)[0]
				// Identity pattern whatever q and k hold: 1 at (j, j) for j < Tk.
				want := refKernelBatch(refDelta, 0, qv, kv, kB, kTq, kTk, kD, visible)
				graphtest.AllClose(t, "weights", got, want, 0)
			})
		}
	}
}

func TestWithBias(t *testing.T) {
	qv, kv := kernelData()
	for _, dc := range testDtypes {
		for _, masked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/masked=%v", dc.name, masked), func(t *testing.T) {
				s := newTestScope(t, dc.dt)
				q := mustConst(t, s, "q", tensor.Shape{kB, kTq, kD}, qv)
				k := mustConst(t, s, "k", tensor.Shape{kB, kTk, kD}, kv)
				rbf, err := NewKernel(s, KernelRBF, KernelConfig{Gamma: kGamma})
				if err != nil {
					t.Fatal(err)
				}
				var mask *Mask
				var visible func(j, i int) bool
				if masked {
					if mask, err = NewMask(s, "mask", kB, kTq, kTk, kVisible); err != nil {
						t.Fatal(err)
					}
					visible = kVisible
				}
				w, err := WithBias(rbf)(q, k, mask)
				if err != nil {
					t.Fatal(err)
				}
				got := runNodes(t, s, w)[0]
				// Masked pairs stay exactly 0 (the +1 is masked too).
				want := refKernelBatch(refRBFBias, kGamma, rounded(dc.dt, qv), rounded(dc.dt, kv), kB, kTq, kTk, kD, visible)
				graphtest.AllClose(t, "weights", got, want, dc.tol)
			})
		}
	}
}

func TestKernelShapeErrors(t *testing.T) {
	s := newTestScope(t, tensor.Float64)
	q := mustConst(t, s, "q", tensor.Shape{kB, kTq, kD}, make([]float64, kB*kTq*kD))
	kBadD := mustConst(t, s, "k_bad_d", tensor.Shape{kB, kTk, kD + 1}, make([]float64, kB*kTk*(kD+1)))
	kBadB := mustConst(t, s, "k_bad_b", tensor.Shape{kB + 1, kTk, kD}, make([]float64, (kB+1)*kTk*kD))
	k2 := mustConst(t, s, "k_rank2", tensor.Shape{kTk, kD}, make([]float64, kTk*kD))
	kernels := map[string]Kernel{"delta": DeltaKernel(), "bias": WithBias(LinearKernel())}
	for _, name := range KernelNames() {
		k, err := NewKernel(s.Sub(name), name, KernelConfig{})
		if err != nil {
			t.Fatal(err)
		}
		kernels[name] = k
	}
	for name, kern := range kernels {
		for _, tc := range []struct {
			name string
			q, k *G.Node
		}{
			{"last_dim", q, kBadD},
			{"batch", q, kBadB},
			{"rank", q, k2},
			{"nil", q, nil},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				_, err := kern(tc.q, tc.k, nil)
				errContains(t, err, "layers: kernel")
			})
		}
	}
}

func TestNewKernelErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kernel string
		cfg    KernelConfig
		want   []string
	}{
		{"unknown", "cosine", KernelConfig{}, append([]string{`"cosine"`}, KernelNames()...)},
		{"unknown/learnable", "cosine", KernelConfig{Learnable: true}, append([]string{`"cosine"`}, KernelNames()...)},
		{"unknown/bad_gamma", "cosine", KernelConfig{Gamma: -1}, []string{`unknown kernel "cosine"`}},
		{"gamma_negative", KernelRBF, KernelConfig{Gamma: -0.5}, []string{"Gamma", "-0.5"}},
		{"gamma_nan", KernelExp, KernelConfig{Gamma: math.NaN()}, []string{"Gamma", "NaN"}},
		{"gamma_inf", KernelSoftmax, KernelConfig{Gamma: math.Inf(1)}, []string{"Gamma", "+Inf"}},
		{"gamma_neg_inf", KernelLaplacian, KernelConfig{Gamma: math.Inf(-1), Learnable: true}, []string{"Gamma", "-Inf"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestScope(t, tensor.Float64)
			k, err := NewKernel(s.Sub("kernel"), tc.kernel, tc.cfg)
			if k != nil {
				t.Errorf("got a non-nil kernel with the error")
			}
			errContains(t, err, tc.want...)
			// A failed constructor leaves nothing behind in the scope.
			if ps := s.ParamNames(); len(ps) != 0 {
				t.Errorf("failed NewKernel created parameters %v", ps)
			}
		})
	}
}

func TestKernelNames(t *testing.T) {
	names := KernelNames()
	if !sort.StringsAreSorted(names) {
		t.Errorf("KernelNames() = %v, not sorted", names)
	}
	want := []string{KernelExp, KernelLaplacian, KernelLinear, KernelRBF, KernelSoftmax}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("KernelNames() = %v, want %v", names, want)
	}
	for _, n := range names {
		if got, want := Normalised(n), n == KernelSoftmax; got != want {
			t.Errorf("Normalised(%q) = %v, want %v", n, got, want)
		}
	}
}

// TestKernelGrad checks the gradient of Σ κ(q, k) ⊙ r with respect to q and
// k (parameters) and, for learnable kernels, log_gamma, with and without a
// mask. The random q and k are distinct points, away from the laplacian
// kernel's kink at q = k.
func TestKernelGrad(t *testing.T) {
	qv, kv := kernelData()
	maxErr := map[tensor.Dtype]float64{}
	for _, tc := range kernelCases {
		for _, masked := range []bool{false, true} {
			build := func(s *graph.Scope) (*G.Node, error) {
				q, err := s.Param("q", tensor.Shape{kB, kTq, kD}, graph.FromValues(qv))
				if err != nil {
					return nil, err
				}
				k, err := s.Param("k", tensor.Shape{kB, kTk, kD}, graph.FromValues(kv))
				if err != nil {
					return nil, err
				}
				kern, err := NewKernel(s.Sub("kernel"), tc.kernel, KernelConfig{Gamma: kGamma, Learnable: tc.learnable})
				if err != nil {
					return nil, err
				}
				var mask *Mask
				if masked {
					if mask, err = NewMask(s, "mask", kB, kTq, kTk, kVisible); err != nil {
						return nil, err
					}
				}
				w, err := kern(q, k, mask)
				if err != nil {
					return nil, err
				}
				return weightedSum(s, "r", w)
			}
			for _, dc := range testDtypes {
				t.Run(fmt.Sprintf("%s/masked=%v/%s", tc.name, masked, dc.name), func(t *testing.T) {
					e := graphtest.CheckGradDtype(t, dc.dt, build, graphtest.Options{Seed: 1})
					maxErr[dc.dt] = math.Max(maxErr[dc.dt], e)
				})
			}
		}
	}
	t.Logf("max gradient-check error: float64 %.3g, float32 %.3g", maxErr[tensor.Float64], maxErr[tensor.Float32])
}
