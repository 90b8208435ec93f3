// Package numeric holds the plain-Go numeric helpers that gdattn's
// evaluation code, data generators and explicit references share outside
// the computation graph: the maximum of a slice, exponentials shifted by
// that maximum, the softmax of a row, log-sum-exp and log-softmax, all in
// float64 and numerically stable (every exponent is x_i − max_j x_j ≤ 0);
// and JSONFloat, a float64 whose JSON form writes NaN and ±Inf as null.
//
// Every function fixes its arithmetic order, so that each caller gets
// bit-identical results to the hand-written loop it replaces:
//
//	m   = max_j x_j               (math.Max from −Inf, left to right)
//	e_i = exp(x_i − m)            (ExpShifted; s = Σ_i e_i left to right)
//	p_i = e_i / s                 (Softmax)
//	lse = m + log s               (LogSumExp)
//	l_i = x_i − lse               (LogSoftmax)
//
// The in-graph kernels of package ops (float32 and float64, with a table
// exponential for float32 and a multiply by 1/s) are separate on purpose.
//
// The helpers take rows (one slice per distribution); a caller with a
// row-major (rows, C) matrix slices it. They neither allocate (except
// Softmax and LogSoftmax, which return a new slice) nor validate: a NaN
// input propagates to NaN, and a row whose maximum is −Inf or +Inf gives
// NaN probabilities (callers that accept such rows check the maximum
// first, e.g. with Max). Usage:
//
//	p := numeric.Softmax([]float64{1, 2, 3}) // ≈ [0.090 0.245 0.665]
//	lse := numeric.LogSumExp(logits)          // log Σ_i exp(logits_i)
package numeric
