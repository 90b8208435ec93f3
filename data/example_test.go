package data_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/gdattn/gdattn/data"
)

// ExampleSynthetic draws the paper's synthetic task (Appendix E) and a batch
// of contexts from it.
func ExampleSynthetic() {
	task, err := data.NewSynthetic(data.SyntheticConfig{}, 1) // zero value: the defaults
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("config: %+v\n", task.Config)

	batch, err := task.Sample(1000, rand.New(rand.NewPCG(2, 2)))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("B, T, D, C:", batch.B, batch.T, batch.D, batch.C)
	fmt.Println("valid:", batch.Validate() == nil)
	fmt.Printf("oracle top-1 at the query: %.3f\n", batch.Oracle())

	mini, err := batch.Slice(0, 32) // the first minibatch of 32 contexts
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("minibatch X, Y, P lengths:", len(mini.X), len(mini.Y), len(mini.P))
	// Output:
	// config: {C:25 DPrime:5 D:10 N:10 Active:5 Scale:10}
	// B, T, D, C: 1000 11 10 25
	// valid: true
	// oracle top-1 at the query: 0.805
	// minibatch X, Y, P lengths: 3520 352 8800
}
