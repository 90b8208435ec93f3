package bounds

import (
	"math"
	"strings"
	"testing"
)

func TestProduct(t *testing.T) {
	for _, tc := range []struct {
		dims []int
		want int
		ok   bool
	}{
		{nil, 1, true},
		{[]int{3, 4}, 12, true},
		{[]int{0, math.MaxInt}, 0, true},
		{[]int{1 << 31, 1 << 31}, 1 << 62, true},
		{[]int{1 << 31, 1 << 32}, 0, false},         // 2^63 does not fit
		{[]int{math.MaxInt, math.MaxInt}, 0, false}, // overflows uint64 as well
		{[]int{2, -1}, 0, false},
	} {
		got, ok := Product(tc.dims...)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Product(%v) = %d, %v, want %d, %v", tc.dims, got, ok, tc.want, tc.ok)
		}
	}
}

func TestElementsAndUnits(t *testing.T) {
	for _, terms := range [][]Term{
		{{What: "x·y", Dims: []int{1 << 16, 1 << 15}}}, // one tensor of exactly 2^31
		{ // exactly 2^34 in all, in tensors of 2^31
			{What: "L·x", Dims: []int{4, 1 << 31}, Tensor: "x", TensorDims: []int{1 << 31}},
			{What: "b", Dims: []int{1 << 33}, Tensor: "y·z", TensorDims: []int{1 << 16, 1 << 15}},
		},
	} {
		if err := Elements(terms...); err != nil {
			t.Errorf("within the limits: %v", err)
		}
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{Elements(Term{What: "x·y", Dims: []int{1 << 16, 1<<15 + 1}}), "x·y = 65536·32769 elements exceeds the limit of 2^31 elements per tensor (graph.MaxElements)"},
		{Elements(Term{What: "x·y", Dims: []int{math.MaxInt, 3}}), "x·y = 9223372036854775807·3"},
		{Elements(Term{What: "L·x·y", Dims: []int{2, 1 << 16, 1 << 16}, Tensor: "x·y", TensorDims: []int{1 << 16, 1 << 16}}),
			"L·x·y: one x·y tensor = 65536·65536 elements exceeds the limit of 2^31 elements per tensor"},
		{Elements(Term{What: "L·x", Dims: []int{1 << 4, 1 << 31}, Tensor: "x", TensorDims: []int{1 << 31}}),
			"L·x = 16·2147483648 elements exceeds the limit of 2^34 elements in all"},
		{Elements(Term{What: "L·x", Dims: []int{math.MaxInt, 2}, Tensor: "x", TensorDims: []int{2}}), "L·x = 9223372036854775807·2"},
		{Elements(Term{"a", []int{4, 1 << 31}, "x", []int{1 << 31}}, Term{"b", []int{4, 1 << 31}, "x", []int{1 << 31}}, Term{What: "c", Dims: []int{1}}),
			"a + b + c together exceed"},
		{Each(Term{What: "a", Dims: []int{1}}, Term{What: "b", Dims: []int{1<<31 + 1}}), "b = 2147483649"},
		{Units("Blocks·Heads", 1<<5, 1<<6), "Blocks·Heads = 32·64 exceeds the limit 2^10"},
		{Units("Layers", -1), "Layers = -1"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("error %v, want one containing %q", tc.err, tc.want)
		}
	}
	if err := Each(Term{What: "a", Dims: []int{1 << 31}}); err != nil {
		t.Errorf("a field of 2^31: %v", err)
	}
	if err := Units("Blocks·Heads", 1<<5, 1<<5); err != nil {
		t.Errorf("2^10 units: %v", err)
	}
}
