package cuda

import (
	"fmt"
	"hash"
	"math"
	"strings"
	"testing"

	"github.com/chewxy/hm"
	"github.com/gdattn/gdattn/graph"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// execTol is the comparison tolerance of the executor tests: the largest
// difference of a tensor, relative to its largest magnitude (at least 1).
func execTol(dt tensor.Dtype) float64 {
	if dt == tensor.Float32 {
		return 1e-4
	}
	return 1e-10
}

// relDiff is max|a−b| / max(1, max|b|).
func relDiff(a, b []float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	mx, scale := 0.0, 1.0
	for i := range a {
		mx = math.Max(mx, math.Abs(a[i]-b[i]))
		if math.IsNaN(a[i]) != math.IsNaN(b[i]) {
			return math.Inf(1)
		}
		scale = math.Max(scale, math.Abs(b[i]))
	}
	return mx / scale
}

// snapshot is what a run leaves readable: loss, outputs, gradients.
type snapshot struct {
	loss    float64
	outputs [][]float64
	grads   map[string][]float64
}

func takeSnapshot(t *testing.T, m *testModel, mach *graph.Machine) snapshot {
	t.Helper()
	var s snapshot
	var err error
	if s.loss, err = graph.Scalar(m.loss); err != nil {
		t.Fatal(err)
	}
	for _, o := range m.outputs {
		v, err := graph.Values(o)
		if err != nil {
			t.Fatal(err)
		}
		s.outputs = append(s.outputs, v)
	}
	s.grads = map[string][]float64{}
	for _, p := range mach.Params() {
		g, err := graph.GradValues(p)
		if err != nil {
			t.Fatal(err)
		}
		s.grads[p.Name()] = g
	}
	return s
}

// compareSnapshots fails t where got and want differ by more than tol.
func compareSnapshots(t *testing.T, got, want snapshot, tol float64) float64 {
	t.Helper()
	worst := relDiff([]float64{got.loss}, []float64{want.loss})
	if worst > tol {
		t.Errorf("loss %v, TapeMachine %v", got.loss, want.loss)
	}
	for i := range want.outputs {
		if d := relDiff(got.outputs[i], want.outputs[i]); d > tol {
			t.Errorf("output %d differs by %.3g (relative)", i, d)
		} else {
			worst = math.Max(worst, d)
		}
	}
	if len(got.grads) != len(want.grads) {
		t.Errorf("%d gradients, TapeMachine %d", len(got.grads), len(want.grads))
	}
	for name, w := range want.grads {
		d := relDiff(got.grads[name], w)
		if d > tol {
			t.Errorf("gradient of %q differs by %.3g (relative)", name, d)
		}
		worst = math.Max(worst, d)
	}
	return worst
}

// tapeRun builds model name and returns its TapeMachine results.
func tapeRun(t *testing.T, name string, dt tensor.Dtype) snapshot {
	t.Helper()
	m, err := buildModel(name, dt, 5)
	if err != nil {
		t.Fatal(err)
	}
	mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer mach.Close()
	if err := mach.Run(); err != nil {
		t.Fatal(err)
	}
	return takeSnapshot(t, m, mach)
}

// expensiveOps are the op types the tests require on the device when the
// backend has kernels.
var expensiveOps = []string{"gorgonia.linAlgBinOp", "ops.MatMulOp", "ops.BatchedMatMulOp", "ops.KernelOp", "ops.KernelGradOp",
	"ops.SoftMaxOp", "ops.SoftMaxGradOp", "ops.HeadOp", "ops.HeadGradOp", "ops.HeadParamGradOp",
	"ops.ExpectationOp", "ops.ExpectationGradOp", "ops.ExpectationParamGradOp", "ops.SparseCrossEntropyOp",
	"ops.TiedLogitsOp", "ops.GatherOp", "ops.ScatterOp", "ops.GELUOp", "ops.GELUGradOp", "ops.LayerNormOp", "ops.LayerNormGradOp", "ops.LayerNormMeanGradOp", "ops.LayerNormParamGradOp"}

// TestExecutorMatchesTapeMachine runs every test model (forward, loss and all
// parameter gradients) through the executor and compares with Gorgonia's
// TapeMachine, in float32 and float64, and logs where each op runs.
func TestExecutorMatchesTapeMachine(t *testing.T) {
	be, device := execBackend(t)
	c := countLaunches(be)
	defer c.took(t, device, []string{"reduce4_warp", "softmax_rows", "softmax_grad_rows"}, nil)
	be = c
	for _, name := range modelNames {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(fmt.Sprintf("%s/%v", name, dt), func(t *testing.T) {
				x := compareModel(t, be, device, name, dt)
				var dev, host []string
				for _, p := range x.Placements() {
					s := fmt.Sprintf("%s ×%d", p.Op, p.Count)
					if p.Device {
						dev = append(dev, s)
					} else {
						host = append(host, s)
					}
				}
				if dt == tensor.Float64 {
					t.Logf("device: %s", strings.Join(dev, "; "))
					t.Logf("host:   %s", strings.Join(host, "; "))
				}
				if device {
					for _, p := range x.Placements() {
						for _, e := range expensiveOps {
							if !p.Device && strings.HasPrefix(p.Op, e+" ") {
								t.Errorf("%s runs on the host", p.Op)
							}
						}
					}
				}
			})
		}
	}
}

// compareModel runs test model name through the executor twice and
// compares loss, outputs and gradients with the TapeMachine's; it returns
// the executor.
func compareModel(t *testing.T, be Backend, device bool, name string, dt tensor.Dtype) *Exec {
	t.Helper()
	want := tapeRun(t, name, dt)
	m, err := buildModel(name, dt, 5)
	if err != nil {
		t.Fatal(err)
	}
	opts := ExecOptions{HostOnly: !device, Logf: func(string, ...any) {}}
	mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Executor: NewExecutorWith(be, opts), Outputs: m.outputs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mach.Close() })
	for run := 0; run < 2; run++ { // a second run must give the same
		if err := mach.Run(); err != nil {
			t.Fatal(err)
		}
		got := takeSnapshot(t, m, mach)
		worst := compareSnapshots(t, got, want, execTol(dt))
		if run == 0 {
			t.Logf("largest relative difference %.3g", worst)
		}
	}
	return mach.Executor().(*Exec)
}

// launchCount is a Backend that counts its kernel launches by name (the
// dtype suffix dropped), so that a test can check which path it took.
type launchCount struct {
	Backend
	n map[string]int
}

func countLaunches(be Backend) *launchCount { return &launchCount{Backend: be, n: map[string]int{}} }

func (c *launchCount) Launch(name string, n int64, args ...any) error {
	c.n[strings.TrimSuffix(strings.TrimSuffix(name, "_f32"), "_f64")]++
	return c.Backend.Launch(name, n, args...)
}

// took fails t unless (on a backend with kernels) every kernel of some ran
// and none of none did.
func (c *launchCount) took(t *testing.T, device bool, some, none []string) {
	t.Helper()
	if !device {
		return
	}
	for _, k := range some {
		if c.n[k] == 0 {
			t.Errorf("no %s launched", k)
		}
	}
	for _, k := range none {
		if c.n[k] != 0 {
			t.Errorf("%s launched %d times", k, c.n[k])
		}
	}
}

// TestExecutorLongRows runs the models with dot-product kernels, fused
// attention heads and softmax ops with their long-row paths (a warp per
// row, normally for 64 keys or columns and more) forced on their short
// contexts and few classes: softmax, exp and linear kernels, learned and
// fixed scales, causal masks, the losses' log-softmax and the expectation
// over the vocabulary.
func TestExecutorLongRows(t *testing.T) {
	be, device := execBackend(t)
	defer func(l, h, s int) { attnLongRow, headLongRow, softmaxLongRow = l, h, s }(attnLongRow, headLongRow, softmaxLongRow)
	attnLongRow, headLongRow, softmaxLongRow = 4, 4, 2
	c := countLaunches(be)
	for _, name := range []string{"gd-structured-softmax", "gd-structured-linear", "gd-structured-exp", "gd-literal-softmax", "gd-heads3-bias", "tf", "tf-cross", "gdlm", "gpt"} {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(fmt.Sprintf("%s/%v", name, dt), func(t *testing.T) {
				compareModel(t, c, device, name, dt)
			})
		}
	}
	c.took(t, device, []string{"softmax_rows_warp", "softmax_grad_rows_warp", "attn_rows_warp", "head_weights_warp"}, []string{"softmax_rows", "softmax_grad_rows"})
}

// TestExecutorLongLayerNorm runs the models with layer norms with the warp
// kernels (normally for rows of 128 and more) and the parameter gradients'
// column sums of many rows (normally from 128 rows) forced on their small
// sizes: a warp per column (up to warpSumMax rows), and chunks of 2 rows
// per thread joined.
func TestExecutorLongLayerNorm(t *testing.T) {
	be, device := execBackend(t)
	defer func(a, c, d int, w int64) {
		lnLongRow, lnManyRows, lnChunkRows, warpSumMax = a, c, d, w
	}(lnLongRow, lnManyRows, lnChunkRows, warpSumMax)
	lnLongRow, lnManyRows, lnChunkRows = 4, 4, 2
	for _, sums := range []int64{warpSumMax, 0} {
		c := countLaunches(be)
		for _, name := range []string{"gdlm-ff", "gpt"} {
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				t.Run(fmt.Sprintf("warpSumMax=%d/%s/%v", sums, name, dt), func(t *testing.T) {
					warpSumMax = sums
					compareModel(t, c, device, name, dt)
				})
			}
		}
		if sums > 0 {
			c.took(t, device, []string{"ln_fwd_warp", "ln_grad_warp", "ln_s4_warp", "ln_param_warp"}, []string{"ln_param_part"})
		} else {
			c.took(t, device, []string{"ln_param_part"}, []string{"ln_param_warp"})
		}
	}
}

// TestExecutorChunkedSums runs models with sums of several outputs over
// many elements (bias and parameter gradients, the loss) with every such
// sum split over chunks and joined (reduce4_part, reduce_join), as sums
// longer than warpSumMax are, rather than a warp per output.
func TestExecutorChunkedSums(t *testing.T) {
	be, device := execBackend(t)
	defer func(w int64) { warpSumMax = w }(warpSumMax)
	warpSumMax = 0
	c := countLaunches(be)
	for _, name := range []string{"gd-structured-softmax", "gd-heads3-bias", "tf", "gdlm", "gpt"} {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(fmt.Sprintf("%s/%v", name, dt), func(t *testing.T) {
				compareModel(t, c, device, name, dt)
			})
		}
	}
	c.took(t, device, []string{"reduce4_part", "reduce_join"}, []string{"reduce4_warp", "ln_param_warp", "col_mean_warp"})
}

// TestExecutorDualGradients: on a graph where a TapeMachine already bound
// dual values to the parameters, the executor writes the gradients into
// them, so n.Grad() reads the executor's result.
func TestExecutorDualGradients(t *testing.T) {
	be, device := execBackend(t)
	m, err := buildModel("gd-structured-rbf", tensor.Float64, 5)
	if err != nil {
		t.Fatal(err)
	}
	tape, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tape.Close()
	if err := tape.Run(); err != nil {
		t.Fatal(err)
	}
	want := takeSnapshot(t, m, tape)
	// Change the TapeMachine's gradient values, then run the executor.
	for _, p := range tape.Params() {
		gv, _ := p.Grad()
		if err := scaleValue(gv, 7); err != nil {
			t.Fatal(err)
		}
	}
	mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Executor: NewExecutorWith(be, ExecOptions{HostOnly: !device, Logf: t.Logf})})
	if err != nil {
		t.Fatal(err)
	}
	defer mach.Close()
	if err := mach.Run(); err != nil {
		t.Fatal(err)
	}
	compareSnapshots(t, takeSnapshot(t, m, mach), want, 1e-10)
}

func scaleValue(v G.Value, f float64) error {
	switch x := v.(type) {
	case *G.F64:
		*x *= G.F64(f)
		return nil
	case *tensor.Dense:
		d, ok := x.Data().([]float64)
		if !ok {
			return fmt.Errorf("data %T", x.Data())
		}
		for i := range d {
			d[i] *= f
		}
		return nil
	}
	return fmt.Errorf("value %T", v)
}

// TestExecutorForwardOnly: a forward-only machine restricted to Outputs
// (an evaluation machine) computes the logits as the TapeMachine does.
func TestExecutorForwardOnly(t *testing.T) {
	be, device := execBackend(t)
	for _, name := range []string{"gd-structured-softmax", "tf-cross", "gpt"} {
		want := tapeRun(t, name, tensor.Float64)
		m, err := buildModel(name, tensor.Float64, 5)
		if err != nil {
			t.Fatal(err)
		}
		mach, err := graph.NewMachine(m.s, nil, graph.MachineOptions{NoGrad: true, Outputs: m.outputs,
			Executor: NewExecutorWith(be, ExecOptions{HostOnly: !device, Logf: t.Logf})})
		if err != nil {
			t.Fatal(err)
		}
		defer mach.Close()
		if err := mach.Run(); err != nil {
			t.Fatal(err)
		}
		got, err := graph.Values(m.outputs[0])
		if err != nil {
			t.Fatal(err)
		}
		if d := relDiff(got, want.outputs[0]); d > 1e-10 {
			t.Errorf("%s: logits differ by %.3g", name, d)
		}
	}
}

// viewOp returns a view of its input (a transposed tensor that is not
// materialised), as some Gorgonia ops do: the fallback must upload the
// view's elements in its logical order.
type viewOp struct{}

func (viewOp) Arity() int { return 1 }
func (viewOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	t := &G.TensorType{Dims: 2, Of: a}
	return hm.NewFnType(t, t)
}
func (viewOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s := in[0].(tensor.Shape)
	return tensor.Shape{s[1], s[0]}, nil
}
func (viewOp) Do(v ...G.Value) (G.Value, error) {
	d := v[0].(*tensor.Dense).ShallowClone()
	if err := d.T(); err != nil {
		return nil, err
	}
	return d, nil
}
func (viewOp) ReturnsPtr() bool      { return false }
func (viewOp) CallsExtern() bool     { return false }
func (viewOp) OverwritesInput() int  { return -1 }
func (viewOp) WriteHash(h hash.Hash) { fmt.Fprint(h, "viewOp") }
func (viewOp) Hashcode() uint32      { return 7 }
func (viewOp) String() string        { return "viewOp" }

func TestExecutorFallbackView(t *testing.T) {
	be, device := execBackend(t)
	s, err := graph.NewScope(tensor.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	x, err := s.Param("x", tensor.Shape{2, 3}, graph.FromValues([]float64{1, 2, 3, 4, 5, 6}))
	if err != nil {
		t.Fatal(err)
	}
	y := G.Must(G.ApplyOp(viewOp{}, x))
	mach, err := graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{y}, Executor: NewExecutorWith(be, ExecOptions{HostOnly: !device, Logf: func(string, ...any) {}})})
	if err != nil {
		t.Fatal(err)
	}
	defer mach.Close()
	if err := mach.Run(); err != nil {
		t.Fatal(err)
	}
	got, _ := graph.Values(y)
	if want := []float64{1, 4, 2, 5, 3, 6}; relDiff(got, want) != 0 {
		t.Errorf("transposed view uploaded as %v, want %v", got, want)
	}
}

// TestExecutorHostOps: ExecOptions.HostOps moves the named ops (and the
// fused gradient ops that depend on them) to the CPU fallback, next to
// device ops that read and feed them, with the same results.
func TestExecutorHostOps(t *testing.T) {
	be, device := execBackend(t)
	if !device {
		t.Skip("everything runs on the host already")
	}
	want := tapeRun(t, "tf-cross", tensor.Float64)
	m, err := buildModel("tf-cross", tensor.Float64, 5)
	if err != nil {
		t.Fatal(err)
	}
	opts := ExecOptions{HostOps: []string{"ops.MatMulOp", "ops.HeadOp"}, Logf: t.Logf}
	mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Outputs: m.outputs, Executor: NewExecutorWith(be, opts)})
	if err != nil {
		t.Fatal(err)
	}
	defer mach.Close()
	if err := mach.Run(); err != nil {
		t.Fatal(err)
	}
	compareSnapshots(t, takeSnapshot(t, m, mach), want, 1e-10)
	var host []string
	for _, p := range mach.Executor().(*Exec).Placements() {
		if !p.Device {
			host = append(host, p.Op)
		}
	}
	// The head's gradient ops read buffers of its device forward node, so
	// they follow it onto the host. The last layer's head is the query
	// head (tf.Block.ForwardQuery).
	got, wantHost := strings.Join(host, ", "), "ops.HeadGradOp AttentionHeadGrad, ops.HeadOp AttentionHead, ops.HeadOp AttentionHeadQuery, ops.HeadParamGradOp AttentionHeadGrad, ops.MatMulOp MatMul"
	if got != wantHost {
		t.Errorf("host ops %q, want %q", got, wantHost)
	}
}
