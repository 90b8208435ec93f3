// Package theorem2 holds the numerical check of the paper's Theorem 2
// (Appendix I), which examples/theorem2 wires to flags: for each kernel it
// fits the GD model's step α and kernel parameter g, builds a single-layer
// Trained TF at the one-step GD construction, estimates the gradient of
// the population loss by Monte Carlo, splits it into the
// symmetry-forbidden directions, the GD scalars and the rest with
// Hotelling tests, and repeats the estimate at random perturbations of the
// construction (Run); then the results file and figure (Run, Redraw). Each
// kernel's check is a run of a plan of package experiment: Run prints it
// (-plan), submits it to Slurm (-submit), runs all or part of it (-index,
// -shard) with one result file per run, or merges the runs done into the
// results file and figure (-merge).
package theorem2
