package graph

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/ops"
)

// accumNet is a tied table w (V, D) used by a lookup and by the output
// layer, as in the language models: loss = Σ (tanh(w[ids]) wᵀ) ⊙ c.
type accumNet struct {
	m   *Machine
	ids *G.Node
	c   *G.Node
}

func newAccumNet(t *testing.T, dt tensor.Dtype, v, d, n int, center, reuse bool) *accumNet {
	t.Helper()
	s, err := NewScope(dt, 5)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Param("w", tensor.Shape{v, d}, Normal(1))
	if err != nil {
		t.Fatal(err)
	}
	g := s.Graph()
	ids := G.NewTensor(g, tensor.Int, 1, G.WithShape(n), G.WithName("ids"))
	c := G.NewMatrix(g, dt, G.WithShape(n, v), G.WithName("c"))
	var emb *G.Node
	if center {
		emb, err = ops.GatherCentered(w, ids)
	} else {
		emb, err = ops.Gather(w, ids)
	}
	if err != nil {
		t.Fatal(err)
	}
	logits, err := ops.TiedLogits(G.Must(G.Tanh(emb)), w)
	if err != nil {
		t.Fatal(err)
	}
	loss := G.Must(G.Sum(G.Must(G.HadamardProd(logits, c))))
	m, err := NewMachine(s, loss, MachineOptions{ReuseGrads: reuse})
	if err != nil {
		t.Fatal(err)
	}
	return &accumNet{m: m, ids: ids, c: c}
}

// run feeds ids and c and returns the bits of w's gradient (or the error).
func (a *accumNet) run(t *testing.T, dt tensor.Dtype, ids []int, c []float64) ([]uint64, error) {
	t.Helper()
	if err := G.Let(a.ids, tensor.New(tensor.WithShape(len(ids)), tensor.WithBacking(append([]int(nil), ids...)))); err != nil {
		t.Fatal(err)
	}
	cv, err := NewTensor(dt, a.c.Shape(), c)
	if err != nil {
		t.Fatal(err)
	}
	if err := G.Let(a.c, cv); err != nil {
		t.Fatal(err)
	}
	if err := a.m.Run(); err != nil {
		return nil, err
	}
	var bits []uint64
	switch gd := a.m.Grads()[0].Value().Data().(type) {
	case []float64:
		for _, x := range gd {
			bits = append(bits, math.Float64bits(x))
		}
	case []float32:
		for _, x := range gd {
			bits = append(bits, uint64(math.Float32bits(x)))
		}
	default:
		t.Fatalf("gradient data %T", gd)
	}
	return bits, nil
}

// TestAccumScatterBits checks the host executor's in-place sum of a tied
// table's gradients (the lookup's ops.ScatterOp added into the output
// layer's dYᵀh by AddTo) against the same executor with the fusion off,
// bit for bit, float64 and float32, plain and centred lookups: ids
// repeated, most rows absent, the ids changing from run to run, the
// logits' gradient with zeros (signed zeros in dYᵀh's chains), and with
// gradients read fresh (ReuseGrads off: the scatter then runs at the
// addition); and that an id outside the table fails the run with the same
// error either way.
func TestAccumScatterBits(t *testing.T) {
	const v, d, n = 61, 19, 24
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, center := range []bool{false, true} {
			fused, plain := newAccumNet(t, dt, v, d, n, center, true), newAccumNet(t, dt, v, d, n, center, true)
			// Fresh gradients: the addition may not consume dYᵀh, so the
			// scatter runs at the addition and the sum is a new tensor.
			fresh := newAccumNet(t, dt, v, d, n, center, false)
			x := fused.m.host
			planned := 0
			for i := range x.steps {
				if x.steps[i].accum > 0 {
					planned++
				}
			}
			if planned != 1 {
				t.Fatalf("%v center %v: %d additions fused, want 1", dt, center, planned)
			}
			for i := range plain.m.host.steps {
				plain.m.host.steps[i].accum, plain.m.host.steps[i].deferred = 0, false
			}
			rng := rand.New(rand.NewPCG(3, uint64(dt.Size())))
			for run := 0; run < 4; run++ {
				ids := make([]int, n)
				for i := range ids {
					ids[i] = rng.IntN(6) // repeated
					if i%3 == 0 {
						ids[i] = rng.IntN(v)
					}
				}
				c := make([]float64, n*v)
				for i := range c {
					if rng.IntN(4) > 0 {
						c[i] = rng.NormFloat64()
					}
				}
				for j := 0; j < n; j++ { // whole columns of dY zero
					c[j*v+7], c[j*v+v-1] = 0, math.Copysign(0, -1)
				}
				want, err := plain.run(t, dt, ids, c)
				if err != nil {
					t.Fatal(err)
				}
				for k, net := range []*accumNet{fused, fresh} {
					got, err := net.run(t, dt, ids, c)
					if err != nil {
						t.Fatal(err)
					}
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("%v center %v run %d (net %d): gradient element %d (row %d) bits %x, unfused %x", dt, center, run, k, i, i/d, got[i], want[i])
						}
					}
				}
				for i := range x.steps {
					if st := &x.steps[i]; st.deferred && x.vals[st.pos] != nil {
						t.Fatalf("%v center %v: the deferred scatter ran on its own", dt, center)
					}
				}
			}
			for _, bad := range []int{-1, v} {
				ids := make([]int, n)
				ids[n/2] = bad
				c := make([]float64, n*v)
				_, errP := plain.run(t, dt, ids, c)
				_, errF := fused.run(t, dt, ids, c)
				if errP == nil || errF == nil || errF.Error() != errP.Error() || !strings.Contains(errF.Error(), "outside") {
					t.Fatalf("%v center %v: id %d: errors %v, unfused %v", dt, center, bad, errF, errP)
				}
			}
		}
	}
}

// TestAccumPlanRules checks that a traced program plans no fusion.
func TestAccumPlanRules(t *testing.T) {
	s, err := NewScope(tensor.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Param("w", tensor.Shape{9, 4}, Normal(1))
	if err != nil {
		t.Fatal(err)
	}
	g := s.Graph()
	ids := G.NewTensor(g, tensor.Int, 1, G.WithShape(3), G.WithName("ids"))
	emb := G.Must(ops.Gather(w, ids))
	logits := G.Must(ops.TiedLogits(emb, w))
	loss := G.Must(G.Sum(G.Must(G.Square(logits))))
	m, err := NewMachine(s, loss, MachineOptions{ReuseGrads: true, Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	if m.host != nil {
		t.Fatal("a traced machine runs on the host executor")
	}
	// A host executor on a traced program plans nothing.
	p, err := m.program(g, MachineOptions{Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	x, err := newHostExec(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range x.steps {
		if st.accum != 0 || st.deferred {
			t.Fatalf("traced program: node %q planned for the fusion", st.n.Name())
		}
	}
}

// BenchmarkAccumScatter times the sum of a tied table's two gradients at
// the language models' paper preset (V = 50,258, D = 512, 1,024 positions)
// and small one (D = 64, 512 positions), float32, given dYᵀh: unfused (the scatter's (V, D) buffer filled and its
// rows added, then the elementwise addition into dYᵀh's buffer) and fused
// (the scatter's AddTo into dYᵀh's buffer), plain and centred (the GD
// model's lookup).
//
//	GOMAXPROCS=1 go test ./graph -run '^$' -bench AccumScatter -benchtime 20x
func BenchmarkAccumScatter(b *testing.B) {
	for _, sz := range []struct {
		name    string
		v, d, n int
	}{{"paper", 50258, 512, 1024}, {"small", 50258, 64, 512}} {
		for _, center := range []bool{false, true} {
			benchAccumScatter(b, sz.name, sz.v, sz.d, sz.n, center)
		}
	}
}

func benchAccumScatter(b *testing.B, name string, v, d, n int, center bool) {
	{
		g := G.NewGraph()
		w := G.NewMatrix(g, tensor.Float32, G.WithShape(v, d), G.WithName("w"))
		ids := G.NewTensor(g, tensor.Int, 1, G.WithShape(n), G.WithName("ids"))
		var emb *G.Node
		if center {
			emb = G.Must(ops.GatherCentered(w, ids))
		} else {
			emb = G.Must(ops.Gather(w, ids))
		}
		grads, err := emb.Op().(G.SDOp).SymDiff(G.Nodes{w, ids}, emb, emb)
		if err != nil {
			b.Fatal(err)
		}
		sc := grads[0].Op().(AccumOp)
		rng := rand.New(rand.NewPCG(1, 2))
		idv := make([]int, n)
		for i := range idv {
			idv[i] = rng.IntN(v)
		}
		gv := make([]float32, n*d)
		for i := range gv {
			gv[i] = float32(rng.NormFloat64())
		}
		it := tensor.New(tensor.WithShape(n), tensor.WithBacking(idv))
		gt := tensor.New(tensor.WithShape(n, d), tensor.WithBacking(gv))
		dst := tensor.New(tensor.WithShape(v, d), tensor.WithBacking(make([]float32, v*d)))
		b.Run(fmt.Sprintf("%s/center=%v/unfused", name, center), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				s, err := sc.Do(it, gt)
				if err != nil {
					b.Fatal(err)
				}
				if _, ok := addDense(dst, dst, s); !ok {
					b.Fatal("addDense declined")
				}
			}
		})
		b.Run(fmt.Sprintf("%s/center=%v/fused", name, center), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if ok, err := sc.AddTo(dst, true, it, gt); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
	}
}
