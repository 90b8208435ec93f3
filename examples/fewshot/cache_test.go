package main

import (
	"math"
	"testing"
)

// TestFeatureCacheIsExact: the features a run reads back from the cache are
// exactly those a fresh run computes (same values, bit for bit), for both
// feature maps, so a run's numbers never depend on the cache's state.
func TestFeatureCacheIsExact(t *testing.T) {
	qd := writeQuickDraw(t, fakeImages(12, 6, 3))
	for _, spec := range []featureSpec{
		{Kind: "pca", TestClasses: 5, SplitSeed: 1, Dim: 8},
		{Kind: "cnn", TestClasses: 5, SplitSeed: 1, Dim: 16, Channels: [2]int{2, 4}, Epochs: 1, Seed: 1, Val: 2},
	} {
		cache := t.TempDir()
		fresh, err := loadFeatures(spec, qd, cache, nil)
		if err != nil {
			t.Fatal(err)
		}
		cached, err := loadFeatures(spec, qd, cache, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(fresh.F.X) != len(cached.F.X) {
			t.Fatalf("%s: %d fresh values, %d cached", spec.Kind, len(fresh.F.X), len(cached.F.X))
		}
		diff := 0
		for i, x := range fresh.F.X {
			if y := cached.F.X[i]; math.Float64bits(x) != math.Float64bits(y) && !(math.IsNaN(x) && math.IsNaN(y)) {
				diff++
			}
		}
		if diff > 0 {
			t.Errorf("%s: %d of %d cached feature values differ from the fresh ones", spec.Kind, diff, len(fresh.F.X))
		}
	}
}
