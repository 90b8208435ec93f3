package layers_test

import (
	"fmt"
	"log"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
)

// κ = rbf + β·linear as a value: built in the scope "kernel", it learns g
// and β; its JSON form is what a model config saves.
func ExampleSum() {
	spec := layers.Sum(layers.RBF(0.5), layers.Scaled(0.3, layers.Linear()))
	s, err := graph.NewScope(graph.Float64, 1)
	if err != nil {
		log.Fatal(err)
	}
	if _, _, err := layers.InstantiateKernel(s.Sub("kernel"), spec); err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.ParamNames())
	b, err := layers.MarshalKernel(spec)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(b))
	// Output:
	// [kernel/term0/log_gamma kernel/term1/beta]
	// {"name":"sum","terms":[{"name":"rbf","gamma":0.5,"learnable":true},{"name":"scaled","beta":0.3,"learnable":true,"kernel":{"name":"linear"}}]}
}
