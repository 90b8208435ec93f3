package layers

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/ops"
)

// Tests of kernel specs (KernelSpec values): built-ins against NewKernel,
// the combinators against plain Go, validation, JSON and the registry.

// testDot is a user kernel with a learnable scale: κ(q, k) = c·(q·k), "c"
// created in the kernel's scope at C. Its exported field is saved as the
// kernel's params.
type testDot struct {
	C float64 `json:"c"`
}

func (d testDot) Name() string     { return "test_dot" }
func (d testDot) Normalised() bool { return false }
func (d testDot) New(s *graph.Scope) (Kernel, error) {
	c, err := s.Param("c", tensor.Shape{}, graph.Constant(d.C))
	if err != nil {
		return nil, err
	}
	return func(q, k *G.Node, mask *Mask) (w *G.Node, err error) {
		defer graph.Recover(&err)
		w = G.Must(G.Mul(c, G.Must(ops.BatchedMatMul(q, k, false, true)))) // (B, Tq, Tk)
		if mask != nil {
			w = G.Must(G.HadamardProd(w, mask.Keep))
		}
		return w, nil
	}, nil
}

// testCustom is a user kernel without settings, wrapped by Custom: κ = q·k.
var testCustom = Custom("test_custom", false, func(s *graph.Scope) (Kernel, error) { return LinearKernel(), nil })

// Registered once per test binary (the registry refuses a second
// registration of a name).
func init() {
	if err := RegisterKernel("test_dot", func(p json.RawMessage) (KernelSpec, error) {
		d := testDot{C: 1}
		if string(p) != "null" {
			if err := decodeStrict(p, &d); err != nil {
				return nil, err
			}
		}
		return d, nil
	}); err != nil {
		panic(err)
	}
	if err := RegisterKernel("test_custom", func(json.RawMessage) (KernelSpec, error) { return testCustom, nil }); err != nil {
		panic(err)
	}
	if err := RegisterKernel("test_lossy", func(json.RawMessage) (KernelSpec, error) { return testLossy{}, nil }); err != nil {
		panic(err)
	}
}

// TestBuiltinSpecMatchesNewKernel: a built-in spec builds exactly the kernel
// of NewKernel (same parameters, bit-identical weights), and
// InstantiateKernel returns its BuiltinKernel.
func TestBuiltinSpecMatchesNewKernel(t *testing.T) {
	qv, kv := kernelData()
	for _, tc := range kernelCases {
		t.Run(tc.name, func(t *testing.T) {
			spec := Builtin(tc.kernel, kGamma)
			if !tc.learnable {
				spec = spec.Fixed()
			}
			weights := func(build func(s *graph.Scope) (Kernel, error)) ([]float64, []string) {
				s := newTestScope(t, tensor.Float64)
				q := mustConst(t, s, "q", tensor.Shape{kB, kTq, kD}, qv)
				k := mustConst(t, s, "k", tensor.Shape{kB, kTk, kD}, kv)
				kern, err := build(s.Sub("kernel"))
				if err != nil {
					t.Fatal(err)
				}
				w, err := kern(q, k, nil)
				if err != nil {
					t.Fatal(err)
				}
				return runNodes(t, s, w)[0], s.ParamNames()
			}
			want, wantParams := weights(func(s *graph.Scope) (Kernel, error) {
				return NewKernel(s, tc.kernel, KernelConfig{Gamma: kGamma, Learnable: tc.learnable})
			})
			got, gotParams := weights(spec.New)
			if fmt.Sprint(gotParams) != fmt.Sprint(wantParams) {
				t.Errorf("params %v, want %v", gotParams, wantParams)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("weight %d = %v, want %v (bit-identical)", i, got[i], want[i])
				}
			}
			s := newTestScope(t, tensor.Float64)
			if _, bk, err := InstantiateKernel(s, spec); err != nil || bk == nil || bk.Name != tc.kernel {
				t.Errorf("InstantiateKernel: builtin %v, err %v; want the %s BuiltinKernel", bk, err, tc.kernel)
			}
		})
	}
}

// TestCombinedKernelForward: κ = rbf + β·linear from Sum and Scaled against
// plain Go, with and without a mask, and its parameters.
func TestCombinedKernelForward(t *testing.T) {
	const beta = -0.3 // negative: β is a plain parameter, not a log
	qv, kv := kernelData()
	for _, dc := range testDtypes {
		for _, fixed := range []bool{false, true} {
			for _, masked := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/fixed=%v/masked=%v", dc.name, fixed, masked), func(t *testing.T) {
					rbf, sc := RBF(kGamma), Scaled(beta, Linear())
					wantParams := "[kernel/term0/log_gamma kernel/term1/beta]"
					if fixed {
						rbf, sc, wantParams = rbf.Fixed(), sc.Fixed(), "[]"
					}
					spec := Sum(rbf, sc)
					s := newTestScope(t, dc.dt)
					q := mustConst(t, s, "q", tensor.Shape{kB, kTq, kD}, qv)
					k := mustConst(t, s, "k", tensor.Shape{kB, kTk, kD}, kv)
					kern, bk, err := InstantiateKernel(s.Sub("kernel"), spec)
					if err != nil || bk != nil {
						t.Fatalf("InstantiateKernel: builtin %v, err %v", bk, err)
					}
					if got := fmt.Sprint(s.ParamNames()); got != wantParams {
						t.Errorf("params %s, want %s", got, wantParams)
					}
					var mask *Mask
					var visible func(j, i int) bool
					if masked {
						if mask, err = NewMask(s, "mask", kB, kTq, kTk, kVisible); err != nil {
							t.Fatal(err)
						}
						visible = kVisible
					}
					w, err := kern(q, k, mask)
					if err != nil {
						t.Fatal(err)
					}
					got := runNodes(t, s, w)[0]
					qr, kr := rounded(dc.dt, qv), rounded(dc.dt, kv)
					want := refKernelBatch(KernelRBF, kGamma, qr, kr, kB, kTq, kTk, kD, visible)
					lin := refKernelBatch(KernelLinear, 1, qr, kr, kB, kTq, kTk, kD, visible)
					for i := range want {
						want[i] += beta * lin[i]
					}
					graphtest.AllClose(t, "weights", got, want, dc.tol)
				})
			}
		}
	}
}

// TestCombinedKernelGrad checks the gradients of q, k, log_gamma and β of
// κ = rbf + β·linear (and of a user kernel's parameter) against finite
// differences.
func TestCombinedKernelGrad(t *testing.T) {
	qv, kv := kernelData()
	for _, tc := range []struct {
		name string
		spec KernelSpec
	}{
		{"rbf+beta*linear", Sum(RBF(kGamma), Scaled(0.4, Linear()))},
		{"scaled-softmax", Scaled(1.5, Softmax(kGamma))},
		{"user", Sum(testDot{C: 0.6}, Exp(0.2))},
	} {
		build := func(s *graph.Scope) (*G.Node, error) {
			q, err := s.Param("q", tensor.Shape{kB, kTq, kD}, graph.FromValues(qv))
			if err != nil {
				return nil, err
			}
			k, err := s.Param("k", tensor.Shape{kB, kTk, kD}, graph.FromValues(kv))
			if err != nil {
				return nil, err
			}
			kern, _, err := InstantiateKernel(s.Sub("kernel"), tc.spec)
			if err != nil {
				return nil, err
			}
			w, err := kern(q, k, nil)
			if err != nil {
				return nil, err
			}
			return weightedSum(s, "r", w)
		}
		t.Run(tc.name, func(t *testing.T) {
			graphtest.CheckGrad(t, build, graphtest.Options{Seed: 1})
		})
	}
}

func TestCheckKernelErrors(t *testing.T) {
	var nilPtr *BuiltinSpec
	for _, tc := range []struct {
		name string
		spec KernelSpec
		want string
	}{
		{"nil", nil, "nil"},
		{"typed nil", nilPtr, "nil"},
		{"zero builtin", BuiltinSpec{}, "empty name"},
		{"unknown", Builtin("cosine", 1), `unknown kernel "cosine"`},
		{"gamma negative", RBF(-1), "Gamma = -1"},
		{"gamma NaN", Softmax(math.NaN()).Fixed(), "Gamma = NaN"},
		{"gamma Inf", Exp(math.Inf(1)), "Gamma = +Inf"},
		{"sum of one", Sum(RBF(1)), "1 term(s)"},
		{"sum bad term", Sum(RBF(1), nil), "term 1"},
		{"scaled NaN", Scaled(math.NaN(), Linear()), "Beta = NaN"},
		{"scaled nil", Scaled(1, nil), "nil"},
		{"custom no name", Custom("", false, func(*graph.Scope) (Kernel, error) { return LinearKernel(), nil }), "empty name"},
		{"custom no build", Custom("x", false, nil), "build function is nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errContains(t, CheckKernel(tc.spec), tc.want)
			s := newTestScope(t, tensor.Float64)
			k, bk, err := InstantiateKernel(s, tc.spec)
			if k != nil || bk != nil {
				t.Errorf("InstantiateKernel returned a kernel with the error")
			}
			errContains(t, err, tc.want)
			if ps := s.ParamNames(); len(ps) != 0 {
				t.Errorf("a failed InstantiateKernel created parameters %v", ps)
			}
		})
	}
	s := newTestScope(t, tensor.Float64)
	if _, _, err := InstantiateKernel(nil, RBF(1)); err == nil || !strings.Contains(err.Error(), "scope is nil") {
		t.Errorf("nil scope: error %v, want one saying the scope is nil", err)
	}
	if _, err := Custom("y", false, func(*graph.Scope) (Kernel, error) { return nil, nil }).New(s); err == nil {
		t.Errorf("a custom kernel whose build returns nil: no error")
	}
}

// TestKernelJSON: MarshalKernel writes the documented form, UnmarshalKernel
// reads it back to a spec that marshals the same and builds the same
// parameters.
func TestKernelJSON(t *testing.T) {
	for _, tc := range []struct {
		spec KernelSpec
		want string
	}{
		{RBF(0.5), `{"name":"rbf","gamma":0.5,"learnable":true}`},
		{Softmax(1), `{"name":"softmax","gamma":1,"learnable":true}`},
		{Laplacian(2).Fixed(), `{"name":"laplacian","gamma":2,"learnable":false}`},
		{Linear(), `{"name":"linear"}`},
		{Sum(RBF(1), Scaled(0.25, Linear())), `{"name":"sum","terms":[{"name":"rbf","gamma":1,"learnable":true},{"name":"scaled","beta":0.25,"learnable":true,"kernel":{"name":"linear"}}]}`},
		{Scaled(-2, Exp(0.3)).Fixed(), `{"name":"scaled","beta":-2,"learnable":false,"kernel":{"name":"exp","gamma":0.3,"learnable":true}}`},
		{testDot{C: 0.75}, `{"name":"test_dot","params":{"c":0.75}}`},
		{testCustom, `{"name":"test_custom","params":{}}`},
		{Sum(testDot{C: 2}, testCustom), `{"name":"sum","terms":[{"name":"test_dot","params":{"c":2}},{"name":"test_custom","params":{}}]}`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			b, err := MarshalKernel(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("MarshalKernel = %s, want %s", b, tc.want)
			}
			back, err := UnmarshalKernel(b)
			if err != nil {
				t.Fatal(err)
			}
			again, err := MarshalKernel(back)
			if err != nil || string(again) != tc.want {
				t.Errorf("round trip gives %s (err %v), want %s", again, err, tc.want)
			}
			params := func(spec KernelSpec) string {
				s := newTestScope(t, tensor.Float64)
				if _, _, err := InstantiateKernel(s.Sub("k"), spec); err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, p := range s.Params() {
					v, _ := graph.Values(p)
					out = append(out, fmt.Sprintf("%s=%v", p.Name(), v))
				}
				return strings.Join(out, " ")
			}
			if got, want := params(back), params(tc.spec); got != want {
				t.Errorf("rebuilt kernel has parameters %s, want %s", got, want)
			}
		})
	}
}

func TestUnmarshalKernelErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"not an object", `[1]`, []string{"want an object"}},
		{"no name", `{"gamma":1}`, []string{`missing key "name"`}},
		{"name not a string", `{"name":3}`, []string{`key "name"`}},
		{"unknown name", `{"name":"cosine"}`, []string{`unknown kernel "cosine"`, "test_dot", `layers.RegisterKernel("cosine", ...) before loading`}},
		{"unknown bare name", `"cosine"`, []string{`unknown kernel "cosine"`}},
		{"unknown key", `{"name":"rbf","gama":1}`, []string{`"rbf"`, `unknown key "gama"`}},
		{"gamma zero", `{"name":"rbf","gamma":0}`, []string{`key "gamma"`}},
		{"gamma negative", `{"name":"exp","gamma":-1}`, []string{"Gamma = -1"}},
		{"gamma string", `{"name":"exp","gamma":"1"}`, []string{`"exp"`, "gamma"}},
		{"linear gamma", `{"name":"linear","gamma":2}`, []string{`"linear"`, "no parameter"}},
		{"sum unknown key", `{"name":"sum","terms":[],"x":1}`, []string{"sum", `unknown key "x"`}},
		{"sum bad term", `{"name":"sum","terms":[{"name":"rbf"},{"name":"nope"}]}`, []string{`"terms"[1]`, `unknown kernel "nope"`}},
		{"sum one term", `{"name":"sum","terms":[{"name":"rbf"}]}`, []string{"1 term(s)"}},
		{"scaled no beta", `{"name":"scaled","kernel":{"name":"linear"}}`, []string{`missing key "beta"`}},
		{"scaled no kernel", `{"name":"scaled","beta":1}`, []string{`missing key "kernel"`}},
		{"scaled bad kernel", `{"name":"scaled","beta":1,"kernel":{"name":"rbf","learnable":1}}`, []string{`key "kernel"`}},
		{"user unknown key", `{"name":"test_dot","c":1}`, []string{`"test_dot"`, `unknown key "c"`}},
		{"user bad params", `{"name":"test_dot","params":{"d":1}}`, []string{`"test_dot"`, "params", `unknown key "d"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := UnmarshalKernel([]byte(tc.in))
			if spec != nil {
				t.Errorf("got spec %v with the error", spec)
			}
			errContains(t, err, tc.want...)
		})
	}
}

// TestMarshalKernelErrors: a kernel that could not be loaded back is never
// saved.
func TestMarshalKernelErrors(t *testing.T) {
	unregistered := Custom("test_unregistered", false, func(*graph.Scope) (Kernel, error) { return LinearKernel(), nil })
	for _, tc := range []struct {
		name string
		spec KernelSpec
		want []string
	}{
		{"unregistered", unregistered, []string{`"test_unregistered"`, "not registered", "layers.RegisterKernel"}},
		{"unregistered in a sum", Sum(RBF(1), unregistered), []string{"term 1", "not registered"}},
		{"lossy", testLossy{V: 3}, []string{`"test_lossy"`, "does not survive a save"}},
		{"invalid", RBF(-2), []string{"Gamma = -2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := MarshalKernel(tc.spec)
			if b != nil {
				t.Errorf("got %s with the error", b)
			}
			errContains(t, err, tc.want...)
		})
	}
}

// testLossy is registered with a factory that forgets V.
type testLossy struct{ V int }

func (testLossy) Name() string                     { return "test_lossy" }
func (testLossy) Normalised() bool                 { return false }
func (testLossy) New(*graph.Scope) (Kernel, error) { return LinearKernel(), nil }

func TestRegisterKernelErrors(t *testing.T) {
	f := func(json.RawMessage) (KernelSpec, error) { return testCustom, nil }
	for _, tc := range []struct {
		name, kernel string
		f            KernelFactory
		want         string
	}{
		{"empty", "", f, "empty name"},
		{"nil factory", "test_nil", nil, "factory is nil"},
		{"builtin", KernelRBF, f, "reserved"},
		{"combinator", KernelSum, f, "reserved"},
		{"twice", "test_dot", f, "already registered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errContains(t, RegisterKernel(tc.kernel, tc.f), tc.want)
		})
	}
	for _, n := range []string{"test_custom", "test_dot"} {
		found := false
		for _, r := range RegisteredKernels() {
			found = found || r == n
		}
		if !found {
			t.Errorf("RegisteredKernels() = %v, want it to list %q", RegisteredKernels(), n)
		}
	}
}

func TestParseKernel(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"rbf", `{"name":"rbf","gamma":1,"learnable":true}`},
		{" softmax ", `{"name":"softmax","gamma":1,"learnable":true}`},
		{"linear", `{"name":"linear"}`},
		{"test_dot", `{"name":"test_dot","params":{"c":1}}`},
		{"test_custom", `{"name":"test_custom","params":{}}`},
		{`{"name":"exp","gamma":0.5,"learnable":false}`, `{"name":"exp","gamma":0.5,"learnable":false}`},
		{`{"name":"exp"}`, `{"name":"exp","gamma":1,"learnable":true}`},
	} {
		spec, err := ParseKernel(tc.in)
		if err != nil {
			t.Errorf("ParseKernel(%q): %v", tc.in, err)
			continue
		}
		if b, err := MarshalKernel(spec); err != nil || string(b) != tc.want {
			t.Errorf("ParseKernel(%q) = %s (err %v), want %s", tc.in, b, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"cosine", `unknown kernel "cosine"`},
		{"", `unknown kernel ""`},
		{"sum", "JSON object"},
		{`{"name":"rbf",}`, "want an object"},
	} {
		spec, err := ParseKernel(tc.in)
		if spec != nil {
			t.Errorf("ParseKernel(%q) returned %v with the error", tc.in, spec)
		}
		errContains(t, err, tc.want)
	}
}
