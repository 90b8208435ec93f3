// Package gd holds the GD-structured attention models of "On Understanding
// Attention-Based In-Context Learning for Categorical Data", and the explicit
// functional-GD reference they must match.
//
// # The reference
//
// Reference runs the functional gradient descent of the paper's
// eqs. (2)-(3) in plain Go (no Gorgonia):
//
//	f_{j,0}   = 0
//	f_{j,k+1} = f_{j,k} + (α/N) Σ_{i=1..N} [w_{e,y_i} − E(w_e | f_{i,k})] κ(x_i, x_j)
//	E(w_e | f) = Σ_c w_{e,c} softmax_c(W_eᵀ f)
//
// for every position j, the query included. RefKernel, RefSoftmax and
// RefExpectedEmbedding expose the kernels and the softmax model (eq. (1)) so
// that other packages can build their own checks from the same definitions.
//
// # Shape conventions
//
// Batches are flat, row-major []float64 slices:
//
//	x      (B, T, d)   T = N+1; positions 0..N-1 are the context, position N
//	                   (the last) is the query
//	y      (B, T)      []int labels in 0..C-1; the query label may be -1
//	                   (unknown) and is never used by GD
//	W_e    (d', C)     element (r, c) at r*C+c; column c is the embedding
//	                   w_{e,c} of category c
//	f, E   (B, T, d')  the latent function and E(w_e | f) at every position
//	probs  (B, C)      class probabilities at the query
//
// # Usage
//
//	res, err := gd.Reference(x, y, B, T, d, we, dPrime, C, gd.ReferenceConfig{
//		Steps: 3, Alpha: 1, Kernel: "rbf", Gamma: 0.5,
//	})
//	// res.F[k] is f after k steps; res.Probs[b*C+c] is p(c | query of context b).
package gd
