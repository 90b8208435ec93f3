// Package sweep holds the utilities gdattn's examples share to run sweeps
// of training runs and write their results: a [Journal] is an append-only
// JSON-lines file of finished runs keyed by their configuration ([Key]), so
// that an interrupted sweep reruns only what is missing; [MeanStd],
// [NewStat] and [Point] aggregate runs over seeds, and [WriteJSON],
// [WritePointsCSV] and [WriteFile] write the results atomically. NaN
// statistics encode as JSON null. Training and evaluation themselves are
// package train's (train.Runner). It lives under examples/internal because
// it is glue for the examples, not a library API.
package sweep
