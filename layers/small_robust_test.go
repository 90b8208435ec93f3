package layers

import (
	"strings"
	"testing"
)

// TestSmallRefusals: NewMatrix with a bad size does not panic (it returns
// a matrix every consumer refuses), and RBF(0) is refused like "gamma": 0
// in JSON, instead of silently meaning 1.
func TestSmallRefusals(t *testing.T) {
	m := NewMatrix(-1, 3)
	if err := m.check("m"); err == nil {
		t.Errorf("NewMatrix(-1, 3) = %+v passes the check", m)
	}
	if m := NewMatrix(1<<40, 1<<40); m.check("m") == nil {
		t.Error("NewMatrix(2^40, 2^40) passes the check")
	}
	for _, k := range []BuiltinSpec{RBF(0), Softmax(0), Exp(0), Laplacian(0), Builtin(KernelRBF, 0)} {
		if err := k.Validate(); err == nil || !strings.Contains(err.Error(), "Gamma = 0") {
			t.Errorf("%s with gamma 0: %v", k.Name(), err)
		}
	}
	if err := Linear().Validate(); err != nil {
		t.Errorf("Linear: %v", err)
	}
}
