// Package experiment runs a study of many independent training runs (a
// sweep) on one machine or on a cluster, and merges their results.
//
// An experiment is a [Plan]: an ordered list of [Run]s, each with a stable
// key derived from every setting that changes its result (the compact JSON
// of its configuration, [Key]) and an estimate of its CPU time. A worker
// runs some of the plan's runs, chosen by [Selection] (one index, as a
// Slurm array task or a Kubernetes Indexed Job pod does, or a shard i/n),
// and writes each run's result to its own file in a [Store]:
//
//	<dir>/runs/<hash of the key>.json
//
// written atomically (a temporary file, fsync, then a hard link that fails
// if the result exists, or a rename where links are not supported; then an
// fsync of the directory), so that any number of workers on any number of
// nodes sharing the directory over NFS or another network filesystem never
// corrupt each other and need no lock. A run whose result exists is
// skipped; two workers that ran the same run (a duplicated array task)
// leave the first result, and the second checks that its own output is
// identical (a free determinism check). A run that fails leaves
// <hash>.failed.json with its error, and reruns the next time it is
// selected.
//
// [Collect] reads a plan's results and lists the runs done, failed and
// missing; [Report.Check] refuses a final report while runs are missing or
// failed, unless a partial report is asked for. Journals of the older
// one-file format (runs.jsonl, one JSON object per line with the run's
// configuration under "config") in the store's directory stay readable:
// [Store.Load] reads them beneath the run files, so every committed result
// keeps its provenance.
//
// [Flags] registers the worker flags every experiment command shares
// (-plan, -plan-json, -index, -shard, -merge, -partial), and [SubmitSlurm]
// submits a plan's missing runs as a Slurm job array with a merge job
// that depends on it.
//
// Usage, in an experiment command:
//
//	plan := experiment.Plan{Name: "fig2"}
//	for _, cfg := range configs {
//		plan.Add(cfg, cfg.Label(), estimateSeconds(cfg))
//	}
//	store, err := experiment.OpenStore("results/fig2")
//	sel, err := flags.Selection(len(plan.Runs))
//	err = experiment.Execute(plan, store, sel, func(r experiment.Run) (any, error) {
//		return train(r.Config)
//	}, os.Stdout)
//	rep, err := experiment.Collect(plan, store)
//	if err := rep.Check(partial); err != nil { ... }
package experiment
