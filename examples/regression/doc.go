// Command regression reproduces the linear-regression results of the
// GD-in-attention literature (von Oswald et al., "Transformers learn
// in-context by gradient descent", ICML 2023) with gdattn's Gaussian
// likelihood, the paper's Appendix G:
//
//	f_{j,k+1} = f_{j,k} + (α/N) Σ_i (y_i − f_{i,k}) κ(x_i, x_j),   f_{j,0} = 0,
//
// built as attention (gd.Config{Likelihood: gd.Gaussian()}), against the
// Trained TF for regression tokens (tf.Regressor), trained by the same
// train.Runner.
//
//	go run ./examples/regression [-quick] [-exp linear,nonlinear] ...
//	go run ./examples/regression -eval CKPT -x X.npy -y Y.npy -pred P.npy
//
// The linear experiment (d = 10, N = 10, x ~ U(−1, 1)^d, W ~ N(0, I),
// y = W x) compares GD with the linear kernel (K = 1, 2, 3 steps, α
// learned) with K-layer linear self-attention: test MSE against the Bayes
// error (data.LinearRegression's closed form), von Oswald et al.'s two
// measures on held-out tasks (the mean L2 distance of the query predictions
// and the mean cosine similarity of the sensitivities ∂ŷ/∂x_q, by central
// differences), and the learned one-step α against the optimal one-step
// rate, in closed form, by Monte Carlo over 10^6 tasks and on the training
// contexts. The nonlinear experiment (a random sum of RBF bumps as in
// Appendix E, noise σ = 0.1) compares one GD step with the RBF and the
// softmax kernels with a 1-layer softmax TF over L training contexts, as
// Figure 2 does for categorical data.
//
// -eval reads a GD checkpoint with the Gaussian likelihood (gd.Load; also
// one written by numpy alone, see gd/testdata/write_gaussian_ckpt.py), x
// (B, N+1, d) and y (B, N+1, d_y) float64 .npy files whose query rows are
// ignored, and writes the query's f_K, (B, d_y) float64, to -pred.
//
// Results: RESULTS.md here, and docs/results/exactness.md (the Gaussian models).
package main
