// Package kvcachetest checks an incremental decoder (package kvcache)
// against its model's generation graph, the full recompute: [GraphNext]
// runs the graph on whole contexts (cropped to the window, as
// train.Generator's full recompute does), and [Check] drives a decoder
// through contexts shorter than, equal to and longer than the window (one
// id at a time, whole prefixes, clones, batches of rows of different
// lengths) and compares every logits vector with the graph's at a given
// relative tolerance. The gd and tf packages' decoder tests use it.
package kvcachetest
