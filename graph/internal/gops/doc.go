// Package gops recognises Gorgonia's own ops (matrix products, elementwise
// ops, broadcasts, sums, transposes, concatenations, slices, reshapes, sizes)
// and reads their parameters, for gdattn's executors: the host executor in
// package graph and the GPU executor in graph/cuda.
//
// Those ops have unexported types in gorgonia.org/gorgonia, pinned at v0.9.18
// by go.mod. An op is recognised by the dynamic type of the op Gorgonia's
// exported constructor builds (G.Mul, G.Add, G.Exp, G.Broadcast, G.Sum,
// G.Transpose, G.Concat, G.Slice, G.Reshape, G.SizeOf, applied once to small
// nodes in a scratch graph), and its parameters are read from its exported
// methods: the printed form (String) and, for a slice, IsSlice. No field is
// read. The package's tests check every parser against ops built with known
// parameters, so a Gorgonia upgrade that changes a type or a format fails
// there rather than moving the op to a slower path without notice.
package gops
