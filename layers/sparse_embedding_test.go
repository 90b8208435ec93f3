package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	"github.com/gdattn/gdattn/losses"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// sparseIDs has repeated ids (3 and 0 twice) and leaves ids 2 and 5 unused.
var sparseIDs = []int{3, 0, 4, 3, 1, 0}

// TestSparseEmbeddingGrad checks the gather's gradient (scattered rows,
// repeated ids adding up, unused rows zero) against finite differences, alone
// and tied to an output layer as in the language models (logits = h W_e).
func TestSparseEmbeddingGrad(t *testing.T) {
	const V, D = 6, 3
	for _, tied := range []bool{false, true} {
		build := func(s *graph.Scope) (*G.Node, error) {
			e, err := NewSparseEmbedding(s.Sub("wte"), EmbeddingConfig{Vocab: V, Dim: D, WInit: graph.Normal(1)})
			if err != nil {
				return nil, err
			}
			ids, err := NewIDs(s, "ids", 2, 3)
			if err != nil {
				return nil, err
			}
			if err := e.SetIDs(ids, sparseIDs); err != nil {
				return nil, err
			}
			x, err := e.Lookup(ids) // (2, 3, D)
			if err != nil {
				return nil, err
			}
			c, err := s.Const("c", tensor.Shape{2, 3, D}, graphtest.RandValues(s, 2*3*D))
			if err != nil {
				return nil, err
			}
			y := G.Must(G.HadamardProd(G.Must(G.Square(x)), c))
			if !tied {
				return G.Sum(y)
			}
			we, err := e.We()
			if err != nil {
				return nil, err
			}
			h := G.Must(graph.Reshape(y, tensor.Shape{6, D}))
			return G.Sum(G.Must(G.Square(G.Must(G.Mul(h, we))))) // (6, V) logits
		}
		worst := graphtest.CheckGrad(t, build, graphtest.Options{Seed: 1})
		worst32 := graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 1})
		t.Logf("tied %v: max relative error float64 %.2e, float32 %.2e", tied, worst, worst32)
	}
}

// TestSparseEmbeddingMatchesByIndices compares values and gradients with
// the ByIndices-based Embedding over several runs of one machine with
// different ids, so that a stale row in the reused gradient buffer shows.
func TestSparseEmbeddingMatchesByIndices(t *testing.T) {
	const V, D = 7, 2
	type setup struct {
		s    *graph.Scope
		ids  *G.Node
		set  func([]int) error
		mc   *graph.Machine
		out  *G.Node
		loss *G.Node
	}
	mk := func(sparse bool) setup {
		s, _ := graph.NewScope(graph.Float64, 5)
		var lookup func(*G.Node) (*G.Node, error)
		var set func(*G.Node, []int) error
		if sparse {
			e, err := NewSparseEmbedding(s.Sub("e"), EmbeddingConfig{Vocab: V, Dim: D})
			if err != nil {
				t.Fatal(err)
			}
			lookup, set = e.Lookup, e.SetIDs
		} else {
			e, err := NewEmbedding(s.Sub("e"), EmbeddingConfig{Vocab: V, Dim: D})
			if err != nil {
				t.Fatal(err)
			}
			lookup, set = e.Lookup, e.SetIDs
		}
		ids, _ := NewIDs(s, "ids", 2, 2)
		out, err := lookup(ids)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := s.Const("w", tensor.Shape{2, 2, D}, []float64{1, -2, 3, 0.5, -1, 2, 0.25, 4})
		loss := G.Must(G.Sum(G.Must(G.HadamardProd(out, w))))
		mc, err := graph.NewMachine(s, loss, graph.MachineOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return setup{s: s, ids: ids, set: func(v []int) error { return set(ids, v) }, mc: mc, out: out, loss: loss}
	}
	a, b := mk(true), mk(false)
	defer a.mc.Close()
	defer b.mc.Close()
	for _, ids := range [][]int{{1, 1, 6, 0}, {2, 3, 2, 5}, {4, 4, 4, 4}} {
		for _, x := range []setup{a, b} {
			if err := x.set(ids); err != nil {
				t.Fatal(err)
			}
			if err := x.mc.Run(); err != nil {
				t.Fatal(err)
			}
		}
		va, _ := graph.Values(a.out)
		vb, _ := graph.Values(b.out)
		graphtest.AllClose(t, "lookup", va, vb, 0)
		ga, _ := graph.GradValues(a.s.Params()[0])
		gb, _ := graph.GradValues(b.s.Params()[0])
		graphtest.AllClose(t, "gradient", ga, gb, 0)
	}
}

func TestSparseEmbeddingErrors(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	if _, err := NewSparseEmbedding(s.Sub("bad"), EmbeddingConfig{Vocab: 0, Dim: 2}); err == nil {
		t.Error("Vocab 0: no error")
	}
	e, err := NewSparseEmbedding(s.Sub("e"), EmbeddingConfig{Vocab: 4, Dim: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Lookup(nil); err == nil {
		t.Error("nil ids: no error")
	}
	f, _ := s.Input("floats", tensor.Shape{3})
	if _, err := e.Lookup(f); err == nil || !strings.Contains(err.Error(), "want int") {
		t.Errorf("float ids: err = %v", err)
	}
	ids, _ := NewIDs(s, "ids", 3)
	if err := e.SetIDs(ids, []int{0, 4, 1}); err == nil || !strings.Contains(err.Error(), "id 4") {
		t.Errorf("SetIDs out of range: err = %v", err)
	}
	// An id written behind SetIDs's back fails the run with an error.
	out, err := e.Lookup(ids)
	if err != nil {
		t.Fatal(err)
	}
	ids.Value().Data().([]int)[1] = 9
	mc, err := graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{out}})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	if err := mc.Run(); err == nil || !strings.Contains(err.Error(), "id 9 at position 1") {
		t.Errorf("run with id 9: err = %v", err)
	}
}

// sparseXent builds the sparse cross-entropy of (N, C) logits drawn in s.
func sparseXent(labels []int, C int) graphtest.BuildFunc {
	return func(s *graph.Scope) (*G.Node, error) {
		logits, err := s.Param("logits", tensor.Shape{len(labels), C}, graph.Normal(2))
		if err != nil {
			return nil, err
		}
		l, err := NewIDs(s, "labels", len(labels))
		if err != nil {
			return nil, err
		}
		if err := SetLabels(l, labels, C); err != nil {
			return nil, err
		}
		return SparseSoftmaxCrossEntropy(logits, l)
	}
}

func TestSparseSoftmaxCrossEntropy(t *testing.T) {
	const C = 5
	labels := []int{2, -1, 0, 4, 2}
	build := sparseXent(labels, C)
	worst := graphtest.CheckGrad(t, build, graphtest.Options{Seed: 1})
	worst32 := graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 1})
	t.Logf("max relative error float64 %.2e, float32 %.2e", worst, worst32)

	// The value equals losses.CrossEntropy with one-hot targets over the
	// scored rows.
	got := graphtest.Forward(t, build, graph.Float64, 1)
	dense := func(s *graph.Scope) (*G.Node, error) {
		logits, err := s.Param("logits", tensor.Shape{len(labels), C}, graph.Normal(2))
		if err != nil {
			return nil, err
		}
		var rows []*G.Node
		var kept []int
		for i, y := range labels {
			if y >= 0 {
				rows = append(rows, G.Must(graph.Slice(logits, 0, i, i+1)))
				kept = append(kept, y)
			}
		}
		oh, err := losses.OneHot(kept, C)
		if err != nil {
			return nil, err
		}
		tg, err := s.Const("targets", tensor.Shape{len(kept), C}, oh)
		if err != nil {
			return nil, err
		}
		return losses.CrossEntropy(G.Must(G.Concat(0, rows...)), tg)
	}
	want := graphtest.Forward(t, dense, graph.Float64, 1)
	graphtest.AllClose(t, "loss", got, want, 1e-14)

	// Nothing scored: 0, with a zero gradient.
	none := graphtest.Forward(t, sparseXent([]int{-1, -1}, C), graph.Float64, 1)
	if none[0] != 0 {
		t.Errorf("loss with no scored label = %v, want 0", none[0])
	}
	_, grads := graphtest.Gradients(t, sparseXent([]int{-1, -1}, C), graph.Float64, 1)
	for _, g := range grads["logits"] {
		if g != 0 {
			t.Fatalf("gradient with no scored label: %v", grads["logits"])
		}
	}
	// Stable for huge logits.
	huge := func(s *graph.Scope) (*G.Node, error) {
		logits, _ := s.Const("logits", tensor.Shape{1, 3}, []float64{1e4, -1e4, 0})
		l, _ := NewIDs(s, "labels", 1)
		SetLabels(l, []int{1}, 3)
		return SparseSoftmaxCrossEntropy(logits, l)
	}
	if v := graphtest.Forward(t, huge, graph.Float32, 1); math.Abs(v[0]-2e4)/2e4 > 1e-6 {
		t.Errorf("loss of huge logits = %v, want 2e4", v[0])
	}
}

func TestSparseSoftmaxCrossEntropyErrors(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	logits, _ := s.Input("logits", tensor.Shape{2, 3})
	labels, _ := NewIDs(s, "labels", 2)
	wrong, _ := NewIDs(s, "wrong", 3)
	if _, err := SparseSoftmaxCrossEntropy(logits, wrong); err == nil {
		t.Error("labels of the wrong length: no error")
	}
	if _, err := SparseSoftmaxCrossEntropy(labels, labels); err == nil {
		t.Error("int logits: no error")
	}
	if err := SetLabels(labels, []int{0, 3}, 3); err == nil || !strings.Contains(err.Error(), "label 3") {
		t.Errorf("SetLabels out of range: err = %v", err)
	}
	if err := SetLabels(logits, []int{0, 1}, 3); err == nil {
		t.Error("SetLabels on a float node: no error")
	}
	loss, err := SparseSoftmaxCrossEntropy(logits, labels)
	if err != nil {
		t.Fatal(err)
	}
	labels.Value().Data().([]int)[0] = -2
	mc, _ := graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{loss}})
	defer mc.Close()
	if err := mc.Run(); err == nil || !strings.Contains(err.Error(), "label -2") {
		t.Errorf("run with label -2: err = %v", err)
	}
}

// BenchmarkEmbeddingBackward compares a training step's lookup gradient
// through ByIndices (a fresh (V, D) tensor per step) and through Gather (a
// reused buffer) at the paper's vocabulary: go test -bench EmbeddingBackward.
func BenchmarkEmbeddingBackward(b *testing.B) {
	const V, D, N = 50258, 512, 2048
	for _, sparse := range []bool{false, true} {
		name := "ByIndices"
		if sparse {
			name = "Gather"
		}
		b.Run(name, func(b *testing.B) {
			s, _ := graph.NewScope(graph.Float32, 1)
			ids, _ := NewIDs(s, "ids", N)
			var out *G.Node
			var err error
			if sparse {
				e, _ := NewSparseEmbedding(s.Sub("e"), EmbeddingConfig{Vocab: V, Dim: D})
				out, err = e.Lookup(ids)
			} else {
				e, _ := NewEmbedding(s.Sub("e"), EmbeddingConfig{Vocab: V, Dim: D})
				out, err = e.Lookup(ids)
			}
			if err != nil {
				b.Fatal(err)
			}
			loss := G.Must(G.Sum(out))
			mc, err := graph.NewMachine(s, loss, graph.MachineOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer mc.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := mc.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSparseXentLarge compares the float32 op with the float64 op on a wide
// softmax (rows split between goroutines with GOMAXPROCS >= 2), over two
// runs (the softmax buffer is reused), and the backward op run on its own
// (it recomputes the softmax) with the backward after a forward.
func TestSparseXentLarge(t *testing.T) {
	const n, c = 24, 4000
	rng := rand.New(rand.NewPCG(3, 4))
	x64 := make([]float64, n*c)
	x32 := make([]float32, n*c)
	for i := range x64 {
		x64[i] = 4 * rng.NormFloat64()
		x32[i] = float32(x64[i])
		x64[i] = float64(x32[i])
	}
	labels := make([]int, n)
	for i := range labels {
		labels[i] = rng.IntN(c) - 1 // some -1: not scored
	}
	lab := tensor.New(tensor.WithShape(n), tensor.WithBacking(labels))
	for run := 0; run < 2; run++ {
		f64 := &sparseXentOp{n: n, c: c}
		b64 := &sparseXentOp{n: n, c: c, back: true, fwd: f64}
		f32 := &sparseXentOp{n: n, c: c}
		b32 := &sparseXentOp{n: n, c: c, back: true, fwd: f32}
		for rep := 0; rep < 2; rep++ {
			l64, err := f64.Do(tensor.New(tensor.WithShape(n, c), tensor.WithBacking(x64)), lab)
			if err != nil {
				t.Fatal(err)
			}
			g64, err := b64.Do(tensor.New(tensor.WithShape(n, c), tensor.WithBacking(x64)), lab, G.NewF64(2))
			if err != nil {
				t.Fatal(err)
			}
			if run == 0 {
				l32, err := f32.Do(tensor.New(tensor.WithShape(n, c), tensor.WithBacking(x32)), lab)
				if err != nil {
					t.Fatal(err)
				}
				if d := math.Abs(float64(*l32.(*G.F32)) - float64(*l64.(*G.F64))); d > 1e-5 {
					t.Errorf("loss float32 vs float64: differ by %.2e", d)
				}
			}
			// run 1: the backward op alone, without a forward run.
			g32, err := b32.Do(tensor.New(tensor.WithShape(n, c), tensor.WithBacking(x32)), lab, G.NewF32(2))
			if err != nil {
				t.Fatal(err)
			}
			a, b := g32.Data().([]float32), g64.Data().([]float64)
			worst := 0.0
			for i := range a {
				worst = math.Max(worst, math.Abs(float64(a[i])-b[i]))
			}
			if worst > 1e-7 {
				t.Errorf("run %d rep %d: gradient float32 vs float64: max difference %.2e", run, rep, worst)
			}
			if run == 1 {
				break
			}
		}
	}
}

// tiedLoss builds Σ R ⊙ TiedLogits(h, w) (or, with mul, the same through
// G.Mul and a transpose) for h (3, 4), w (5, 4) and a constant R (3, 5).
func tiedLoss(mul bool) graphtest.BuildFunc { return tiedLossSized(mul, 3, 5, 4) }

// tiedLossSized is tiedLoss for h (n, d) and w (v, d).
func tiedLossSized(mul bool, n, v, d int) graphtest.BuildFunc {
	return func(s *graph.Scope) (*G.Node, error) {
		h, err := s.Param("h", tensor.Shape{n, d}, graph.Normal(1))
		if err != nil {
			return nil, err
		}
		w, err := s.Param("w", tensor.Shape{v, d}, graph.Normal(1))
		if err != nil {
			return nil, err
		}
		r, err := s.Const("r", tensor.Shape{n, v}, graphtest.RandValues(s, n*v))
		if err != nil {
			return nil, err
		}
		var y *G.Node
		if mul {
			y, err = G.Mul(h, G.Must(G.Transpose(w)))
		} else {
			y, err = TiedLogits(h, w)
		}
		if err != nil {
			return nil, err
		}
		return G.Sum(G.Must(G.HadamardProd(y, r)))
	}
}

func TestTiedLogits(t *testing.T) {
	worst := graphtest.CheckGrad(t, tiedLoss(false), graphtest.Options{Seed: 1})
	worst32 := graphtest.CheckGrad32(t, tiedLoss(false), graphtest.Options{Seed: 1})
	t.Logf("max relative error float64 %.2e, float32 %.2e", worst, worst32)
	for _, dt := range []tensor.Dtype{graph.Float64, graph.Float32} {
		got, gg := graphtest.Gradients(t, tiedLoss(false), dt, 2)
		want, wg := graphtest.Gradients(t, tiedLoss(true), dt, 2)
		tol := 1e-12
		if dt == graph.Float32 {
			tol = 1e-5
		}
		graphtest.AllClose(t, "loss", []float64{got}, []float64{want}, tol)
		for _, name := range []string{"h", "w"} {
			graphtest.AllClose(t, name+" gradient", gg[name], wg[name], tol)
		}
	}
	// Several panels in every product: chunkLen(1024) = 64 rows, v = 150
	// columns of wᵀ and rows of w, n = 70 rows of h.
	if chunkLen(1024) != 64 {
		t.Fatalf("chunkLen(1024) = %d, want 64", chunkLen(1024))
	}
	for _, dt := range []tensor.Dtype{graph.Float64, graph.Float32} {
		got, gg := graphtest.Gradients(t, tiedLossSized(false, 70, 150, 1024), dt, 3)
		want, wg := graphtest.Gradients(t, tiedLossSized(true, 70, 150, 1024), dt, 3)
		tol := 1e-9
		if dt == graph.Float32 {
			tol = 1e-3
		}
		graphtest.AllClose(t, "panelled loss", []float64{got}, []float64{want}, tol)
		for _, name := range []string{"h", "w"} {
			graphtest.AllClose(t, "panelled "+name+" gradient", gg[name], wg[name], tol)
		}
	}
	s, _ := graph.NewScope(graph.Float64, 1)
	h, _ := s.Param("h", tensor.Shape{3, 4}, graph.Zeros())
	w, _ := s.Param("w", tensor.Shape{5, 3}, graph.Zeros())
	if _, err := TiedLogits(h, w); err == nil || !strings.Contains(err.Error(), "want (N, D) and (V, D)") {
		t.Errorf("mismatched widths: got %v", err)
	}
	if _, err := TiedLogits(nil, w); err == nil {
		t.Error("nil h: got nil error")
	}
}

// TestTiedLogitsReuse runs a machine twice with new values: the reused
// buffers hold the second run's products.
func TestTiedLogitsReuse(t *testing.T) {
	s, _ := graph.NewScope(graph.Float32, 1)
	h, _ := s.Param("h", tensor.Shape{2, 3}, graph.Normal(1))
	w, _ := s.Param("w", tensor.Shape{4, 3}, graph.Normal(1))
	y, err := TiedLogits(h, w)
	if err != nil {
		t.Fatal(err)
	}
	loss := G.Must(G.Sum(y))
	m, err := graph.NewMachine(s, loss, graph.MachineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for run := 0; run < 2; run++ {
		hv := []float64{1, 2, 3, 4, 5, 6}
		wv := []float64{1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1}
		for i := range hv {
			hv[i] *= float64(run + 1)
		}
		if err := graph.SetValue(h, hv); err != nil {
			t.Fatal(err)
		}
		if err := graph.SetValue(w, wv); err != nil {
			t.Fatal(err)
		}
		if err := m.Run(); err != nil {
			t.Fatal(err)
		}
		got, _ := graph.Values(y)
		k := float64(run + 1)
		want := []float64{1 * k, 2 * k, 3 * k, 6 * k, 4 * k, 5 * k, 6 * k, 15 * k}
		graphtest.AllClose(t, "logits", got, want, 1e-6)
		gh, _ := graph.GradValues(h) // Σ_v w[v] per row: (2, 2, 2)
		graphtest.AllClose(t, "h gradient", gh, []float64{2, 2, 2, 2, 2, 2}, 1e-6)
		gw, _ := graph.GradValues(w) // Σ_n h[n] per row of w
		c := []float64{5 * k, 7 * k, 9 * k}
		graphtest.AllClose(t, "w gradient", gw, append(append(append(append([]float64{}, c...), c...), c...), c...), 1e-6)
	}
}

// TestSparseXentNaN: a NaN logit makes the loss NaN (the trainer's guard
// then refuses the update), in both dtypes.
func TestSparseXentNaN(t *testing.T) {
	lab := tensor.New(tensor.WithShape(2), tensor.WithBacking([]int{1, 0}))
	op32 := &sparseXentOp{n: 2, c: 3}
	l32, err := op32.Do(tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float32{0, 1, float32(math.NaN()), 1, 2, 3})), lab)
	if err != nil || !math.IsNaN(float64(*l32.(*G.F32))) {
		t.Errorf("float32: loss %v, %v; want NaN", l32, err)
	}
	op64 := &sparseXentOp{n: 2, c: 3}
	l64, err := op64.Do(tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{0, 1, math.NaN(), 1, 2, 3})), lab)
	if err != nil || !math.IsNaN(float64(*l64.(*G.F64))) {
		t.Errorf("float64: loss %v, %v; want NaN", l64, err)
	}
}

// BenchmarkTiedLogits times the tied output layer's three products at the
// language presets' sizes (small: N = 512, d' = 64; paper: N = 1024,
// d' = 512; V = 50,258), float32:
//
//	GOMAXPROCS=1 go test ./layers -run '^$' -bench TiedLogits
func BenchmarkTiedLogits(b *testing.B) {
	for _, sz := range []struct {
		name    string
		n, v, d int
	}{{"small", 512, 50258, 64}, {"paper", 1024, 50258, 512}} {
		rng := rand.New(rand.NewPCG(1, 2))
		h, w, dy := make([]float32, sz.n*sz.d), make([]float32, sz.v*sz.d), make([]float32, sz.n*sz.v)
		for _, x := range [][]float32{h, w, dy} {
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
		}
		for _, mode := range []tiedMode{tiedForward, tiedGradH, tiedGradW} {
			op := &tiedOp{n: sz.n, v: sz.v, d: sz.d, mode: mode}
			x, y := h, w
			if mode == tiedGradH {
				x, y = dy, w
			} else if mode == tiedGradW {
				x, y = dy, h
			}
			b.Run(fmt.Sprintf("%s/%v", sz.name, op), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, err := tiedDo(op, x, y); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(2*float64(sz.n)*float64(sz.v)*float64(sz.d)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// centeredBuild is Σ c ⊙ (x)² for x = LookupCentered(ids) or, with ref,
// x = Lookup(ids) − (1/V) 1ᵀ w built from Gorgonia ops.
func centeredBuild(ref bool) graphtest.BuildFunc {
	const V, D = 6, 3
	return func(s *graph.Scope) (*G.Node, error) {
		e, err := NewSparseEmbedding(s.Sub("wte"), EmbeddingConfig{Vocab: V, Dim: D, WInit: graph.Normal(1)})
		if err != nil {
			return nil, err
		}
		ids, err := NewIDs(s, "ids", 2, 3)
		if err != nil {
			return nil, err
		}
		if err := e.SetIDs(ids, sparseIDs); err != nil {
			return nil, err
		}
		var x *G.Node
		if ref {
			mean, err := s.Const("mean_row", tensor.Shape{1, V}, []float64{1.0 / V, 1.0 / V, 1.0 / V, 1.0 / V, 1.0 / V, 1.0 / V})
			if err != nil {
				return nil, err
			}
			wbar := G.Must(graph.Reshape(G.Must(G.Mul(mean, e.Weight())), tensor.Shape{1, 1, D}))
			x = G.Must(G.BroadcastSub(G.Must(e.Lookup(ids)), wbar, nil, []byte{0, 1}))
		} else if x, err = e.LookupCentered(ids); err != nil {
			return nil, err
		}
		c, err := s.Const("c", tensor.Shape{2, 3, D}, graphtest.RandValues(s, 2*3*D))
		if err != nil {
			return nil, err
		}
		return G.Sum(G.Must(G.HadamardProd(G.Must(G.Square(x)), c)))
	}
}

func TestLookupCentered(t *testing.T) {
	worst := graphtest.CheckGrad(t, centeredBuild(false), graphtest.Options{Seed: 1})
	worst32 := graphtest.CheckGrad32(t, centeredBuild(false), graphtest.Options{Seed: 1})
	t.Logf("max relative error float64 %.2e, float32 %.2e", worst, worst32)
	for _, dt := range []tensor.Dtype{graph.Float64, graph.Float32} {
		got, gg := graphtest.Gradients(t, centeredBuild(false), dt, 2)
		want, wg := graphtest.Gradients(t, centeredBuild(true), dt, 2)
		tol := 1e-12
		if dt == graph.Float32 {
			tol = 1e-5
		}
		graphtest.AllClose(t, "value", []float64{got}, []float64{want}, tol)
		graphtest.AllClose(t, "gradient", gg["wte/w"], wg["wte/w"], tol)
	}
}
