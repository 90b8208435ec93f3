// Package regression holds the regression experiments of the paper's
// Appendix G (real-valued y, Gaussian likelihood), which
// examples/regression wires to flags: functional GD as attention against
// trained baselines on von Oswald et al.'s linear task and on a random sum
// of RBF bumps (Resolve, RunAll), the optimal one-step rates, the tables
// (JSON, CSV) and figures. The runs form a plan of package experiment:
// RunAll prints it (-plan), submits it to Slurm (-submit), runs all or part
// of it (-index, -shard) with one result file per run, or merges the runs
// done into the tables and figures (-merge); Check checks, before any work
// starts, what a plan will run and write. -eval's evaluation of a GD
// checkpoint on .npy contexts is ReadEvalInputs and EvalInputs.Evaluate.
package regression
