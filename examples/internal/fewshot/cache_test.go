package fewshot

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// TestFeatureCacheShared: workers building the same entry at once (as the
// tasks of a Slurm array sharing -cache do) all get the same features, and
// leave one complete entry and no temporary folder; a worker that loses
// the race to publish reads the winner's entry.
func TestFeatureCacheShared(t *testing.T) {
	qd := writeQuickDraw(t, fakeImages(10, 6, 4))
	spec := featureSpec{Kind: "pca", TestClasses: 5, SplitSeed: 1, Dim: 6}
	cache := t.TempDir()
	const workers = 3
	sets := make([]*featureSet, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sets[w], errs[w] = loadFeatures(spec, qd, cache, nil)
		}()
	}
	wg.Wait()
	for w := range workers {
		if errs[w] != nil {
			t.Fatalf("worker %d: %v", w, errs[w])
		}
		for i, x := range sets[w].F.X {
			if math.Float64bits(x) != math.Float64bits(sets[0].F.X[i]) {
				t.Fatalf("worker %d: feature %d is %v, worker 0's %v", w, i, x, sets[0].F.X[i])
			}
		}
	}
	ents, err := os.ReadDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != spec.key() {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("cache holds %v, want the one entry %s", names, spec.key())
	}
	// Publishing an entry that exists reports the loss and leaves it as is.
	dir := filepath.Join(cache, spec.key())
	before, _ := os.ReadFile(filepath.Join(dir, "meta.json"))
	m := sets[0].Meta
	m.BuildSecond = -1
	ok, err := publish(dir, sets[0].F, m)
	after, _ := os.ReadFile(filepath.Join(dir, "meta.json"))
	if ok || err != nil || !bytes.Equal(before, after) {
		t.Errorf("publish over an existing entry: %v, %v (meta.json changed: %v), want false, nil, unchanged", ok, err, !bytes.Equal(before, after))
	}
	// An entry without meta.json (an interrupted writer of the older
	// in-place format) is named, not read.
	spec.Dim = 5
	if err := os.MkdirAll(filepath.Join(cache, spec.key()), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := loadFeatures(spec, qd, cache, nil); err == nil || !strings.Contains(err.Error(), "incomplete cache entry") {
		t.Errorf("incomplete entry: %v", err)
	}
}
