package cuda_test

import (
	"fmt"
	"log"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/cuda"
	"github.com/gdattn/gdattn/train"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// A graph.Machine runs on a GPU when its options name the executor; the
// graph, the Trainer and the values read after Run do not change. (Build
// with -tags gdcuda; cuda.OpenEmulator with -tags cudaemu runs the same
// kernels on the CPU.)
func ExampleNewExecutor() {
	b, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err) // without a GPU: "cuda: no CUDA device found: ..."
	}
	defer b.Close()

	s, _ := graph.NewScope(tensor.Float32, 1)
	w, _ := s.Param("w", tensor.Shape{3}, graph.FromValues([]float64{1, -2, 3}))
	loss := G.Must(G.Sum(G.Must(G.Square(w))))
	m, err := graph.NewMachine(s, loss, graph.MachineOptions{Executor: cuda.NewExecutor(b)})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	tr, _ := train.NewTrainer(m, train.Config{LR: 0.1}) // Adam on the device
	l, _ := tr.Step()
	fmt.Println(l, m.Executor().(*cuda.Exec).FallbackOps())
}
