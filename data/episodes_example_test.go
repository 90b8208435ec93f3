package data_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/gdattn/gdattn/data"
)

// ExampleEpisodes samples 5-way 10-shot episodes (paper Section 5.2) from
// features of 20 classes, training and test episodes from disjoint classes.
func ExampleEpisodes() {
	// 20 classes of 30 vectors of dimension 8 (in practice: ReadFeatures of
	// a features .npy (classes, max_count, dim) and a counts .npy).
	rng := rand.New(rand.NewPCG(1, 1))
	f := &data.Features{Dim: 8, MaxCount: 30, Counts: make([]int, 20), X: make([]float64, 20*30*8)}
	for c := range f.Counts {
		f.Counts[c] = 30
	}
	for i := range f.X {
		f.X[i] = rng.NormFloat64()
	}
	train, test, err := data.SplitClasses(f.Classes(), 5, 1) // 15 training, 5 held-out classes
	if err != nil {
		fmt.Println(err)
		return
	}
	trainEp, err := data.NewEpisodes(f, train, data.EpisodeConfig{}) // zero value: 5 ways, 10 shots
	if err != nil {
		fmt.Println(err)
		return
	}
	testEp, err := data.NewEpisodes(f, test, data.EpisodeConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	b, err := trainEp.Sample(64, rand.New(rand.NewPCG(2, 2)))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("training batch B, T, D, C:", b.B, b.T, b.D, b.C)
	_, eps, _ := testEp.SampleEpisodes(1, rand.New(rand.NewPCG(3, 3)))
	fmt.Println("held-out classes:", test)
	fmt.Println("first test episode's classes (labels 0..4):", eps[0].Classes)
	// Output:
	// training batch B, T, D, C: 64 51 8 5
	// held-out classes: [2 4 13 15 19]
	// first test episode's classes (labels 0..4): [13 19 15 2 4]
}
