// Package graph holds gdattn's shared plumbing on top of Gorgonia symbolic
// graphs: the parameter [Scope] (unique hierarchical names such as
// "block0/attn/wq", seeded initialisers, float32 or float64), helpers to read
// and write node values, the [Recover] error boundary for graph-building code,
// the compiled machine that is reused across minibatches (a host executor
// that keeps its buffers across runs, or Gorgonia's TapeMachine), and the
// Executor and DeviceUpdater interfaces a device backend (graph/cuda)
// implements. Training (package train) and checkpoints (package checkpoint)
// build on it.
//
// Shape conventions used across gdattn: token sequences are (B, T, D) with B
// contexts in a minibatch, T = N+1 positions (N context pairs, then the query)
// and D features per token; matrices act on the right, as in x·W.
//
// Typical use:
//
//	s, _ := graph.NewScope(graph.Float64, 1)
//	w, _ := s.Sub("block0").Sub("attn").Param("wq", tensor.Shape{4, 4}, graph.GlorotUniform())
//	fmt.Println(w.Name()) // block0/attn/wq
package graph
