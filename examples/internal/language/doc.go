// Package language holds the language-model experiments of the paper's
// Section 5.3 and Appendix K, which examples/language wires to flags: the
// GD model, GD with a feed-forward block and a one-layer GPT trained on
// TinyStories (and on TinyStories plus Gutenberg children's books),
// evaluated on a held-out test split (perplexity, continuation NLL,
// diversity of beam-search continuations) and sampled.
//
// Train, EvaluateCheckpoint and Generate are the commands train, evaluate
// and generate. NewSweep lists the tables of RESULTS.md as a plan of
// package experiment, one training (with its evaluation and a sampled
// continuation) per run, with CPU-time estimates from measured training
// rates; Sweep.Run prints the plan (-plan), submits it to Slurm (-submit),
// runs all or part of it (-index, -shard) with one result file per run, or
// merges the runs done into the tables (-merge; language.md, .json, .csv).
package language
