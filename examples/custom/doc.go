// Command custom is gdattn used as a library, end to end: a GD model with a
// kernel of one's own and a Trained-TF baseline, trained, saved, rebuilt
// from their checkpoints alone and evaluated.
//
//	go run ./examples/custom [-out DIR] [-seed S]
//
// On the synthetic task of Appendix D (C = 25, d' = 5, d = 10, N = 10) it
// trains, on the same 2048 contexts (30 epochs, minibatches of 64, Adam at
// 1e-2, with train.Fit):
//
//   - a GD model of 2 interleaved blocks (two steps of functional gradient
//     descent) whose kernel is κ(q, k) = exp(−g‖q−k‖²) + β q·k, with g and β
//     learned:
//
//     layers.Sum(layers.RBF(1), layers.Scaled(0.1, layers.Linear()))
//
//   - a Trained TF with one self-attention layer (softmax kernel).
//
// Each model is saved under -out (gd/ and tf/, default results/custom),
// rebuilt by gd.Load or tf.Load, and must predict exactly what the trained
// model predicts on 2048 fresh test contexts (exit status 1 otherwise); the
// rebuilt models' top-1 accuracy, NLL and the Bayes oracle are printed.
// The run takes a few seconds of CPU.
//
// A kernel value such as the sum above is saved in the checkpoint's config
// like a built-in. A kernel written as Go code (layers.Custom, or a type
// implementing layers.KernelSpec) plugs into gd.Config.Kernel the same way;
// to save a model using it, register it once with layers.RegisterKernel so
// that Load can rebuild it (see "Kernel specs" in package layers).
//
// Exit status: 0 done, 2 a refused command line (one line on stderr), 1 a
// failure during the run.
package main
