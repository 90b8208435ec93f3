package data

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// TestTopIndicesMatchesStableSort: the one-pass selection returns what a
// stable descending sort of every index puts first (ties by lower index),
// with ties, −Inf and k beyond the length.
func TestTopIndicesMatchesStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for trial := 0; trial < 300; trial++ {
		n := 1 + rng.IntN(40)
		v := make([]float64, n)
		for i := range v {
			switch rng.IntN(4) {
			case 0:
				v[i] = float64(rng.IntN(3)) // ties
			case 1:
				v[i] = math.Inf(-1)
			default:
				v[i] = rng.NormFloat64()
			}
		}
		k := 1 + rng.IntN(n+3)
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return v[idx[a]] > v[idx[b]] })
		want := idx[:min(k, n)]
		if got := topIndices(v, k); !slices.Equal(got, want) {
			t.Fatalf("topIndices(%v, %d) = %v, want %v", v, k, got, want)
		}
	}
}
