package experiment

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// RunFunc runs run i of a plan and returns its output (any JSON-encodable
// value; encoded, it is the result's Output).
type RunFunc func(i int, r Run) (output any, err error)

// Execute runs the runs of plan at indices in order, storing each result
// in store. A run whose result exists (in a run file, or in an older
// journal) is skipped; so is one another worker finished meanwhile (each
// run's file is checked just before it starts). A failed run is recorded
// (Store.PutFailure) and the next one runs; Execute returns the failures
// joined, after the last run. Messages about skipped and duplicated runs go
// to log (nil: none).
func Execute(plan Plan, store *Store, indices []int, run RunFunc, log io.Writer) error {
	if log == nil {
		log = io.Discard
	}
	c, err := store.Load()
	if err != nil {
		return err
	}
	var failures []error
	for _, i := range indices {
		if i < 0 || i >= len(plan.Runs) {
			return fmt.Errorf("experiment: run index %d out of range [0, %d)", i, len(plan.Runs))
		}
		r := plan.Runs[i]
		if _, ok := c.Results[r.Key]; ok || store.Done(r.Key) {
			fmt.Fprintf(log, "run %d (%s): done already, skipped\n", i, r.Label)
			continue
		}
		start := time.Now()
		out, err := run(i, r)
		secs := time.Since(start).Seconds()
		if err == nil {
			var b []byte
			if b, err = json.Marshal(out); err == nil {
				var stored bool
				stored, err = store.Put(Result{Key: r.Key, Config: r.Config, Label: r.Label, Output: b, Seconds: secs})
				if err != nil {
					// Not a failure of the run: the store cannot be written,
					// or (*ConflictError) the experiment is not deterministic.
					return err
				}
				if !stored {
					fmt.Fprintf(log, "run %d (%s): another worker stored the same result first\n", i, r.Label)
				}
				continue
			}
		}
		err = fmt.Errorf("run %d (%s): %w", i, r.Label, err)
		failures = append(failures, err)
		if perr := store.PutFailure(r.Key, r.Config, r.Label, secs, err); perr != nil {
			return errors.Join(append(failures, perr)...)
		}
	}
	return errors.Join(failures...)
}
