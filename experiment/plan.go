package experiment

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Run is one independent run of a plan.
type Run struct {
	// Key identifies the run: the compact JSON of Config ([Key]).
	Key string `json:"key"`
	// Config is the run's configuration, every setting that changes its
	// result.
	Config json.RawMessage `json:"config"`
	// Label is a short human-readable description.
	Label string `json:"label"`
	// Estimate is the estimated CPU time of the run in seconds (0: unknown).
	Estimate float64 `json:"estimate_seconds"`
	// Tags name the parts of the experiment (figures, tables) that use the
	// run.
	Tags []string `json:"tags,omitempty"`
}

// Key returns the canonical key of a run configuration: its compact JSON.
// Two configurations have the same key exactly when they encode to the same
// JSON, so a configuration should hold every setting that changes the
// result. A field added with omitempty keeps old keys valid while it holds
// its zero value.
func Key(cfg any) (string, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("experiment: key: %w", err)
	}
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		return "", fmt.Errorf("experiment: key: %w", err)
	}
	return c.String(), nil
}

// FileName is the name of the result file of the run with key (without
// the directory): the first 24 hex digits of the key's SHA-256, ".json".
func FileName(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:12]) + ".json"
}

// Plan is an experiment: an ordered list of independent runs with distinct
// keys. The order is the order a single worker runs them in, and run i of
// the plan is what -index i runs.
type Plan struct {
	Name string `json:"name"`
	Runs []Run  `json:"runs"`
}

// Add appends the run of configuration cfg, unless the plan has it already;
// then it adds tags to that run's. It returns the run's index.
func (p *Plan) Add(cfg any, label string, estimate float64, tags ...string) (int, error) {
	key, err := Key(cfg)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(estimate) || estimate < 0 {
		return 0, fmt.Errorf("experiment: run %s: estimate %v, want a finite value >= 0", label, estimate)
	}
	for i, r := range p.Runs {
		if r.Key == key {
			for _, t := range tags {
				if !slices.Contains(r.Tags, t) {
					p.Runs[i].Tags = append(p.Runs[i].Tags, t)
				}
			}
			return i, nil
		}
	}
	p.Runs = append(p.Runs, Run{Key: key, Config: json.RawMessage(key), Label: label, Estimate: estimate,
		Tags: slices.Clone(tags)})
	return len(p.Runs) - 1, nil
}

// Index returns the index of the run with key, or -1.
func (p Plan) Index(key string) int {
	for i, r := range p.Runs {
		if r.Key == key {
			return i
		}
	}
	return -1
}

// Estimate is the plan's estimated CPU time in seconds, and the largest
// estimate of one run.
func (p Plan) Estimate() (total, longest float64) {
	for _, r := range p.Runs {
		total += r.Estimate
		longest = max(longest, r.Estimate)
	}
	return total, longest
}

// Validate checks that the plan has runs and that their keys are distinct
// and match their configurations.
func (p Plan) Validate() error {
	if len(p.Runs) == 0 {
		return errors.New("experiment: the plan has no runs")
	}
	seen := map[string]int{}
	for i, r := range p.Runs {
		if j, ok := seen[r.Key]; ok {
			return fmt.Errorf("experiment: runs %d and %d have the same key %s", j, i, r.Key)
		}
		seen[r.Key] = i
		var c bytes.Buffer
		if err := json.Compact(&c, r.Config); err != nil || c.String() != r.Key {
			return fmt.Errorf("experiment: run %d: key %s does not match its configuration", i, r.Key)
		}
	}
	return nil
}

// WriteText writes the plan as text: a header with the count and the
// estimated CPU time, then a line per run (index, estimate, label, key).
// done, if not nil, marks the runs that have a result.
func (p Plan) WriteText(w io.Writer, done func(key string) bool) error {
	total, longest := p.Estimate()
	ndone := 0
	if done != nil {
		for _, r := range p.Runs {
			if done(r.Key) {
				ndone++
			}
		}
	}
	if total > 0 {
		fmt.Fprintf(w, "plan %s: %d runs, estimated %s of CPU time (%.2f CPU-hours; longest run %s)",
			p.Name, len(p.Runs), FormatSeconds(total), total/3600, FormatSeconds(longest))
	} else {
		fmt.Fprintf(w, "plan %s: %d runs (no CPU-time estimates)", p.Name, len(p.Runs))
	}
	if done != nil {
		fmt.Fprintf(w, ", %d done", ndone)
	}
	fmt.Fprintln(w)
	for i, r := range p.Runs {
		mark := ""
		if done != nil && done(r.Key) {
			mark = " done"
		}
		tags := ""
		if len(r.Tags) > 0 {
			tags = " [" + strings.Join(r.Tags, ",") + "]"
		}
		est := "~" + FormatSeconds(r.Estimate)
		if r.Estimate == 0 {
			est = "?" // no estimate
		}
		if _, err := fmt.Fprintf(w, "%4d  %-9s %s%s%s  %s\n", i, est, r.Label, tags, mark, r.Key); err != nil {
			return err
		}
	}
	return nil
}

// PlanJSON is what WriteJSON writes.
type PlanJSON struct {
	Name            string  `json:"name"`
	Count           int     `json:"count"`
	EstimateSeconds float64 `json:"estimate_seconds"`
	LongestSeconds  float64 `json:"longest_seconds"`
	Runs            []Run   `json:"runs"`
	// Done lists the indices of the runs that have a result (with a store).
	Done []int `json:"done,omitempty"`
}

// WriteJSON writes the plan as indented JSON (PlanJSON).
func (p Plan) WriteJSON(w io.Writer, done func(key string) bool) error {
	total, longest := p.Estimate()
	out := PlanJSON{Name: p.Name, Count: len(p.Runs), EstimateSeconds: total, LongestSeconds: longest, Runs: p.Runs}
	if done != nil {
		for i, r := range p.Runs {
			if done(r.Key) {
				out.Done = append(out.Done, i)
			}
		}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// FormatSeconds formats a duration in seconds for people: 1.5s, 2m30s,
// 3h20m.
func FormatSeconds(sec float64) string {
	d := time.Duration(sec * float64(time.Second))
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute).String()
	case d >= time.Minute:
		return d.Round(time.Second).String()
	}
	return d.Round(100 * time.Millisecond).String()
}
