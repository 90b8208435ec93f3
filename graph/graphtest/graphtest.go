package graphtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
)

// BuildFunc builds a graph in s and returns the node of interest: a scalar
// loss for the gradient checks, any node for [Forward]. It must be
// deterministic given s (see the package documentation).
type BuildFunc func(s *graph.Scope) (*G.Node, error)

// Formula selects the finite-difference estimate.
type Formula int

const (
	// Auto (the default) uses Central5 with Step5 and, for an element whose
	// error exceeds the tolerance, also Central with Step, keeping the
	// smaller error. Central5 at h = 1e-3 is accurate to about 1e-12 on
	// smooth losses, where Central at h = 1e-6 carries rounding noise of
	// about 1e-10·|loss| — too much for a 1e-6 relative check of gradients
	// near 1e-4 — while Central's small step is the one that survives kinks
	// (ReLU, max) that a step of 1e-3 may straddle. A wrong symbolic gradient
	// matches neither estimate.
	Auto Formula = iota
	// Central is (f(x+h) - f(x-h)) / 2h with h = Step: error O(h²) plus
	// rounding O(ε|f|/h).
	Central
	// Central5 is the five-point stencil
	// (f(x-2h) - 8f(x-h) + 8f(x+h) - f(x+2h)) / 12h with h = Step5: error
	// O(h⁴) plus rounding O(ε|f|/h), twice the evaluations of Central.
	Central5
)

// Options configures the gradient checks. The zero value means the
// documented defaults.
type Options struct {
	// Seed seeds the Scope handed to the build function.
	Seed uint64
	// Wrt lists the full paths of the parameters to check; nil means all of
	// s.Params().
	Wrt []string
	// Formula is the finite-difference estimate (default Auto).
	Formula Formula
	// Step is the step h of the Central formula (default 1e-6).
	Step float64
	// Step5 is the step h of the Central5 formula (default 1e-3).
	Step5 float64
	// Tol is the largest accepted error (default 1e-6 in float64, 1e-3 in
	// float32).
	Tol float64
	// Floor is the smallest denominator of the relative error (default 1e-4
	// in float64, 1e-2 in float32).
	Floor float64
	// MaxElems, if positive, checks at most MaxElems elements of each
	// parameter, chosen at random (seeded by Seed and the parameter's
	// position). Zero checks every element.
	MaxElems int
	// MaxReports caps the number of mismatching elements reported per
	// parameter (default 10); the rest are counted.
	MaxReports int
}

func (o Options) withDefaults(dt tensor.Dtype) Options {
	if o.Step == 0 {
		o.Step = 1e-6
	}
	if o.Step5 == 0 {
		o.Step5 = 1e-3
	}
	if o.Tol == 0 {
		o.Tol = 1e-6
		if dt == tensor.Float32 {
			o.Tol = 1e-3
		}
	}
	if o.Floor == 0 {
		o.Floor = 1e-4
		if dt == tensor.Float32 {
			o.Floor = 1e-2
		}
	}
	if o.MaxReports == 0 {
		o.MaxReports = 10
	}
	return o
}

func (o Options) validate() error {
	switch {
	case o.Step < 0 || math.IsNaN(o.Step) || math.IsInf(o.Step, 0):
		return fmt.Errorf("Options.Step = %v: must be positive and finite", o.Step)
	case o.Step5 < 0 || math.IsNaN(o.Step5) || math.IsInf(o.Step5, 0):
		return fmt.Errorf("Options.Step5 = %v: must be positive and finite", o.Step5)
	case o.Tol < 0 || math.IsNaN(o.Tol):
		return fmt.Errorf("Options.Tol = %v: must be positive", o.Tol)
	case o.Floor < 0 || math.IsNaN(o.Floor):
		return fmt.Errorf("Options.Floor = %v: must be positive", o.Floor)
	case o.MaxElems < 0:
		return fmt.Errorf("Options.MaxElems = %d: must be >= 0", o.MaxElems)
	case o.Formula != Auto && o.Formula != Central && o.Formula != Central5:
		return fmt.Errorf("Options.Formula = %d: unknown", o.Formula)
	}
	return nil
}

// CheckGrad checks the symbolic gradient of the scalar returned by build with
// respect to the parameters (opts.Wrt, or all of s.Params()) against finite
// differences, in float64. Mismatches are reported with t.Errorf; setup
// failures (a build error, a non-scalar loss, a non-deterministic build) with
// t.Fatalf. It returns the largest error found (+Inf after a fatal failure).
func CheckGrad(t testing.TB, build BuildFunc, opts Options) float64 {
	t.Helper()
	return CheckGradDtype(t, tensor.Float64, build, opts)
}

// CheckGrad32 is CheckGrad for a float32 build: the symbolic gradient is
// computed in float32 and compared with float64 finite differences of the
// same build function (the Scope draws initial values in float64 and converts
// them, so both builds start from the same parameters up to rounding).
func CheckGrad32(t testing.TB, build BuildFunc, opts Options) float64 {
	t.Helper()
	return CheckGradDtype(t, tensor.Float32, build, opts)
}

// CheckGradDtype is CheckGrad with the dtype of the symbolic build given
// explicitly (tensor.Float64 or tensor.Float32), for table-driven tests.
func CheckGradDtype(t testing.TB, dt tensor.Dtype, build BuildFunc, opts Options) float64 {
	t.Helper()
	inf := math.Inf(1)
	if err := graph.CheckDtype(dt); err != nil {
		t.Fatalf("graphtest: %v", err)
		return inf
	}
	if err := opts.validate(); err != nil {
		t.Fatalf("graphtest: %v", err)
		return inf
	}
	opts = opts.withDefaults(dt)

	sym, err := symbolic(dt, build, opts.Seed, opts.Wrt)
	if err != nil {
		t.Fatalf("graphtest: %v symbolic gradient: %v", dt, err)
		return inf
	}
	fd, err := newFDRunner(build, opts.Seed, opts.Wrt)
	if err != nil {
		t.Fatalf("graphtest: finite differences: %v", err)
		return inf
	}
	defer fd.close()
	if err := fd.consistentWith(sym, dt); err != nil {
		t.Fatalf("graphtest: %v", err)
		return inf
	}

	maxErr := 0.0
	for pi, p := range fd.wrt {
		reported := 0
		bad := 0
		for _, i := range elems(p.size, opts.MaxElems, opts.Seed, pi) {
			g := sym.grads[pi][i]
			e, est, err := fd.check(p, i, g, opts)
			if err != nil {
				t.Fatalf("graphtest: finite difference of %s[%d]: %v", p.name, i, err)
				return inf
			}
			maxErr = math.Max(maxErr, e)
			if e <= opts.Tol {
				continue
			}
			bad++
			if reported == opts.MaxReports {
				continue
			}
			reported++
			t.Errorf("graphtest: %v gradient of %s[%d] (index %v of shape %v): symbolic %.10g, finite difference %s: error %.3g > tol %.3g",
				dt, p.name, i, unravel(i, p.shape), p.shape, g, est, e, opts.Tol)
		}
		if bad > reported {
			t.Errorf("graphtest: %s: %d more mismatching elements", p.name, bad-reported)
		}
	}
	return maxErr
}

// Forward builds the graph in a fresh Scope of dtype dt seeded with seed,
// runs it once (no gradients) and returns the values of the node build
// returns, as float64s in row-major order. Failures are fatal.
func Forward(t testing.TB, build BuildFunc, dt tensor.Dtype, seed uint64) []float64 {
	t.Helper()
	out, err := forward(build, dt, seed)
	if err != nil {
		t.Fatalf("graphtest: forward in %v: %v", dt, err)
		return nil
	}
	return out
}

// Gradients builds the graph in a fresh Scope of dtype dt seeded with seed,
// runs it once with symbolic gradients and returns the scalar loss and the
// gradient of every parameter of s.Params(), keyed by full path. Use it to
// compare the gradients of two formulations of the same model. Failures are
// fatal.
func Gradients(t testing.TB, build BuildFunc, dt tensor.Dtype, seed uint64) (float64, map[string][]float64) {
	t.Helper()
	sym, err := symbolic(dt, build, seed, nil)
	if err != nil {
		t.Fatalf("graphtest: gradients in %v: %v", dt, err)
		return math.NaN(), nil
	}
	out := make(map[string][]float64, len(sym.names))
	for i, name := range sym.names {
		out[name] = sym.grads[i]
	}
	return sym.loss, out
}

// AllClose reports through t.Errorf every element where got and want differ
// by more than tol relative to max(|got|, |want|, 1) — relative for large
// values, absolute for small ones — and returns the largest such error.
// A length mismatch is fatal. what names the compared quantity in messages.
func AllClose(t testing.TB, what string, got, want []float64, tol float64) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("graphtest: %s: got %d values, want %d", what, len(got), len(want))
		return math.Inf(1)
	}
	m, bad := compare(got, want, 1, tol)
	for k, b := range bad {
		if k == 10 {
			t.Errorf("graphtest: %s: %d more mismatching elements", what, len(bad)-k)
			break
		}
		t.Errorf("graphtest: %s[%d]: got %.10g, want %.10g (error %.3g > tol %.3g)", what, b.pos, b.sym, b.fd, b.err, tol)
	}
	return m
}

// RandValues returns n draws of N(0, 1) from s.Rand(), for filling inputs
// inside a build function reproducibly.
func RandValues(s *graph.Scope, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = s.Rand().NormFloat64()
	}
	return out
}

// ---------------------------------------------------------------------------

// relErr is |a-b| / max(|a|, |b|, floor); NaN or infinite inputs give +Inf
// unless both are the same infinity.
func relErr(a, b, floor float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.Inf(1)
	}
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		if a == b {
			return 0
		}
		return math.Inf(1)
	}
	d := math.Max(math.Max(math.Abs(a), math.Abs(b)), floor)
	if d == 0 {
		return 0 // a == b == 0 with floor 0
	}
	return math.Abs(a-b) / d
}

type mismatch struct {
	pos          int // position in the compared slices
	sym, fd, err float64
}

// compare returns the largest relErr over the elements of sym and fd (equal
// lengths) and the elements whose error exceeds tol.
func compare(sym, fd []float64, floor, tol float64) (float64, []mismatch) {
	maxErr := 0.0
	var bad []mismatch
	for i := range sym {
		e := relErr(sym[i], fd[i], floor)
		maxErr = math.Max(maxErr, e)
		if e > tol {
			bad = append(bad, mismatch{pos: i, sym: sym[i], fd: fd[i], err: e})
		}
	}
	return maxErr, bad
}

// elems lists the flat indices to check for a parameter of the given size.
func elems(size, maxElems int, seed uint64, param int) []int {
	if maxElems <= 0 || maxElems >= size {
		out := make([]int, size)
		for i := range out {
			out[i] = i
		}
		return out
	}
	rng := rand.New(rand.NewPCG(seed, uint64(param)+1))
	out := rng.Perm(size)[:maxElems]
	sort.Ints(out)
	return out
}

// unravel converts a flat row-major index into a multi-index of shape.
func unravel(i int, shape tensor.Shape) []int {
	out := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		out[d] = i % shape[d]
		i /= shape[d]
	}
	return out
}

// buildIn calls build on a fresh Scope, turning a panic carrying an error
// (G.Must inside build) into an error.
func buildIn(dt tensor.Dtype, seed uint64, build BuildFunc) (*graph.Scope, *G.Node, error) {
	s, err := graph.NewScope(dt, seed)
	if err != nil {
		return nil, nil, err
	}
	out, err := callBuild(s, build)
	if err != nil {
		return nil, nil, fmt.Errorf("build: %w", err)
	}
	if out == nil {
		return nil, nil, fmt.Errorf("build returned a nil node")
	}
	return s, out, nil
}

func callBuild(s *graph.Scope, build BuildFunc) (out *G.Node, err error) {
	defer graph.Recover(&err)
	return build(s)
}

// newMachine compiles a TapeMachine, turning Gorgonia's compile panics into
// errors.
func newMachine(g *G.ExprGraph, opts ...G.VMOpt) (m G.VM, err error) {
	defer graph.Recover(&err)
	return G.NewTapeMachine(g, opts...), nil
}

func wrtOf(s *graph.Scope, names []string) (G.Nodes, error) {
	if names == nil {
		ps := s.Params()
		if len(ps) == 0 {
			return nil, fmt.Errorf("the scope has no parameters")
		}
		return ps, nil
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("Options.Wrt is empty")
	}
	out := make(G.Nodes, len(names))
	for i, name := range names {
		p, ok := s.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("Options.Wrt[%d] = %q: no such parameter (have %v)", i, name, s.ParamNames())
		}
		out[i] = p
	}
	return out, nil
}

func checkScalar(loss *G.Node) error {
	if !loss.IsScalar() {
		return fmt.Errorf("loss %q has shape %v, want a scalar", loss.Name(), loss.Shape())
	}
	return nil
}

type symResult struct {
	loss   float64
	names  []string
	values [][]float64 // parameter values the gradient was taken at
	grads  [][]float64
}

func symbolic(dt tensor.Dtype, build BuildFunc, seed uint64, names []string) (*symResult, error) {
	s, loss, err := buildIn(dt, seed, build)
	if err != nil {
		return nil, err
	}
	if err := checkScalar(loss); err != nil {
		return nil, err
	}
	wrt, err := wrtOf(s, names)
	if err != nil {
		return nil, err
	}
	if _, err := G.Grad(loss, wrt...); err != nil {
		return nil, fmt.Errorf("G.Grad: %w", err)
	}
	m, err := newMachine(s.Graph(), G.BindDualValues(wrt...))
	if err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	defer m.Close()
	if err := m.RunAll(); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	r := &symResult{}
	if r.loss, err = graph.Scalar(loss); err != nil {
		return nil, err
	}
	for _, p := range wrt {
		v, err := graph.Values(p)
		if err != nil {
			return nil, err
		}
		g, err := graph.GradValues(p)
		if err != nil {
			return nil, err
		}
		r.names = append(r.names, p.Name())
		r.values = append(r.values, v)
		r.grads = append(r.grads, g)
	}
	return r, nil
}

func forward(build BuildFunc, dt tensor.Dtype, seed uint64) ([]float64, error) {
	s, out, err := buildIn(dt, seed, build)
	if err != nil {
		return nil, err
	}
	m, err := newMachine(s.Graph())
	if err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	defer m.Close()
	if err := m.RunAll(); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	return graph.Values(out)
}

// fdParam is one parameter of the float64 finite-difference build.
type fdParam struct {
	node  *G.Node
	name  string
	shape tensor.Shape
	size  int
	data  []float64 // backing slice of the node's value; nil for scalars
}

func (p *fdParam) get(i int) (float64, error) {
	if p.data != nil {
		return p.data[i], nil
	}
	return graph.Scalar(p.node)
}

// set writes v into element i of the parameter's value in place, where the
// compiled machine reads it on its next run (TapeMachine loads input nodes
// from their bound values at every run).
func (p *fdParam) set(i int, v float64) error {
	if p.data != nil {
		p.data[i] = v
		return nil
	}
	return graph.SetValue(p.node, []float64{v})
}

// fdRunner evaluates the loss of a float64 build without gradient nodes,
// re-running one compiled machine.
type fdRunner struct {
	m    G.VM
	loss *G.Node
	base float64
	wrt  []*fdParam
}

func newFDRunner(build BuildFunc, seed uint64, names []string) (*fdRunner, error) {
	s, loss, err := buildIn(tensor.Float64, seed, build)
	if err != nil {
		return nil, err
	}
	if err := checkScalar(loss); err != nil {
		return nil, err
	}
	wrt, err := wrtOf(s, names)
	if err != nil {
		return nil, err
	}
	r := &fdRunner{loss: loss}
	for _, n := range wrt {
		p := &fdParam{node: n, name: n.Name(), shape: n.Shape().Clone(), size: n.Shape().TotalSize()}
		if n.Value() == nil {
			return nil, fmt.Errorf("parameter %q has no value", p.name)
		}
		if d, ok := n.Value().Data().([]float64); ok {
			p.data = d
		}
		r.wrt = append(r.wrt, p)
	}
	if r.m, err = newMachine(s.Graph()); err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	// Run twice: the compiled machine must be reusable and leave the
	// parameters untouched, or the differences below mean nothing.
	before, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	if r.base, err = r.eval(); err != nil {
		return nil, err
	}
	again, err := r.eval()
	if err != nil {
		return nil, err
	}
	if again != r.base && !(math.IsNaN(again) && math.IsNaN(r.base)) {
		return nil, fmt.Errorf("re-running the compiled machine changed the loss from %.17g to %.17g", r.base, again)
	}
	after, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	for i := range before {
		for j := range before[i] {
			if before[i][j] != after[i][j] {
				return nil, fmt.Errorf("running the machine modified parameter %s[%d]", r.wrt[i].name, j)
			}
		}
	}
	if math.IsNaN(r.base) || math.IsInf(r.base, 0) {
		return nil, fmt.Errorf("loss is %v at the initial parameters", r.base)
	}
	return r, nil
}

func (r *fdRunner) close() { r.m.Close() }

func (r *fdRunner) snapshot() ([][]float64, error) {
	out := make([][]float64, len(r.wrt))
	for i, p := range r.wrt {
		v, err := graph.Values(p.node)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (r *fdRunner) eval() (float64, error) {
	defer r.m.Reset()
	if err := r.m.RunAll(); err != nil {
		return 0, fmt.Errorf("run: %w", err)
	}
	return graph.Scalar(r.loss)
}

// at evaluates the loss with element i of p set to x, then restores it.
func (r *fdRunner) at(p *fdParam, i int, x0, x float64) (float64, error) {
	if err := p.set(i, x); err != nil {
		return 0, err
	}
	f, err := r.eval()
	if rerr := p.set(i, x0); err == nil {
		err = rerr
	}
	return f, err
}

func (r *fdRunner) derivative(p *fdParam, i int, h float64, formula Formula) (float64, error) {
	x0, err := p.get(i)
	if err != nil {
		return 0, err
	}
	// Use an exactly representable offset so that the divisor matches the
	// actual perturbation.
	hp := (x0 + h) - x0
	f := func(k float64) (float64, error) { return r.at(p, i, x0, x0+k*hp) }
	fp, err := f(1)
	if err != nil {
		return 0, err
	}
	fm, err := f(-1)
	if err != nil {
		return 0, err
	}
	if formula == Central {
		return (fp - fm) / (2 * hp), nil
	}
	fpp, err := f(2)
	if err != nil {
		return 0, err
	}
	fmm, err := f(-2)
	if err != nil {
		return 0, err
	}
	return (fmm - 8*fm + 8*fp - fpp) / (12 * hp), nil
}

// check returns the error of the symbolic derivative g of element i of p
// against the finite-difference estimate(s) that opts ask for, and the
// estimate(s) as text for messages.
func (r *fdRunner) check(p *fdParam, i int, g float64, opts Options) (float64, string, error) {
	switch opts.Formula {
	case Central:
		d, err := r.derivative(p, i, opts.Step, Central)
		return relErr(g, d, opts.Floor), fmt.Sprintf("%.10g (central, h=%g)", d, opts.Step), err
	case Central5:
		d, err := r.derivative(p, i, opts.Step5, Central5)
		return relErr(g, d, opts.Floor), fmt.Sprintf("%.10g (5-point, h=%g)", d, opts.Step5), err
	}
	d5, err := r.derivative(p, i, opts.Step5, Central5)
	if err != nil {
		return 0, "", err
	}
	e5 := relErr(g, d5, opts.Floor)
	if e5 <= opts.Tol {
		return e5, "", nil
	}
	d2, err := r.derivative(p, i, opts.Step, Central)
	if err != nil {
		return 0, "", err
	}
	est := fmt.Sprintf("%.10g (5-point, h=%g) or %.10g (central, h=%g)", d5, opts.Step5, d2, opts.Step)
	return math.Min(e5, relErr(g, d2, opts.Floor)), est, nil
}

// consistentWith checks that the symbolic build saw the same parameters
// (names, values) and the same loss as the finite-difference build, which
// catches build functions that are not deterministic given their Scope.
func (r *fdRunner) consistentWith(sym *symResult, dt tensor.Dtype) error {
	if len(sym.names) != len(r.wrt) {
		return fmt.Errorf("the %v build has %d parameters to check, the float64 build %d: build is not deterministic", dt, len(sym.names), len(r.wrt))
	}
	tol := 0.0 // float64: bit-identical
	if dt == tensor.Float32 {
		tol = 1e-6 // float32 rounding of the same float64 draws
	}
	for i, p := range r.wrt {
		if sym.names[i] != p.name {
			return fmt.Errorf("parameter %d is %q in the %v build, %q in the float64 build: build is not deterministic", i, sym.names[i], dt, p.name)
		}
		v, err := graph.Values(p.node)
		if err != nil {
			return err
		}
		if len(v) != len(sym.values[i]) || len(sym.grads[i]) != len(v) {
			return fmt.Errorf("parameter %q: %d values in the %v build, %d in the float64 build", p.name, len(sym.values[i]), dt, len(v))
		}
		for j := range v {
			if relErr(v[j], sym.values[i][j], 1e-30) > tol {
				return fmt.Errorf("parameter %s[%d] is %.10g in the %v build, %.10g in the float64 build: build is not deterministic", p.name, j, sym.values[i][j], dt, v[j])
			}
		}
	}
	ltol := 1e-12
	if dt == tensor.Float32 {
		ltol = 1e-4
	}
	if relErr(sym.loss, r.base, 1) > ltol {
		return fmt.Errorf("loss is %.10g in the %v build, %.10g in the float64 build: build is not deterministic (or the machine is wrong)", sym.loss, dt, r.base)
	}
	return nil
}
