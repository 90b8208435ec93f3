package gd

import (
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestConstructionMatricesInGeneralHeads feeds the exported D×D matrices to
// general (unconstrained-shape) attention heads and checks that K blocks of
// them reproduce the functional-GD reference: this is the starting point an
// unconstrained model gets from the GD construction.
func TestConstructionMatricesInGeneralHeads(t *testing.T) {
	const B, N, d, dp, C, K = 3, 10, 10, 5, 25, 3
	const alpha, gamma = 2.0, 0.7
	T := N + 1
	for _, kern := range layers.KernelNames() {
		t.Run(kern, func(t *testing.T) {
			x, y := randomBatch(21, B, T, d, C)
			s, _ := graph.NewScope(graph.Float64, 3)
			m, err := NewModel(s.Sub("gd"), Config{D: d, DPrime: dp, C: C, N: N, Blocks: 1, Kernel: layers.Builtin(kern, gamma), Alpha: alpha}, B)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Feed(x, y); err != nil {
				t.Fatal(err)
			}
			bm, err := InterleavedMatrices(d, dp, N, alpha, 1)
			if err != nil {
				t.Fatal(err)
			}
			D := d + 3*dp
			cn := func(ps *graph.Scope, name string, mm Matrix) *G.Node {
				n, err := ps.Const(name, tensor.Shape{mm.Rows, mm.Cols}, mm.Data)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			z := m.Tokens[0]
			var fs []*G.Node
			for k := 0; k < K; k++ {
				bs := s.Sub("general").Sub("block" + string(rune('0'+k)))
				kf, err := layers.NewKernel(bs.Sub("kernel"), kern, layers.KernelConfig{Gamma: gamma})
				if err != nil {
					t.Fatal(err)
				}
				upd, err := layers.NewAttention(bs.Sub("update"), layers.AttentionConfig{DIn: D, Kernel: kf, Keys: layers.ContextKeys,
					WQ: cn(bs, "uq", bm.Update.WQ), WK: cn(bs, "uk", bm.Update.WK), WV: cn(bs, "uv", bm.Update.WV), P: cn(bs, "up", bm.Update.P)})
				if err != nil {
					t.Fatal(err)
				}
				er, err := layers.NewAttention(bs.Sub("erase"), layers.AttentionConfig{DIn: D, Kernel: layers.DeltaKernel(), Keys: layers.AllKeys,
					WQ: cn(bs, "eq", bm.Erase.WQ), WK: cn(bs, "ek", bm.Erase.WK), WV: cn(bs, "ev", bm.Erase.WV), P: cn(bs, "ep", bm.Erase.P)})
				if err != nil {
					t.Fatal(err)
				}
				cr, err := layers.NewCrossAttention(bs.Sub("cross"), layers.CrossAttentionConfig{DIn: D, DPrime: dp, We: m.We,
					WQ: cn(bs, "cq", bm.Cross.WQ), WK: cn(bs, "ck", bm.Cross.WK), WV: cn(bs, "cv", bm.Cross.WV), P: cn(bs, "cp", bm.Cross.P)})
				if err != nil {
					t.Fatal(err)
				}
				u := G.Must(upd.Forward(z))
				e := G.Must(er.Forward(z))
				z = G.Must(G.Add(z, G.Must(G.Add(u, e))))
				z = G.Must(G.Add(z, G.Must(cr.Forward(z))))
				fs = append(fs, G.Must(G.Slice(z, nil, nil, G.S(d+2*dp, D))))
			}
			vm := G.NewTapeMachine(s.Graph(), G.TraceExec())
			defer vm.Close()
			if err := vm.RunAll(); err != nil {
				t.Fatal(err)
			}
			we, _ := graph.Values(m.We)
			ref, err := Reference(x, y, B, T, d, we, dp, C, ReferenceConfig{Steps: K, Alpha: alpha, Kernel: kern, Gamma: gamma})
			if err != nil {
				t.Fatal(err)
			}
			for k, f := range fs {
				got, _ := graph.Values(f)
				if e := maxAbsDiff(got, ref.F[k+1]); e > 1e-10 {
					t.Errorf("block %d: max |f - f_ref| = %.3g, want <= 1e-10", k+1, e)
				}
			}
		})
	}
}

func TestOneStepMatricesInGeneralHead(t *testing.T) {
	const B, N, d, dp, C = 3, 10, 10, 5, 25
	const alpha, gamma = 2.0, 0.7
	T := N + 1
	x, y := randomBatch(22, B, T, d, C)
	s, _ := graph.NewScope(graph.Float64, 3)
	m, err := NewModel(s.Sub("gd"), Config{D: d, DPrime: dp, C: C, N: N, Form: OneStep, Kernel: layers.RBF(gamma), Alpha: alpha}, B)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Feed(x, y); err != nil {
		t.Fatal(err)
	}
	h, err := OneStepMatrices(d, dp, N, alpha)
	if err != nil {
		t.Fatal(err)
	}
	D := d + 2*dp
	cn := func(name string, mm Matrix) *G.Node {
		n, err := s.Const(name, tensor.Shape{mm.Rows, mm.Cols}, mm.Data)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	kf, _ := layers.NewKernel(s.Sub("k"), "rbf", layers.KernelConfig{Gamma: gamma})
	att, err := layers.NewAttention(s.Sub("head"), layers.AttentionConfig{DIn: D, Kernel: kf, Keys: layers.ContextKeys,
		WQ: cn("q", h.WQ), WK: cn("k", h.WK), WV: cn("v", h.WV), P: cn("p", h.P)})
	if err != nil {
		t.Fatal(err)
	}
	z := G.Must(G.Add(m.Tokens[0], G.Must(att.Forward(m.Tokens[0]))))
	f := G.Must(G.Slice(z, nil, nil, G.S(d+dp, D)))
	vm := G.NewTapeMachine(s.Graph(), G.TraceExec())
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	we, _ := graph.Values(m.We)
	ref, _ := Reference(x, y, B, T, d, we, dp, C, ReferenceConfig{Steps: 1, Alpha: alpha, Kernel: "rbf", Gamma: gamma})
	got, _ := graph.Values(f)
	if e := maxAbsDiff(got, ref.F[1]); e > 1e-10 {
		t.Errorf("max |f - f_ref| = %.3g, want <= 1e-10", e)
	}
}

func TestConstructionErrors(t *testing.T) {
	cases := []struct {
		name          string
		d, dp, n      int
		alpha, lambda float64
	}{
		{"d", 0, 5, 10, 1, 1},
		{"dPrime", 10, 0, 10, 1, 1},
		{"n", 10, 5, 0, 1, 1},
		{"alpha", 10, 5, 10, nan(), 1},
		{"lambda", 10, 5, 10, 1, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := InterleavedMatrices(tc.d, tc.dp, tc.n, tc.alpha, tc.lambda)
			if err == nil || !contains(err.Error(), tc.name) {
				t.Errorf("InterleavedMatrices error = %v, want one naming %q", err, tc.name)
			}
		})
	}
}
