package tf

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/losses"
	"github.com/gdattn/gdattn/train"
)

// randomBatch draws x ~ U(-1, 1) and labels uniformly, seeded.
func randomBatch(seed uint64, B, T, d, C int) ([]float64, []int) {
	rng := rand.New(rand.NewPCG(seed, 7))
	x := make([]float64, B*T*d)
	for i := range x {
		x[i] = 2*rng.Float64() - 1
	}
	y := make([]int, B*T)
	for i := range y {
		y[i] = rng.IntN(C)
	}
	return x, y
}

func TestConfigErrors(t *testing.T) {
	ok := Config{D: 3, DPrime: 2, C: 4, N: 5}
	cases := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"D", func(c *Config) { c.D = 0 }, "D = 0"},
		{"DPrime", func(c *Config) { c.DPrime = -1 }, "DPrime = -1"},
		{"C", func(c *Config) { c.C = 1 }, "C = 1"},
		{"N", func(c *Config) { c.N = 0 }, "N = 0"},
		{"Layers", func(c *Config) { c.Layers = -2 }, "Layers = -2"},
		{"Heads", func(c *Config) { c.Heads = -1 }, "Heads = -1"},
		{"Kernel", func(c *Config) { c.Kernel = layers.Builtin("cosine", 1) }, `Kernel: layers: unknown kernel "cosine"`},
		{"Gamma NaN", func(c *Config) { c.Kernel = layers.Softmax(math.NaN()) }, "Gamma = NaN"},
		{"Gamma negative", func(c *Config) { c.Kernel = layers.Softmax(-1) }, "Gamma = -1"},
		{"DK", func(c *Config) { c.DK = -4 }, "DK = -4"},
		{"HeadKernels", func(c *Config) { c.HeadKernels = []layers.KernelSpec{nil, layers.RBF(-2)}; c.Heads = 2 }, "HeadKernels[1]: layers: kernel \"rbf\": Gamma = -2"},
		{"HeadKernels count", func(c *Config) { c.HeadKernels = []layers.KernelSpec{nil, nil}; c.Heads = 1 }, "HeadKernels has 2 kernels for Heads = 1"},
		{"Init DK", func(c *Config) { c.Init = testInit(1, 1, 7, 2, false); c.DK = 2 }, "Init.Blocks[0].Heads[0].WQ: is 7x7 and does not fit in 2 columns"},
		{"Init Heads", func(c *Config) { c.Init = testInit(1, 2, 9, 2, true); c.Cross = true; c.Heads = 1 }, "Init.Blocks[0] has 2 heads for Heads = 1"},
		{"Init Layers", func(c *Config) { c.Init = testInit(1, 1, 7, 2, false); c.Layers = 2 }, "Init has 1 blocks for Layers = 2"},
		{"Init rows", func(c *Config) { c.Init = testInit(1, 1, 9, 2, false) }, "Init.Blocks[0].Heads[0].WQ: is 9x9, want 7 rows"},
		{"Init Cross missing", func(c *Config) { c.Init = testInit(1, 1, 9, 2, false); c.Cross = true }, "Init.Blocks[0].Cross is nil, and Cross is set"},
		{"Init Cross extra", func(c *Config) { c.Init = testInit(1, 1, 7, 2, true) }, "Init.Blocks[0].Cross is set, and Cross is not"},
		{"Init data", func(c *Config) { c.Init = testInit(1, 1, 7, 2, false); c.Init.Blocks[0].Heads[0].P.Data = nil }, "Blocks[0].Heads[0].P is 7x7 with 0 values"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.mod(&cfg)
			s, _ := graph.NewScope(graph.Float64, 1)
			_, err := NewModel(s, cfg, 2)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "tf: config: ") {
				t.Errorf("NewModel error = %v, want one starting \"tf: config: \" containing %q", err, tc.want)
			}
		})
	}
	s, _ := graph.NewScope(graph.Float64, 1)
	if _, err := NewModel(s, ok, 0); err == nil || !strings.Contains(err.Error(), "batch = 0") {
		t.Errorf("batch 0: error = %v, want one naming batch", err)
	}
}

func TestConfigDefaults(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string // Layers Heads Kernel Gamma DK TokenDim
	}{
		{"plain", Config{D: 3, DPrime: 2, C: 4, N: 5}, "1 1 softmax 1 7 7"},
		{"rbf cross", Config{D: 3, DPrime: 2, C: 4, N: 5, Kernel: layers.RBF(1), Cross: true}, "1 1 rbf 1 9 9"},
		{"init cross", Config{D: 3, DPrime: 2, C: 4, N: 5, Cross: true, Init: testInit(3, 2, 9, 2, true)}, "3 2 softmax 1 9 9"},
		{"head kernels", Config{D: 3, DPrime: 2, C: 4, N: 5, HeadKernels: []layers.KernelSpec{nil, nil, layers.Linear()}}, "1 3 softmax 1 7 7"},
	}
	for _, c := range cases {
		got, err := c.cfg.Validate()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		s := fmt.Sprintf("%d %d %s %v %d %d", got.Layers, got.Heads, got.Kernel.Name(), got.Kernel.(layers.BuiltinSpec).Gamma(), got.DK, got.TokenDim())
		if s != c.want {
			t.Errorf("%s: defaults %q, want %q", c.name, s, c.want)
		}
		if got.WInit == nil || got.WeInit == nil {
			t.Errorf("%s: WInit or WeInit left nil", c.name)
		}
	}
}

// testInit is a Construction of the given shape for tokens of width D:
// blocks blocks of heads heads, every matrix the identity (a D×D W_Q thus
// needs DK >= D), with a cross-attention layer if cross.
func testInit(blocks, heads, D, dp int, cross bool) *layers.Construction {
	eye := func(r, c int) layers.Matrix {
		m, err := layers.NewMatrix(r, c)
		if err != nil {
			panic(err)
		}
		for i := 0; i < min(r, c); i++ {
			m.Set(i, i, 1)
		}
		return m
	}
	c := &layers.Construction{}
	for l := 0; l < blocks; l++ {
		var b layers.BlockMatrices
		for h := 0; h < heads; h++ {
			b.Heads = append(b.Heads, layers.HeadMatrices{WQ: eye(D, D), WK: eye(D, D), WV: eye(D, D), P: eye(D, D)})
		}
		if cross {
			b.Cross = &layers.CrossMatrices{WQ: eye(D, dp), WK: eye(dp, dp), WV: eye(dp, dp), P: eye(dp, D)}
		}
		c.Blocks = append(c.Blocks, b)
	}
	return c
}

// TestFeedErrors: Feed passes the encoder's errors through unchanged.
func TestFeedErrors(t *testing.T) {
	const B, N, d, C = 2, 3, 2, 4
	T := N + 1
	s, _ := graph.NewScope(graph.Float64, 1)
	m, err := NewModel(s, Config{D: d, DPrime: 2, C: C, N: N}, B)
	if err != nil {
		t.Fatal(err)
	}
	x, y := randomBatch(1, B, T, d, C)
	if err := m.Feed(x, y); err != nil {
		t.Fatalf("good batch: %v", err)
	}
	badX := append([]float64(nil), x...)
	badX[5] = math.NaN()
	badY := append([]int(nil), y...)
	badY[1] = C
	cases := []struct {
		name string
		x    []float64
		y    []int
		want string
	}{
		{"short x", x[1:], y, "x has"},
		{"short y", x, y[1:], "y has"},
		{"NaN", badX, y, "x[5]"},
		{"label", x, badY, "y[1]"},
	}
	for _, c := range cases {
		err := m.Feed(c.x, c.y)
		want := m.Encoder().Feed(c.x, c.y)
		if err == nil || want == nil || err.Error() != want.Error() || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Feed error %v, want the encoder's %v (containing %q)", c.name, err, want, c.want)
		}
	}
}

func TestParamNamesAndCounts(t *testing.T) {
	const d, dp, C, N = 2, 3, 4, 5
	s, _ := graph.NewScope(graph.Float64, 1)
	m, err := NewModel(s.Sub("tf"), Config{D: d, DPrime: dp, C: C, N: N, Layers: 2, Heads: 2, Cross: true, Kernel: layers.RBF(1), ZeroColumn: true}, 1)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range m.Params() {
		names = append(names, p.Name())
	}
	var want []string
	want = append(want, "tf/we")
	for l := 0; l < 2; l++ {
		for h := 0; h < 2; h++ {
			for _, n := range []string{"log_gamma", "wq", "wk", "wv", "wo"} {
				want = append(want, fmt.Sprintf("tf/layer%d/head%d/%s", l, h, n))
			}
		}
		for _, n := range []string{"wq", "wk", "wv", "wo"} {
			want = append(want, fmt.Sprintf("tf/layer%d/cross/%s", l, n))
		}
	}
	want = append(want, "tf/readout/r")
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("params\n%v\nwant\n%v", names, want)
	}
	// D = d + 3d' = 11; per layer 2 heads × (1 + 4·11²) + cross (11·3 + 9 + 9 + 3·11).
	D := d + 3*dp
	att := 2 * (2*(1+4*D*D) + (D*dp + 2*dp*dp + dp*D))
	other := dp*(C-1) + D*dp
	if got := m.NumParams(); got.Attention != att || got.Other != other || got.Total() != att+other {
		t.Errorf("NumParams = %+v, want attention %d, other %d", got, att, other)
	}
	if got := len(m.Blocks[1].Params()); got != 14 {
		t.Errorf("block 1 has %d params, want 14", got)
	}
}

// TestTrainSmoke trains a 1-layer softmax TF with Adam on the synthetic
// task (small sizes) and checks that the held-out loss falls.
func TestTrainSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("training test")
	}
	const B, steps = 32, 150
	tc := data.SyntheticConfig{C: 6, DPrime: 3, D: 2, N: 10, Active: 2}
	task, err := data.NewSynthetic(tc, 1)
	if err != nil {
		t.Fatal(err)
	}
	test, err := task.Sample(B, rand.New(rand.NewPCG(2, 2)))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := graph.NewScope(graph.Float64, 1)
	m, err := NewModel(s, Config{D: tc.D, DPrime: tc.DPrime, C: tc.C, N: tc.N}, B)
	if err != nil {
		t.Fatal(err)
	}
	loss, err := losses.CrossEntropy(m.Logits, m.Target)
	if err != nil {
		t.Fatal(err)
	}
	vm, err := graph.NewMachine(s, loss, graph.MachineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	tr, err := train.NewTrainer(vm, train.Config{LR: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	testLoss := func() float64 {
		if err := m.Feed(test.X, test.Y); err != nil {
			t.Fatal(err)
		}
		if err := vm.Run(); err != nil {
			t.Fatal(err)
		}
		l, err := graph.Scalar(loss)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	before := testLoss()
	rng := rand.New(rand.NewPCG(3, 3))
	for i := 0; i < steps; i++ {
		b, err := task.Sample(B, rng)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Feed(b.X, b.Y); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Step(); err != nil {
			t.Fatal(err)
		}
	}
	after := testLoss()
	a, err := Analyze(m)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("held-out loss %.4f -> %.4f after %d steps; diagonality Q %.3f ED %.3f", before, after, steps, a.QDiagonality, a.EDDiagonality)
	if !(after < before-0.1) {
		t.Errorf("held-out loss %.4f -> %.4f, want a decrease of at least 0.1", before, after)
	}
}
