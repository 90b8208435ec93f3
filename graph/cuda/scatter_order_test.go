package cuda

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortScatter checks the scatters' order (sortScatter, the layout of
// kernels/sparse.cu) against its definition: every position of an id >= 0
// once, grouped by id in increasing order, positions increasing within an
// id, one segment per distinct id; for repeated and unordered ids, a single
// id everywhere, ids −1 (left out), no id at all and one id.
func TestSortScatter(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	cases := map[string][]int{
		"one":        {4},
		"repeated":   {3, 1, 3, 0, 1, 3, 7, 0},
		"same id":    {2, 2, 2, 2, 2},
		"descending": {9, 8, 7, 6, 5, 4, 3, 2, 1, 0},
		"labels":     {-1, 4, -1, 4, 0, -1},
		"all -1":     {-1, -1, -1},
	}
	rnd := make([]int, 300)
	for i := range rnd {
		rnd[i] = rng.IntN(37) - 1
	}
	cases["random"] = rnd
	for name, ids := range cases {
		n := len(ids)
		ord := make([]int64, 2*n+2)
		for i := range ord {
			ord[i] = -99 // what the order must not leave in its used part
		}
		used := sortScatter(ord, make([]int64, 0, n), ids)
		m := int(ord[n])
		if used != n+m+2 {
			t.Errorf("%s: %d long longs used, want |ids| + m + 2 = %d", name, used, n+m+2)
		}
		seg := ord[n+1 : n+2+m]
		var want [][]int64 // positions by distinct id
		var distinct []int
		for _, id := range ids {
			if id >= 0 && !slices.Contains(distinct, id) {
				distinct = append(distinct, id)
			}
		}
		slices.Sort(distinct)
		for _, id := range distinct {
			var ps []int64
			for p, x := range ids {
				if x == id {
					ps = append(ps, int64(p))
				}
			}
			want = append(want, ps)
		}
		if m != len(want) {
			t.Fatalf("%s: %d segments, want %d (the distinct ids >= 0)", name, m, len(want))
		}
		if seg[0] != 0 {
			t.Errorf("%s: first segment starts at %d", name, seg[0])
		}
		for s, ps := range want {
			got := ord[seg[s]:seg[s+1]]
			if !slices.Equal(got, ps) {
				t.Errorf("%s: segment %d (id %d) holds positions %v, want %v", name, s, distinct[s], got, ps)
			}
		}
	}
}
