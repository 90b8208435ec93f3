package data

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func seq(lo, hi int) []int {
	out := make([]int, 0, hi-lo)
	for c := lo; c < hi; c++ {
		out = append(out, c)
	}
	return out
}

func TestEpisodesSample(t *testing.T) {
	counts := make([]int, 12)
	for c := range counts {
		counts[c] = 11 + c // class 0 has exactly Shots+1
	}
	f := classFeatures(counts, 30, 4)
	classes := []int{0, 2, 3, 5, 7, 8, 11}
	e, err := NewEpisodes(f, classes, EpisodeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if e.Config != DefaultEpisodeConfig() || e.Config.N() != 50 {
		t.Fatalf("config %+v, want the defaults (N = 50)", e.Config)
	}
	const B = 300
	b, eps, err := e.SampleEpisodes(B, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	if b.B != B || b.T != 51 || b.D != 4 || b.C != 5 || b.P != nil {
		t.Fatalf("batch B, T, D, C = %d, %d, %d, %d (P nil: %v), want %d, 51, 4, 5", b.B, b.T, b.D, b.C, b.P == nil, B)
	}
	allowed := map[int]bool{}
	for _, c := range classes {
		allowed[c] = true
	}
	firstClass := map[int]int{} // how often each class is label 0
	queryLabels := make([]int, 5)
	for ep := 0; ep < B; ep++ {
		rec := eps[ep]
		perLabel := make([]int, 5)
		seen := map[[2]int]bool{}
		for pos := 0; pos < 51; pos++ {
			v := b.X[(ep*51+pos)*4 : (ep*51+pos+1)*4]
			c, i := origin(v)
			y := b.Y[ep*51+pos]
			if !allowed[c] {
				t.Fatalf("episode %d, position %d: class %d is not in the sampler's classes", ep, pos, c)
			}
			if rec.Classes[y] != c {
				t.Fatalf("episode %d, position %d: label %d but class %d (episode classes %v)", ep, pos, y, c, rec.Classes)
			}
			if seen[[2]int{c, i}] {
				t.Fatalf("episode %d: vector (%d, %d) used twice (the query must differ from the context)", ep, c, i)
			}
			seen[[2]int{c, i}] = true
			if pos < 50 {
				perLabel[y]++
				if rec.Context[pos] != [2]int{c, i} {
					t.Fatalf("episode %d: record %v, vector from (%d, %d)", ep, rec.Context[pos], c, i)
				}
			} else {
				queryLabels[y]++
				if rec.Query != [2]int{c, i} {
					t.Fatalf("episode %d: query record %v, vector from (%d, %d)", ep, rec.Query, c, i)
				}
			}
		}
		for l, n := range perLabel {
			if n != 10 {
				t.Fatalf("episode %d: label %d appears %d times in the context, want 10", ep, l, n)
			}
		}
		distinct := map[int]bool{}
		for _, c := range rec.Classes {
			distinct[c] = true
		}
		if len(distinct) != 5 {
			t.Fatalf("episode %d: classes %v are not distinct", ep, rec.Classes)
		}
		firstClass[rec.Classes[0]]++
		// The context is shuffled: the first ten positions are not all label 0.
		if ep == 0 && strings.Count(fmt.Sprint(b.Y[:10]), "0") == 10 {
			t.Error("context not shuffled")
		}
	}
	// Relabelling: every class is label 0 sometimes (7 classes, 300 draws:
	// each expected ~43 times; missing one has probability ~1e-18·7).
	if len(firstClass) != len(classes) {
		t.Errorf("label 0 went to classes %v, want all of %v", firstClass, classes)
	}
	for l, n := range queryLabels {
		if n < 30 { // expected 60
			t.Errorf("query label %d drawn %d times of %d", l, n, B)
		}
	}

	// Equal generator states give equal batches; different ones differ.
	b2, _ := e.Sample(B, rand.New(rand.NewPCG(1, 2)))
	b3, _ := e.Sample(B, rand.New(rand.NewPCG(1, 3)))
	if fmt.Sprint(b.X) != fmt.Sprint(b2.X) || fmt.Sprint(b.Y) != fmt.Sprint(b2.Y) {
		t.Error("same seed, different episodes")
	}
	if fmt.Sprint(b.Y) == fmt.Sprint(b3.Y) {
		t.Error("different seeds, same episodes")
	}
}

// TestEpisodesDisjoint samples training and test episodes from a split and
// checks that no test episode holds a training class and vice versa.
func TestEpisodesDisjoint(t *testing.T) {
	counts := make([]int, 40)
	for c := range counts {
		counts[c] = 12
	}
	f := classFeatures(counts, 12, 3)
	train, test, err := SplitClasses(40, 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	isTest := map[int]bool{}
	for _, c := range test {
		isTest[c] = true
	}
	for _, split := range []struct {
		name    string
		classes []int
		test    bool
	}{{"train", train, false}, {"test", test, true}} {
		e, err := NewEpisodes(f, split.classes, EpisodeConfig{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := e.Sample(200, rand.New(rand.NewPCG(5, 5)))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < b.B*b.T; i++ {
			if c, _ := origin(b.X[i*3 : i*3+3]); isTest[c] != split.test {
				t.Fatalf("%s episodes hold class %d (test class: %v)", split.name, c, isTest[c])
			}
		}
	}
}

func TestEpisodesSmallConfig(t *testing.T) {
	f := classFeatures([]int{3, 3, 3}, 3, 2)
	e, err := NewEpisodes(f, []int{0, 1, 2}, EpisodeConfig{Ways: 3, Shots: 2})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.Sample(4, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if b.T != 7 || b.C != 3 {
		t.Errorf("T, C = %d, %d, want 7, 3", b.T, b.C)
	}
}

func TestEpisodesErrors(t *testing.T) {
	counts := []int{11, 11, 11, 11, 11, 10}
	f := classFeatures(counts, 11, 2)
	f.Names = []string{"a", "b", "c", "d", "e", "short"}
	tests := []struct {
		name    string
		f       *Features
		classes []int
		cfg     EpisodeConfig
		want    string
	}{
		{"fewer than 5 classes", f, []int{0, 1, 2, 3}, EpisodeConfig{}, "4 classes, want at least Ways = 5"},
		{"fewer than 11 examples", f, []int{0, 1, 2, 3, 5}, EpisodeConfig{}, `class 5 ("short") has 10 examples, want at least Shots+1 = 11`},
		{"class out of range", f, []int{0, 1, 2, 3, 9}, EpisodeConfig{}, "class 9 out of range"},
		{"repeated class", f, []int{0, 1, 2, 3, 3}, EpisodeConfig{}, "class 3 listed twice"},
		{"no classes", f, nil, EpisodeConfig{}, "no classes"},
		{"negative shots", f, []int{0, 1, 2, 3, 4}, EpisodeConfig{Shots: -1}, "want >= 0"},
		{"one way", f, []int{0, 1, 2, 3, 4}, EpisodeConfig{Ways: 1}, "Ways = 1"},
		{"invalid features", &Features{}, []int{0}, EpisodeConfig{}, "Dim = 0"},
		{"nil features", nil, []int{0}, EpisodeConfig{}, "nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewEpisodes(tt.f, tt.classes, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewEpisodes = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	e, err := NewEpisodes(f, []int{0, 1, 2, 3, 4}, EpisodeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Sample(0, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), "B = 0") {
		t.Errorf("Sample(0) = %v", err)
	}
	if _, err := e.Sample(1, nil); err == nil || !strings.Contains(err.Error(), "rng is nil") {
		t.Errorf("Sample(nil rng) = %v", err)
	}
	var zero *Episodes
	if _, err := zero.Sample(1, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("nil sampler: no error")
	}
}
