package layers

import (
	"math"
	"strings"
	"testing"
)

// TestSmallRefusals: NewMatrix with a bad size is an error, At and Set out
// of range neither panic nor touch memory outside the matrix, and RBF(0) is
// refused like "gamma": 0 in JSON, instead of silently meaning 1.
func TestSmallRefusals(t *testing.T) {
	for _, sz := range [][2]int{{-1, 3}, {3, -1}, {1 << 40, 1 << 40}, {1 << 62, 4}} {
		if m, err := NewMatrix(sz[0], sz[1]); err == nil {
			t.Errorf("NewMatrix(%d, %d) = %dx%d, want an error", sz[0], sz[1], m.Rows, m.Cols)
		}
	}
	m, err := NewMatrix(2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Set(1, 1, 5); err != nil || m.At(1, 1) != 5 {
		t.Errorf("Set/At (1, 1): %v, %v", err, m.At(1, 1))
	}
	bad := Matrix{Rows: 4, Cols: 4, Data: make([]float64, 4)} // Data shorter than Rows·Cols
	for _, c := range []struct {
		m    Matrix
		r, c int
	}{{m, 2, 0}, {m, 0, 2}, {m, -1, 0}, {m, 0, -1}, {m, 1 << 40, 0}, {bad, 3, 3}, {bad, 0, 0}, {Matrix{}, 0, 0}} {
		if v := c.m.At(c.r, c.c); !math.IsNaN(v) {
			t.Errorf("At(%d, %d) of a %dx%d matrix with %d values = %v, want NaN", c.r, c.c, c.m.Rows, c.m.Cols, len(c.m.Data), v)
		}
		if err := c.m.Set(c.r, c.c, 1); err == nil {
			t.Errorf("Set(%d, %d) of a %dx%d matrix with %d values: no error", c.r, c.c, c.m.Rows, c.m.Cols, len(c.m.Data))
		}
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
