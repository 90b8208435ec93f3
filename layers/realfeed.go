package layers

import (
	"fmt"
	"math"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// RealInputs creates in s the inputs of a real-valued model (Appendix G)
// for minibatches of B contexts of T positions: X (B, T, d), Y (B, T, d_y)
// and Target (B, d_y), which [FeedReal] fills, and F0, the constant zero
// (B, T, d_y) that starts f; all four are marked as data.
func RealInputs(s *graph.Scope, B, T, d, dy int) (X, Y, Target, F0 *G.Node, err error) {
	if X, err = s.Input("x", tensor.Shape{B, T, d}); err != nil {
		return nil, nil, nil, nil, err
	}
	if Y, err = s.Input("y", tensor.Shape{B, T, dy}); err != nil {
		return nil, nil, nil, nil, err
	}
	if Target, err = s.Input("target", tensor.Shape{B, dy}); err != nil {
		return nil, nil, nil, nil, err
	}
	if F0, err = s.Const("f0", tensor.Shape{B, T, dy}, make([]float64, B*T*dy)); err != nil {
		return nil, nil, nil, nil, err
	}
	ops.MarkData(X, Y, Target, F0)
	return X, Y, Target, F0, nil
}

// FeedReal copies one minibatch of a real-valued model into its inputs X
// (B, T, d), Y (B, T, d_y) and Target (B, d_y), for the models of packages
// gd and tf whose tokens carry real-valued y (Appendix G). x and y must
// already have B*T*d and B*T*d_y values; the query's target is the last row
// of each context of y (NaN where unknown: the target is then 0), and Y
// gets the context rows with the query's row 0, so the model never sees
// the query's y. A NaN or ±Inf in x or in a context y, or ±Inf in a query
// target, is an error "<who>: ..." naming the element.
func FeedReal(who string, X, Y, Target *G.Node, x, y []float64, B, T, d, dy int) error {
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s: x[%d] (context %d, position %d) is %v", who, i, i/(T*d), (i/d)%T, v)
		}
	}
	ctx := make([]float64, len(y))
	target := make([]float64, B*dy)
	for i, v := range y {
		b, t := i/(T*dy), (i/dy)%T
		if t == T-1 {
			if math.IsInf(v, 0) {
				return fmt.Errorf("%s: y[%d] (query of context %d) is %v", who, i, b, v)
			}
			if !math.IsNaN(v) {
				target[b*dy+i%dy] = v
			}
			continue
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s: y[%d] (context %d, position %d) is %v", who, i, b, t, v)
		}
		ctx[i] = v
	}
	if err := graph.SetValue(X, x); err != nil {
		return err
	}
	if err := graph.SetValue(Y, ctx); err != nil {
		return err
	}
	return graph.SetValue(Target, target)
}
