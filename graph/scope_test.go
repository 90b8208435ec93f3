package graph

import (
	"strings"
	"testing"

	"gorgonia.org/tensor"
)

// TestScopeShapeLimits: shapes whose element count overflows int (2^32 ×
// 2^32 wraps to 0 in tensor.Shape.TotalSize, which made an empty parameter)
// or exceeds MaxElements are refused, before anything is allocated, with
// an error naming the node; shapes at the limit are only counted.
func TestScopeShapeLimits(t *testing.T) {
	huge := []tensor.Shape{
		{1 << 32, 1 << 32},       // 2^64: wraps to 0
		{1 << 62, 4},             // 2^64 again, in two factors
		{3, 1 << 62},             // wraps to a negative count
		{1 << 21, 1 << 21},       // 2^42: fits in int, too large
		{MaxElements + 1},        // one past the limit
		{2, MaxElements/2 + 1},   // two past it
		{1 << 16, 1 << 16, 1, 2}, // 2^33
	}
	for _, sh := range huge {
		s, err := NewScope(Float64, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			kind string
			make func() error
		}{
			{"parameter", func() error { _, err := s.Sub("blk").Param("w", sh, Normal(1)); return err }},
			{"constant", func() error { _, err := s.Const("c", sh, nil); return err }},
			{"input", func() error { _, err := s.Input("x", sh); return err }},
		} {
			err := c.make()
			if err == nil {
				t.Errorf("%s of shape %v: no error", c.kind, sh)
				continue
			}
			if !strings.Contains(err.Error(), "elements") {
				t.Errorf("%s of shape %v: error %q does not mention the element count", c.kind, sh, err)
			}
		}
		if _, err := s.Sub("blk").Param("w", sh, nil); err == nil || !strings.Contains(err.Error(), `"blk/w"`) {
			t.Errorf("parameter of shape %v: error %v does not name blk/w", sh, err)
		}
		if _, err := s.Input("x", sh); err == nil || !strings.Contains(err.Error(), `"x"`) {
			t.Errorf("input of shape %v: error %v does not name x", sh, err)
		}
		if len(s.Params()) != 0 {
			t.Errorf("shape %v: a refused parameter was registered", sh)
		}
		if _, err := NewTensor(Float32, sh, nil); err == nil {
			t.Errorf("NewTensor of shape %v: no error", sh)
		}
	}
	for _, c := range []struct {
		shape tensor.Shape
		want  int
	}{
		{tensor.Shape{}, 1},
		{tensor.Shape{3, 4}, 12},
		{tensor.Shape{MaxElements}, MaxElements},
		{tensor.Shape{1 << 16, 1 << 15}, MaxElements},
	} {
		if got, err := CheckShape(c.shape); err != nil || got != c.want {
			t.Errorf("CheckShape(%v) = %d, %v; want %d", c.shape, got, err, c.want)
		}
	}
	for _, sh := range []tensor.Shape{{0}, {2, -3}} {
		if _, err := CheckShape(sh); err == nil || !strings.Contains(err.Error(), "positive") {
			t.Errorf("CheckShape(%v): err = %v, want a non-positive dimension error", sh, err)
		}
	}
}
