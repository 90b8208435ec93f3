// Package sweep holds the utilities gdattn's examples share to write the
// results of sweeps of training runs (the runs themselves are plans of
// package experiment): [Record] is a finished run; [MeanStd],
// [NewStat] and [Point] aggregate runs over seeds, and [WriteJSON],
// [WritePointsCSV] and [WriteFile] write the results atomically. NaN
// statistics encode as JSON null. Training and evaluation themselves are
// package train's (train.Runner). It lives under examples/internal because
// it is glue for the examples, not a library API.
package sweep
