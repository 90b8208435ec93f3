// Package cnn is the image feature extractor of the few-shot experiment
// (paper Section 5.2): a small convolutional network, the analogue of the
// paper's VGG, trained as a classifier on the training categories only, whose
// penultimate layer is the feature map handed to the in-context models.
//
// It lives under examples/internal/fewshot because it stands in for an external,
// pre-trained network: gdattn's subject is the in-context classifier, not the
// feature extractor. Its layers follow the house contract of package layers
// (NewX(s, cfg) (*X, error), Forward, Params) so they read the same way.
//
// # Network
//
// On images x (B, 1, 28, 28), with Channels = [c1, c2] and Hidden = h:
//
//	conv 3×3 (pad 1) → ReLU → max-pool 2×2     (B, c1, 14, 14)
//	conv 3×3 (pad 1) → ReLU → max-pool 2×2     (B, c2, 7, 7)
//	flatten → linear → ReLU                    (B, h)    the features
//	linear                                     (B, K)    logits over K training classes
//
// Convolution and pooling are Gorgonia's G.Conv2d and G.MaxPool2D, whose
// gradients the tests check against finite differences (float64, relative
// error < 1e-6) before anything relies on them; reshapes use ops.Reshape.
//
// # Usage
//
//	s, err := graph.NewScope(graph.Float32, seed)
//	net, err := cnn.NewNet(s, cnn.Config{Classes: 300}, 64)          // 64 images per minibatch
//	trainPx, err := allPixels.Subset(trainClasses)                  // data.Features of 28×28 drawings
//	res, err := cnn.Train(net, trainPx, cnn.TrainConfig{Epochs: 5}) // res.Loss, res.ValAcc per epoch
//	feats, err := cnn.Extract(net, allPixels, os.Stderr)            // (classes, count, Hidden) features
package cnn
