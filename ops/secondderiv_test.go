package ops

import (
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
)

// TestGradientOpsHaveNoGradient: differentiating a gradient op of the
// fused layer norm is an error naming it, not a silent zero.
func TestGradientOpsHaveNoGradient(t *testing.T) {
	fwd := &LayerNormOp{eps: 1e-5, bias: true, rank: 2}
	for _, op := range []G.SDOp{&LayerNormGradOp{fwd: fwd}, &LayerNormMeanGradOp{fwd: fwd}, &LayerNormParamGradOp{fwd: fwd}, &LayerNormParamGradOp{fwd: fwd, bias: true}, &ScatterColsOp{d: 2, v: 3, r: 4}} {
		if _, err := op.SymDiff(nil, nil, nil); err == nil || !strings.Contains(err.Error(), "second derivatives are unsupported") {
			t.Errorf("%T: SymDiff error %v, want one saying second derivatives are unsupported", op, err)
		}
	}
}
