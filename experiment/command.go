package experiment

import (
	"errors"
	"flag"
	"io"
	"path/filepath"
)

// WritePlan writes plan to w, as text or, with asJSON, as JSON, marking
// the runs whose result store holds as done: what an experiment command
// prints for -plan and -plan-json.
func WritePlan(w io.Writer, plan Plan, store *Store, asJSON bool) error {
	if store == nil {
		return errors.New("experiment: WritePlan: nil store")
	}
	c, err := store.Load()
	if err != nil {
		return err
	}
	done := func(k string) bool { _, ok := c.Results[k]; return ok }
	if asJSON {
		return plan.WriteJSON(w, done)
	}
	return plan.WriteText(w, done)
}

// Submit submits plan's runs that have no result in store to Slurm
// (SubmitSlurm), each array task running this program with the flags
// given on fs's command line (WorkerCommand); the batch scripts and logs
// go to the slurm folder of the store's directory. What an experiment
// command does for -submit slurm.
func Submit(w io.Writer, plan Plan, store *Store, fs *flag.FlagSet, o SlurmOptions) (*Submission, error) {
	if store == nil {
		return nil, errors.New("experiment: Submit: nil store")
	}
	rep, err := Collect(plan, store)
	if err != nil {
		return nil, err
	}
	cmd, err := WorkerCommand(fs)
	if err != nil {
		return nil, err
	}
	return SubmitSlurm(rep, cmd, filepath.Join(store.Dir(), "slurm"), o, w)
}
