package experiment_test

import (
	"fmt"
	"os"

	"github.com/gdattn/gdattn/experiment"
)

// A plan of four runs, run by two shard workers sharing a results
// directory, then merged.
func Example() {
	dir, _ := os.MkdirTemp("", "experiment-example")
	defer os.RemoveAll(dir)
	type config struct {
		Kernel string `json:"kernel"`
		Seed   int    `json:"seed"`
	}
	plan := experiment.Plan{Name: "demo"}
	for _, seed := range []int{1, 2} {
		for _, k := range []string{"rbf", "softmax"} {
			plan.Add(config{k, seed}, fmt.Sprintf("%s seed %d", k, seed), 60)
		}
	}
	store, _ := experiment.OpenStore(dir)
	run := func(i int, r experiment.Run) (any, error) {
		return map[string]int{"run": i}, nil // a training run would go here
	}
	for _, shard := range []string{"0/2", "1/2"} {
		f := experiment.Flags{Shard: shard}
		indices, _ := f.Indices(len(plan.Runs))
		if err := experiment.Execute(plan, store, indices, run, nil); err != nil {
			fmt.Println(err)
		}
	}
	rep, _ := experiment.Collect(plan, store)
	rep.WriteStatus(os.Stdout)
	fmt.Println(rep.Check(false) == nil, plan.Runs[1].Key)
	// Output:
	// plan demo: 4 runs, 4 done, 0 missing, 0 failed
	// true {"kernel":"softmax","seed":1}
}
