// Package graphtest is the test harness shared by every gdattn package: a
// numeric gradient check for Gorgonia graphs built on a [graph.Scope], a
// float32 variant of it, and small helpers to run a graph once and compare
// values.
//
// # Build functions
//
// Everything is driven by a [BuildFunc]: a function that builds a graph in the
// Scope it is given and returns the node to check (a scalar loss for the
// gradient checks, any node for [Forward]). The harness calls it more than
// once, with fresh Scopes of the same seed and possibly different dtypes, so
// it must be deterministic given the Scope: draw all randomness (parameters,
// input data) from the Scope's initialisers or s.Rand(), never from global
// state. Inputs are created with s.Input and filled with graph.SetValue inside
// the build function.
//
//	build := func(s *graph.Scope) (*G.Node, error) {
//		l, err := layers.NewLayerNorm(s.Sub("ln"), cfg)
//		if err != nil {
//			return nil, err
//		}
//		x, err := s.Input("x", tensor.Shape{2, 3, 4}) // (B, T, D)
//		if err != nil {
//			return nil, err
//		}
//		if err := graph.SetValue(x, graphtest.RandValues(s, 24)); err != nil {
//			return nil, err
//		}
//		y, err := l.Forward(x)
//		if err != nil {
//			return nil, err
//		}
//		return G.Sum(y) // any scalar function of the output
//	}
//	graphtest.CheckGrad(t, build, graphtest.Options{Seed: 1})
//	graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 1})
//
// # What CheckGrad measures
//
// The symbolic gradient comes from G.Grad and a TapeMachine with bound dual
// values, run once. The finite-difference gradient comes from a second,
// float64 build of the same function (no gradient nodes), whose compiled
// machine is re-run after perturbing one parameter element in place. For each
// checked element the error is
//
//	err = |g_sym - g_fd| / max(|g_sym|, |g_fd|, Floor)
//
// that is a relative error, turning into an absolute error scaled by 1/Floor
// for gradients smaller than Floor (which finite differences cannot resolve
// relatively). Every element with err > Tol is reported through t.Errorf with
// the parameter name, the element's flat and multi-dimensional index and both
// values; the maximum error is returned so callers may log it.
//
// The default estimate ([Auto]) is the five-point stencil with h = 1e-3,
// accurate to about 1e-12 on smooth losses, falling back for a failing element
// to the central difference with h = 1e-6, which survives kinks (ReLU) that
// the larger step may straddle; the smaller error counts. Measured on a
// (4, 5) cross-entropy: central differences alone reach 3.7e-7 relative error
// at h = 1e-6 (rounding noise of the loss divided by h), the five-point
// stencil 6e-10 at h = 1e-3. [Options.Formula] selects one estimate only.
//
// Defaults: float64 — Tol 1e-6, Floor 1e-4; float32 ([CheckGrad32]) —
// symbolic float32 gradients against float64 finite differences, Tol 1e-3,
// Floor 1e-2 (float32 sums of O(1) terms carry absolute errors of about 1e-6,
// which a smaller floor would magnify).
//
// The harness does not use t.Parallel-unsafe Gorgonia globals, but Gorgonia
// itself keeps global state, so tests using it should not run in parallel.
package graphtest
