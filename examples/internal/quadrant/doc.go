// Package quadrant holds the lower-dimensional experiments of the paper's
// Appendix F on the quadrant task, which examples/quadrant wires to flags:
// one-layer GD and Trained TF runs per kernel and seed (Run), their
// checkpoints and results, the one-pass probability maps over a grid of
// queries, the summaries (results.json) and Figures 6-9. The runs form a
// plan of package experiment: Run prints it (-plan), submits it to Slurm
// (-submit), runs all or part of it (-index, -shard) with one result file
// per run, or merges the runs done into the figures (-merge).
package quadrant
