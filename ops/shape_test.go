package ops_test

import (
	"fmt"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/ops"
)

// TestSliceValues checks Slice's op and its gradient op element by element
// against index arithmetic, on every axis of a rank-3 tensor, for bands at
// the start, inside and at the end, float64 and float32, through Do and
// through DoInto into a buffer full of garbage (the backward op must zero
// what lies outside the band).
func TestSliceValues(t *testing.T) {
	sh := []int{3, 5, 4}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for axis := range sh {
			for _, band := range [][2]int{{0, 1}, {1, sh[axis] - 1}, {sh[axis] - 1, sh[axis]}, {0, sh[axis]}} {
				lo, hi := band[0], band[1]
				if lo >= hi {
					continue
				}
				t.Run(fmt.Sprintf("%v/axis=%d/%d:%d", dt, axis, lo, hi), func(t *testing.T) {
					s, err := graph.NewScope(dt, 1)
					if err != nil {
						t.Fatal(err)
					}
					x, err := s.Input("x", tensor.Shape(sh))
					if err != nil {
						t.Fatal(err)
					}
					y, err := ops.Slice(x, axis, lo, hi)
					if err != nil {
						t.Fatal(err)
					}
					fwd := y.Op().(*ops.SliceOp)
					grads, err := fwd.SymDiff(G.Nodes{x}, y, y)
					if err != nil {
						t.Fatal(err)
					}
					back := grads[0].Op().(*ops.SliceOp)
					n := sh[0] * sh[1] * sh[2]
					xv := make([]float64, n)
					for i := range xv {
						xv[i] = float64(i + 1)
					}
					part := hi - lo
					ysh := append([]int(nil), sh...)
					ysh[axis] = part
					// want: y[i,j,k] = x at index (i,j,k) with the axis shifted by lo.
					var want []float64
					for i := 0; i < ysh[0]; i++ {
						for j := 0; j < ysh[1]; j++ {
							for k := 0; k < ysh[2]; k++ {
								idx := []int{i, j, k}
								idx[axis] += lo
								want = append(want, xv[(idx[0]*sh[1]+idx[1])*sh[2]+idx[2]])
							}
						}
					}
					for _, into := range []bool{false, true} {
						got, err := runOp(fwd, into, dt, ysh, tensorOf(dt, sh, xv))
						if err != nil {
							t.Fatal(err)
						}
						if fmt.Sprint(got) != fmt.Sprint(want) {
							t.Fatalf("slice (DoInto %v) = %v, want %v", into, got, want)
						}
						// Backward: the band scattered into zeros.
						gwant := make([]float64, n)
						for i := 0; i < ysh[0]; i++ {
							for j := 0; j < ysh[1]; j++ {
								for k := 0; k < ysh[2]; k++ {
									idx := []int{i, j, k}
									idx[axis] += lo
									gwant[(idx[0]*sh[1]+idx[1])*sh[2]+idx[2]] = want[(i*ysh[1]+j)*ysh[2]+k]
								}
							}
						}
						gback, err := runOp(back, into, dt, sh, tensorOf(dt, ysh, want))
						if err != nil {
							t.Fatal(err)
						}
						if fmt.Sprint(gback) != fmt.Sprint(gwant) {
							t.Fatalf("slice gradient (DoInto %v) = %v, want %v", into, gback, gwant)
						}
					}
				})
			}
		}
	}
}

// tensorOf is a dense tensor of dtype dt and shape sh holding v.
func tensorOf(dt tensor.Dtype, sh []int, v []float64) *tensor.Dense {
	if dt == tensor.Float32 {
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		return tensor.New(tensor.WithShape(sh...), tensor.WithBacking(f))
	}
	return tensor.New(tensor.WithShape(sh...), tensor.WithBacking(append([]float64(nil), v...)))
}

// runOp applies op to in with Do, or with DoInto into a buffer of shape out
// filled with garbage (-7), and returns the result as float64s.
func runOp(op interface {
	Do(...G.Value) (G.Value, error)
	DoInto(G.Value, ...G.Value) (G.Value, error)
}, into bool, dt tensor.Dtype, out []int, in *tensor.Dense) ([]float64, error) {
	var v G.Value
	var err error
	if into {
		n := 1
		for _, d := range out {
			n *= d
		}
		junk := make([]float64, n)
		for i := range junk {
			junk[i] = -7
		}
		v, err = op.DoInto(tensorOf(dt, out, junk), in)
	} else {
		v, err = op.Do(in)
	}
	if err != nil {
		return nil, err
	}
	switch d := v.Data().(type) {
	case []float64:
		return append([]float64(nil), d...), nil
	case []float32:
		r := make([]float64, len(d))
		for i, x := range d {
			r[i] = float64(x)
		}
		return r, nil
	}
	return nil, fmt.Errorf("data %T", v.Data())
}
