package ops_test

import (
	"fmt"
	"math"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/ops"
)

// TestRegroupedHeadGradDirty checks that the regrouped query head's dz op
// writes every element of its output: DoInto a buffer full of garbage
// gives what Do gives, float64 and float32.
func TestRegroupedHeadGradDirty(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			const B, T, DIn, DK, DV, DOut = 3, 7, 4, 3, 2, 5
			s, err := graph.NewScope(dt, 1)
			if err != nil {
				t.Fatal(err)
			}
			shapes := [][]int{{B, T, DIn}, {DIn, DK}, {DIn, DK}, {DIn, DV}, {DV, DOut}}
			var nodes G.Nodes
			var vals []G.Value
			for i, sh := range shapes {
				n, err := s.Input(fmt.Sprintf("in%d", i), tensor.Shape(sh))
				if err != nil {
					t.Fatal(err)
				}
				size := 1
				for _, d := range sh {
					size *= d
				}
				v := make([]float64, size)
				for j := range v {
					v[j] = float64((j*7+i*3)%11)/11 - 0.4
				}
				nodes, vals = append(nodes, n), append(vals, tensorOf(dt, sh, v))
			}
			out, err := ops.AttentionHeadQueryRegrouped(ops.KindSoftmax, nil, 0.9, nodes[0], nodes[1], nodes[2], nodes[3], nodes[4])
			if err != nil {
				t.Fatal(err)
			}
			head := out.Op().(*ops.HeadOp)
			if !head.Regrouped() {
				t.Fatal("AttentionHeadQueryRegrouped's op is not regrouped")
			}
			ov, err := head.Do(vals...)
			if err != nil {
				t.Fatal(err)
			}
			grads, err := head.SymDiff(nodes, out, out)
			if err != nil {
				t.Fatal(err)
			}
			dv := make([]float64, B*DOut)
			for j := range dv {
				dv[j] = float64(j%5) - 2
			}
			args := append(append([]G.Value{}, vals...), ov, tensorOf(dt, []int{B, 1, DOut}, dv))
			gop := grads[0].Op().(interface {
				Do(...G.Value) (G.Value, error)
				DoInto(G.Value, ...G.Value) (G.Value, error)
			})
			want, err := gop.Do(args...)
			if err != nil {
				t.Fatal(err)
			}
			junk := make([]float64, B*T*DIn)
			for j := range junk {
				junk[j] = 1e30
			}
			got, err := gop.DoInto(tensorOf(dt, []int{B, T, DIn}, junk), args...)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got.Data()) != fmt.Sprint(want.Data()) {
				t.Fatalf("dz into a dirty buffer = %v, want %v", got.Data(), want.Data())
			}
		})
	}
}

// TestHeadGradReuse checks that the full head's dz op gives the same bits
// on a second run, whose scratch holds the first run's values, as a fresh
// op: every element of the scratch it reads is written first (context and
// all keys, float64 and float32).
func TestHeadGradReuse(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, ctx := range []bool{true, false} {
			t.Run(fmt.Sprintf("%v/ctx=%v", dt, ctx), func(t *testing.T) {
				const B, T, DIn, DK, DV, DOut = 3, 7, 4, 3, 2, 5
				build := func() (func(seed int) []float64, error) {
					s, err := graph.NewScope(dt, 1)
					if err != nil {
						return nil, err
					}
					shapes := [][]int{{B, T, DIn}, {DIn, DK}, {DIn, DK}, {DIn, DV}, {DV, DOut}}
					var nodes G.Nodes
					for i, sh := range shapes {
						n, err := s.Input(fmt.Sprintf("in%d", i), tensor.Shape(sh))
						if err != nil {
							return nil, err
						}
						nodes = append(nodes, n)
					}
					out, err := ops.AttentionHead(ops.KindSoftmax, nil, 0.9, ctx, nodes[0], nodes[1], nodes[2], nodes[3], nodes[4])
					if err != nil {
						return nil, err
					}
					head := out.Op().(*ops.HeadOp)
					grads, err := head.SymDiff(nodes, out, out)
					if err != nil {
						return nil, err
					}
					gop := grads[0].Op().(interface {
						Do(...G.Value) (G.Value, error)
					})
					return func(seed int) []float64 {
						var vals []G.Value
						for i, sh := range shapes {
							size := 1
							for _, d := range sh {
								size *= d
							}
							v := make([]float64, size)
							for j := range v {
								v[j] = float64((j*7+i*3+seed*5)%11)/11 - 0.4
							}
							vals = append(vals, tensorOf(dt, sh, v))
						}
						ov, err := head.Do(vals...)
						if err != nil {
							t.Fatal(err)
						}
						dv := make([]float64, B*T*DOut)
						for j := range dv {
							dv[j] = float64((j+seed)%5) - 2
						}
						g, err := gop.Do(append(append([]G.Value{}, vals...), ov, tensorOf(dt, []int{B, T, DOut}, dv))...)
						if err != nil {
							t.Fatal(err)
						}
						var r []float64
						switch d := g.Data().(type) {
						case []float64:
							r = append(r, d...)
						case []float32:
							for _, x := range d {
								r = append(r, float64(x))
							}
						}
						return r
					}, nil
				}
				reused, err := build()
				if err != nil {
					t.Fatal(err)
				}
				fresh, err := build()
				if err != nil {
					t.Fatal(err)
				}
				reused(1)
				got, want := reused(2), fresh(2)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("dz on a second run = %v, a fresh op's %v", got, want)
				}
			})
		}
	}
}

// TestFullHeadDirty checks that the full head writes every element of its
// output: DoInto a buffer full of garbage (NaN) gives what Do gives,
// context keys or all keys, float64 and float32.
func TestFullHeadDirty(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, ctx := range []bool{true, false} {
			const B, T, DIn, DK, DV, DOut = 3, 7, 4, 3, 2, 5
			s, err := graph.NewScope(dt, 1)
			if err != nil {
				t.Fatal(err)
			}
			shapes := [][]int{{B, T, DIn}, {DIn, DK}, {DIn, DK}, {DIn, DV}, {DV, DOut}}
			var nodes G.Nodes
			var vals []G.Value
			for i, sh := range shapes {
				n, err := s.Input(fmt.Sprintf("in%d", i), tensor.Shape(sh))
				if err != nil {
					t.Fatal(err)
				}
				size := 1
				for _, d := range sh {
					size *= d
				}
				v := make([]float64, size)
				for j := range v {
					v[j] = float64((j*7+i*3)%11)/11 - 0.4
				}
				nodes, vals = append(nodes, n), append(vals, tensorOf(dt, sh, v))
			}
			out, err := ops.AttentionHead(ops.KindSoftmax, nil, 0.9, ctx, nodes[0], nodes[1], nodes[2], nodes[3], nodes[4])
			if err != nil {
				t.Fatal(err)
			}
			head := out.Op().(*ops.HeadOp)
			want, err := head.Do(vals...)
			if err != nil {
				t.Fatal(err)
			}
			junk := make([]float64, B*T*DOut)
			for j := range junk {
				junk[j] = math.NaN()
			}
			got, err := head.DoInto(tensorOf(dt, []int{B, T, DOut}, junk), vals...)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got.Data()) != fmt.Sprint(want.Data()) {
				t.Fatalf("%v ctx %v: output into a dirty buffer = %v, want %v", dt, ctx, got.Data(), want.Data())
			}
		}
	}
}
