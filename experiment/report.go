package experiment

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Report is the state of a plan's runs in a store (Collect).
type Report struct {
	Plan Plan
	// Results holds the result of every done run, by key.
	Results map[string]Result
	// Done, Missing and Failed are indices into Plan.Runs: the runs with a
	// result, those without, and of those the ones whose last attempt
	// failed (Failed is a subset of Missing).
	Done, Missing, Failed []int
	// Failures holds the failure of every failed run, by key.
	Failures map[string]Result
	// Unreadable and Temporary are as in Contents.
	Unreadable, Temporary []string
}

// Collect reads the store's results of plan's runs.
func Collect(plan Plan, store *Store) (*Report, error) {
	c, err := store.Load()
	if err != nil {
		return nil, err
	}
	rep := &Report{Plan: plan, Results: map[string]Result{}, Failures: map[string]Result{},
		Unreadable: c.Unreadable, Temporary: c.Temporary}
	for i, r := range plan.Runs {
		if res, ok := c.Results[r.Key]; ok {
			rep.Results[r.Key] = res
			rep.Done = append(rep.Done, i)
			continue
		}
		rep.Missing = append(rep.Missing, i)
		if f, ok := c.Failures[r.Key]; ok {
			rep.Failures[r.Key] = f
			rep.Failed = append(rep.Failed, i)
		}
	}
	return rep, nil
}

// Complete reports whether every run of the plan has a result.
func (r *Report) Complete() bool { return len(r.Missing) == 0 }

// Get returns the result of the run with key.
func (r *Report) Get(key string) (Result, bool) {
	res, ok := r.Results[key]
	return res, ok
}

// Check returns an error naming the missing and failed runs, unless the
// plan is complete or partial is set (a partial report was asked for).
func (r *Report) Check(partial bool) error {
	if r.Complete() || partial {
		return nil
	}
	return fmt.Errorf("%d of %d runs of plan %s have no result (%d failed): indices %s; run them (-index, -shard, or resubmit), or ask for a partial report (-partial)",
		len(r.Missing), len(r.Plan.Runs), r.Plan.Name, len(r.Failed), IndexList(r.Missing))
}

// Note is the line a partial report carries: empty when the plan is
// complete, otherwise how many runs it lacks.
func (r *Report) Note() string {
	if r.Complete() {
		return ""
	}
	return fmt.Sprintf("PARTIAL: %d of %d runs of plan %s are done; %d missing (indices %s)",
		len(r.Done), len(r.Plan.Runs), r.Plan.Name, len(r.Missing), IndexList(r.Missing))
}

// WriteStatus writes the counts, the missing runs, the failed runs with
// their errors and any unreadable or temporary files.
func (r *Report) WriteStatus(w io.Writer) {
	fmt.Fprintf(w, "plan %s: %d runs, %d done, %d missing, %d failed\n", r.Plan.Name, len(r.Plan.Runs), len(r.Done), len(r.Missing), len(r.Failed))
	if len(r.Missing) > 0 {
		fmt.Fprintf(w, "missing: %s\n", IndexList(r.Missing))
	}
	for _, i := range r.Failed {
		run := r.Plan.Runs[i]
		fmt.Fprintf(w, "failed: %d (%s): %s\n", i, run.Label, firstLine(r.Failures[run.Key].Error))
	}
	for _, p := range r.Unreadable {
		fmt.Fprintf(w, "unreadable: %s\n", p)
	}
	if len(r.Temporary) > 0 {
		fmt.Fprintf(w, "%d temporary file(s) of interrupted writes in the runs directory (harmless; removable when no worker runs)\n", len(r.Temporary))
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// IndexList writes sorted indices as ranges, as Slurm's --array takes them:
// "0-7,9,11-12".
func IndexList(ix []int) string {
	var b strings.Builder
	for i := 0; i < len(ix); {
		j := i
		for j+1 < len(ix) && ix[j+1] == ix[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(ix[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(ix[j]))
		}
		i = j + 1
	}
	return b.String()
}
