// Package fewshot holds the in-context image classification experiment of
// the paper's Section 5.2 (Figure 4 right), which examples/fewshot wires to
// flags: features of Quick, Draw! drawings (a small CNN trained on the
// training categories only, package cnn, or a PCA of the raw pixels),
// cached on disk; GD attention models and a Trained TF learning 5-way
// 10-shot classification in context from episodes of the training
// categories; linear probing fitted anew on every test context; the
// results (results.json), the tables and the figure (fewshot.png).
//
// The runs form a plan of package experiment: one run is one feature map,
// model and seed (linear probing, which has no seed, one run per feature
// map), keyed by every setting that changes its result. [RunAll] prints
// the plan (-plan), submits it to Slurm (-submit), runs all or part of it
// (-index, -shard) with one result file per run under <out>/runs, or
// merges the runs done into results.json, the tables and the figure
// (-merge).
//
// The features are a shared prerequisite, not a run: every worker that
// needs a feature map reads it from the cache folder, or builds it
// (deterministically: the same spec gives the same features, bit for bit,
// on one kind of CPU) and publishes it there atomically (a temporary folder, fsync, then a
// rename that fails if another worker published first, whose entry is
// then read instead). Workers on several nodes sharing the cache folder
// therefore never read a half-written entry; at worst two of them build
// the same entry at once. A run of the plan cannot depend on another
// (a Slurm array has no order), and keying every run by its feature spec
// keeps each result independent of which worker built the features.
package fewshot
