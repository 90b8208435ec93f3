// Package synthetic holds the experiments of the paper's Section 5.1 on the
// synthetic task of Appendix E, which examples/synthetic wires to flags: the
// K-block GD training runs (TrainBlocks) and the sweeps of Figures 2, 3 and 4
// and the linear-attention comparison (ResolveSweep, RunSweep) with their
// presets, run specifications, speed calibration, tables (JSON, CSV) and
// figures. A sweep is a plan of package experiment: RunSweep prints it
// (-plan), submits it to Slurm (-submit), runs all or part of it (-index,
// -shard) with one result file per run, or merges the runs done into the
// figures (-merge). It also evaluates a checkpoint on .npy contexts
// (EvalCheckpoint, -eval) and checks, before any work starts, what each mode
// reads and writes (CheckEvalInputs, CheckSetSizes, Setup.Check) within the
// command's size limits.
package synthetic
