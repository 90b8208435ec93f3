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
	if err := Elements(Term{"a", []int{1 << 17, 1 << 16}}, Term{"b", []int{1 << 33}}); err != nil { // exactly 2^34 in all
		t.Errorf("within the limit: %v", err)
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{Elements(Term{"x·y", []int{1 << 20, 1 << 20}}), "x·y = 1048576·1048576 elements exceeds the limit 2^34"},
		{Elements(Term{"x·y", []int{math.MaxInt, 3}}), "x·y = 9223372036854775807·3"},
		{Elements(Term{"a", []int{1 << 33}}, Term{"b", []int{1 << 33}}, Term{"c", []int{1}}), "a + b + c together exceed"},
		{Each(Term{"a", []int{1}}, Term{"b", []int{1 << 35}}), "b = 34359738368"},
		{Units("Blocks·Heads", 1<<9, 1<<8), "Blocks·Heads = 512·256 exceeds the limit 2^16"},
		{Units("Layers", -1), "Layers = -1"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("error %v, want one containing %q", tc.err, tc.want)
		}
	}
	if err := Units("Blocks·Heads", 1<<8, 1<<8); err != nil {
		t.Errorf("2^16 units: %v", err)
	}
}
