// Package bench holds gdattn's benchmarks: full training steps (forward,
// backward, optimiser) and inference of the paper's models at the paper's
// sizes, with the graph compiled once before the timer starts.
//
//	go test ./bench -run '^$' -bench . -benchmem
package bench
