package cuda

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/losses"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// tiedModel is a language-model output path on a table wider than the
// test models' 11 tokens: h = LookupCentered(ids) (or Lookup), reshaped to
// (B·T, D), plus Lookup(ids2); logits = TiedLogits(h, w); the sparse
// cross-entropy against labels (some not scored).
func tiedModel(dt tensor.Dtype, V, D int, centered bool) (*testModel, error) {
	s, err := graph.NewScope(dt, 31)
	if err != nil {
		return nil, err
	}
	const B, T = 3, 5
	e, err := layers.NewSparseEmbedding(s.Sub("wte"), layers.EmbeddingConfig{Vocab: V, Dim: D, WInit: graph.Normal(0.6)})
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(31, 7))
	feed := func(name string, hi int, shape ...int) (*G.Node, error) {
		n, err := layers.NewIDs(s, name, shape...)
		if err != nil {
			return nil, err
		}
		vals := make([]int, B*T)
		for i := range vals {
			vals[i] = rng.IntN(hi)
		}
		if name == "labels" {
			vals[3] = -1
			return n, losses.SetLabels(n, vals, V)
		}
		vals[1] = vals[0] // a repeated id: the scatter adds two rows into one
		return n, e.SetIDs(n, vals)
	}
	ids, err := feed("ids", V, B, T)
	if err != nil {
		return nil, err
	}
	ids2, err := feed("ids2", V, B*T)
	if err != nil {
		return nil, err
	}
	labels, err := feed("labels", V, B*T)
	if err != nil {
		return nil, err
	}
	look := e.Lookup
	if centered {
		look = e.LookupCentered
	}
	h, err := look(ids)
	if err != nil {
		return nil, err
	}
	if h, err = ops.Reshape(h, tensor.Shape{B * T, D}); err != nil {
		return nil, err
	}
	h2, err := e.Lookup(ids2)
	if err != nil {
		return nil, err
	}
	if h, err = G.Add(h, h2); err != nil {
		return nil, err
	}
	logits, err := e.Logits(h)
	if err != nil {
		return nil, err
	}
	loss, err := losses.SparseSoftmaxCrossEntropy(logits, labels)
	if err != nil {
		return nil, err
	}
	return &testModel{name: "tied", s: s, loss: loss, outputs: G.Nodes{logits, h}}, nil
}

// TestExecutorTiedCentered compares the tied output layer (its three
// products on Gemm) and the centered and plain lookups (the mean row and
// the scatter-add's fill through the mean, with meanChunks partial sums of
// one row, several rows and all rows per chunk) with the TapeMachine, and
// requires them on the device when the backend has kernels.
func TestExecutorTiedCentered(t *testing.T) {
	be, device := execBackend(t)
	defer func(c int) { meanChunks = c }(meanChunks)
	for _, centered := range []bool{true, false} {
		for _, chunks := range []int{64, 7, 1} {
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				t.Run(fmt.Sprintf("centered=%v/chunks=%d/%v", centered, chunks, dt), func(t *testing.T) {
					meanChunks = chunks
					run := func(factory graph.ExecutorFactory) (snapshot, *graph.Machine) {
						m, err := tiedModel(dt, 29, 6, centered)
						if err != nil {
							t.Fatal(err)
						}
						mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Executor: factory, Outputs: m.outputs})
						if err != nil {
							t.Fatal(err)
						}
						t.Cleanup(func() { mach.Close() })
						var s snapshot
						for run := 0; run < 2; run++ { // buffers reused: the same again
							if err := mach.Run(); err != nil {
								t.Fatal(err)
							}
							s = takeSnapshot(t, m, mach)
						}
						return s, mach
					}
					want, _ := run(nil)
					got, mach := run(NewExecutorWith(be, ExecOptions{HostOnly: !device, Logf: func(string, ...any) {}}))
					worst := compareSnapshots(t, got, want, execTol(dt))
					t.Logf("largest relative difference %.3g", worst)
					if device {
						if fb := mach.Executor().(*Exec).FallbackOps(); len(fb) > 0 {
							t.Errorf("ops on the host: %v", fb)
						}
					}
				})
			}
		}
	}
}

// fakeOp stands in for an op type of gdattn's packages in the unknownField
// tests.
type fakeOp struct {
	a, b  int
	inner *fakeInner
}

type fakeInner struct{ x, y bool }

// TestUnknownField: an op whose struct has a field opFields does not list
// for its type (or holds a listed type with such a field) is reported;
// types not listed are not checked.
func TestUnknownField(t *testing.T) {
	defer func() {
		delete(opFields, "cuda.fakeOp")
		delete(opFields, "cuda.fakeInner")
	}()
	if f := unknownField(&fakeOp{}); f != "" {
		t.Errorf("unlisted type: got %q, want none", f)
	}
	opFields["cuda.fakeOp"] = []string{"a", "b", "inner"}
	if f := unknownField(&fakeOp{inner: &fakeInner{}}); f != "" {
		t.Errorf("all fields known: got %q", f)
	}
	opFields["cuda.fakeOp"] = []string{"a", "inner"}
	if f := unknownField(&fakeOp{}); f != "cuda.fakeOp.b" {
		t.Errorf("got %q, want cuda.fakeOp.b", f)
	}
	opFields["cuda.fakeOp"] = []string{"a", "b", "inner"}
	opFields["cuda.fakeInner"] = []string{"x"}
	if f := unknownField(&fakeOp{}); f != "" {
		t.Errorf("nil inner op: got %q", f)
	}
	if f := unknownField(&fakeOp{inner: &fakeInner{}}); f != "cuda.fakeInner.y" {
		t.Errorf("got %q, want cuda.fakeInner.y", f)
	}
}

// TestExecutorUnknownOptionFallsBack: with "center" struck from the
// gather's and scatter's known fields (as if LookupCentered had been added
// after the lowering), the language model's centered lookup and its
// gradient run on the host, the report names the field, and the results
// still match the TapeMachine.
func TestExecutorUnknownOptionFallsBack(t *testing.T) {
	be, device := execBackend(t)
	saved := map[string][]string{}
	for _, typ := range []string{"ops.GatherOp", "ops.ScatterOp"} {
		saved[typ] = opFields[typ]
		var known []string
		for _, f := range opFields[typ] {
			if f != "center" {
				known = append(known, f)
			}
		}
		opFields[typ] = known
	}
	defer func() {
		for typ, f := range saved {
			opFields[typ] = f
		}
	}()
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		x := compareModel(t, be, device, "gdlm", dt)
		if !device {
			continue
		}
		fb := strings.Join(x.FallbackOps(), "; ")
		for _, want := range []string{"layers.gatherOp Gather [unlowered field layers.gatherOp.center]", "layers.scatterOp ScatterAdd [unlowered field layers.scatterOp.center]"} {
			if !strings.Contains(fb, want) {
				t.Errorf("%v: host ops %q lack %q", dt, fb, want)
			}
		}
	}
}

// TestOpFieldsCurrent: every field opFields lists for an op type still
// exists in the type, for the op types the test models build (a stale
// entry would hide nothing, but says the list was not kept up to date).
func TestOpFieldsCurrent(t *testing.T) {
	seen := map[string]reflect.Type{}
	var walk func(rv reflect.Value)
	walk = func(rv reflect.Value) {
		for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
			if rv.IsNil() {
				return
			}
			rv = rv.Elem()
		}
		if rv.Kind() != reflect.Struct {
			return
		}
		typ := rv.Type().String()
		if _, ok := opFields[typ]; !ok || seen[typ] != nil {
			return
		}
		seen[typ] = rv.Type()
		for i := 0; i < rv.NumField(); i++ {
			walk(rv.Field(i))
		}
	}
	models := []*testModel{}
	for _, name := range modelNames {
		m, err := buildModel(name, tensor.Float64, 5)
		if err != nil {
			t.Fatal(err)
		}
		models = append(models, m)
	}
	m, err := tiedModel(tensor.Float64, 29, 6, true)
	if err != nil {
		t.Fatal(err)
	}
	models = append(models, m)
	for _, m := range models {
		mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range m.s.Graph().AllNodes() {
			if n.Op() != nil {
				walk(reflect.ValueOf(n.Op()))
			}
		}
		mach.Close()
	}
	for typ, known := range opFields {
		rt, ok := seen[typ]
		if !ok {
			t.Logf("%s: not built by the test models", typ)
			continue
		}
		for _, f := range known {
			if _, ok := rt.FieldByName(f); !ok {
				t.Errorf("opFields lists %s.%s, which the type no longer has", typ, f)
			}
		}
		if rt.NumField() != len(known) {
			t.Errorf("%s has %d fields, opFields lists %d", typ, rt.NumField(), len(known))
		}
	}
}
