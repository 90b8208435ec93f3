package data_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/gdattn/gdattn/data"
)

// ExampleQuadrant draws the quadrant task of Appendix F (d = 2, C = 20,
// d' = 5, N = 100) and a batch of contexts with their quadrant categories.
func ExampleQuadrant() {
	task, err := data.NewQuadrant(data.QuadrantConfig{}, 1) // zero value: the defaults
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("config: %+v\n", task.Config)
	batch, lat, err := task.SampleLatent(1000, rand.New(rand.NewPCG(2, 2)))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("B, T, D, C:", batch.B, batch.T, batch.D, batch.C)
	fmt.Println("valid:", batch.Validate() == nil)
	fmt.Println("categories of quadrants 1..4 in context 0:", lat.Cats[:4])
	best, _ := task.MostProbable(lat.Cats[:4])
	fmt.Println("most probable category in each quadrant:", best)
	fmt.Println("quadrant of (-0.5, 0.2):", data.QuadrantOf(-0.5, 0.2, 0))
	fmt.Printf("mean max probability at the query: %.3f\n", batch.Oracle())
	// Output:
	// config: {C:20 DPrime:5 N:100 Covariates:uniform Rotate:false}
	// B, T, D, C: 1000 101 2 20
	// valid: true
	// categories of quadrants 1..4 in context 0: [3 19 13 10]
	// most probable category in each quadrant: [3 6 13 8]
	// quadrant of (-0.5, 0.2): 2
	// mean max probability at the query: 0.516
}
