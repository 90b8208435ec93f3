// Package bench holds gdattn's benchmarks and the tooling around them: full
// training steps (forward, loss, backward, Adam through train.Trainer) and
// inference (a forward-only graph.Machine to the logits) of the paper's
// models at the paper's sizes, a PyTorch peer comparison (bench/peer), a
// scaling sweep in N and C (bench/scaling), and a converter of benchmark
// output to markdown (bench/benchtab). Results and the exact commands are
// in docs/performance.md and bench/results; bench/run.sh re-runs everything:
//
//	bash bench/run.sh -quick                                    # a few minutes
//	GOMAXPROCS=1 go test ./bench -run '^$' -bench . -benchmem  # the benchmarks
//	GOMAXPROCS=2 go test ./bench -run '^$' -bench 'LM.*/preset=paper' -bench_paper
//	go run ./bench/peer -reps 5                                 # gdattn vs PyTorch
//	go run ./bench/scaling -quick                               # cost in N and C
//
// # Workloads
//
// A [Workload] names a model and its sizes; [NewRunner] builds its graph
// once, compiles its machine, feeds one minibatch, and [Runner.Step] runs a
// step. The benchmarks, the peer comparison and the scaling sweep all use
// it, so the three time the same thing:
//
//	synthetic/gd-K   GD, K = 1, 2 blocks     B=512 N=10  d=10  d'=5 C=25   (Section 5.1)
//	synthetic/tf-L   Trained TF, L = 1, 2    same; L = 2 with cross-attention
//	quadrant/M-1     GD or TF, 1 layer       B=64  N=100 d=2   d'=5 C=20   (Appendix F)
//	fewshot/M-1      GD or TF, 1 layer       B=64  N=50  d=512 d'=4 C=5    (Section 5.2)
//	language-P/M     gd.LM or tf.GPT         preset P: small (T=64, d'=64, B=8) or
//	                                         paper (T=256, d'=512, B=4); V=50,258, 8 heads
//
// Every in-context model uses the softmax kernel (and GD the exact erase).
// The minibatch does not change between steps (feeding is not timed).
//
// # Benchmarks
//
// Each benchmark builds, compiles, feeds and runs its workload once before
// b.ResetTimer, then calls Step b.N times, keeping the results in a
// package-level sink, with b.ReportAllocs. Sub-benchmarks are named
// <size>/<dtype> with float32 and float64. Besides ns/op, B/op and
// allocs/op each reports:
//
//   - cpu-ms/op: the process CPU time (user + system, every thread) per step,
//     from getrusage; on a shared, overloaded machine it is far steadier than
//     the wall clock, which mostly measures the wait for a core;
//   - peak-heap-MB: the largest value of the runtime/metrics counter
//     /memory/classes/heap/objects:bytes (heap objects, live or not yet
//     swept), sampled every millisecond by a goroutine during the timed loop;
//   - peak-RSS-MB: the kernel's resident-set high-water mark (VmHWM), reset
//     before the loop by writing 5 to /proc/self/clear_refs after
//     debug.FreeOSMemory; it includes the compiled graph's tensors and the
//     runtime (see [PeakMeter]);
//   - GFLOP/s and GFLOP/cpu-s (language models): the analytic matrix-product
//     FLOPs of a step ([FLOPs]) per second of wall time and of CPU time.
//
// Two more: BenchmarkTrainStepN times GD 1 block and TF 1 layer at N = 50,
// 125 and 250 (the peer's -N sweep), and BenchmarkFitOverhead the same step
// bare and through train.Runner.Fit (copying and feeding each minibatch;
// ms/step and cpu-ms/step per training step), for the training loop's own
// cost. bench/peer-tables.sh reruns every peer table of docs/performance.md and
// bench/results against the PyTorch peer, which must run on an optimised
// BLAS (bench/peer checks it).
//
// Flags: -bench_paper adds the language paper preset (tens of seconds per
// step); -bench_lm_batch overrides the language minibatch; -bench_xent32
// builds the language losses with the float32 softmax
// (Workload.Float32CrossEntropy, as bench/peer does by default);
// BenchmarkLMXent32Pair times the language steps with and without it in
// one process, alternating step by step.
//
// Set the thread count with the GOMAXPROCS environment variable rather than
// go test -cpu: a benchmark whose first iteration outlasts -benchtime (the
// few-shot TF and language ones) keeps the result of that iteration, which
// runs before -cpu takes effect, with the GOMAXPROCS the previous benchmark
// left; the "-cpu 1" line of "-cpu 1,2" then runs on two threads.
// Benchmarks run only with -bench: plain go test runs the fast unit tests
// (well under 10 s) and nothing timed, so CI stays deterministic.
//
// Compare runs with benchstat (golang.org/x/perf/cmd/benchstat) on -count 10
// outputs, or read the tables of go run ./bench/benchtab.
package bench
