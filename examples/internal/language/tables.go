package language

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gdattn/gdattn/experiment"
)

// merged is one run done, as the tables show it.
type merged struct {
	Key     RunKey    `json:"config"`
	Label   string    `json:"label"`
	Seconds float64   `json:"seconds"` // wall time of the run
	Output  runOutput `json:"output"`
	rows    []string  // the tables that show it
	name    string    // its name in the tables
	short   string    // its name in the kernels table, beside the kernel
}

// resultsJSON is language.json.
type resultsJSON struct {
	Plan    string   `json:"plan"`
	Partial string   `json:"partial,omitempty"`
	Runs    []merged `json:"runs"`
}

// merge prints the tables of the runs done and writes them to the results
// directory: language.md (the tables and the generations), language.json
// and language.csv.
func (sw *Sweep) merge(rep *experiment.Report, stdout io.Writer) error {
	ks, outs, secs, err := sw.outputs(rep)
	if err != nil {
		return err
	}
	var runs []merged
	for i, k := range ks {
		runs = append(runs, merged{Key: k, Label: k.label(), Seconds: secs[i], Output: outs[i], rows: k.tags(), name: k.tableName(sw.o.Seeds > 1),
			short: map[string]string{"gd": "GD", "gdff": "GD + FF", "gpt": "GPT, 1 layer"}[k.Model]})
		if sw.o.Seeds > 1 {
			runs[len(runs)-1].short += fmt.Sprintf(", seed %d", k.Seed)
		}
	}
	var md bytes.Buffer
	if note := rep.Note(); note != "" {
		fmt.Fprintf(&md, "%s; the tables hold the runs done\n\n", note)
	}
	writeTables(&md, runs)
	if _, err := stdout.Write(md.Bytes()); err != nil {
		return err
	}
	writeGenerations(&md, runs)
	j, err := json.MarshalIndent(resultsJSON{Plan: sw.Plan.Name, Partial: rep.Note(), Runs: runs}, "", "  ")
	if err != nil {
		return err
	}
	c, err := csvTable(runs)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{"language.md", md.Bytes()}, {"language.json", append(j, '\n')}, {"language.csv", c}} {
		p := filepath.Join(sw.o.Results, f.name)
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s\n", p)
	}
	return nil
}

// tableName is the run's model in the tables; withSeed adds its seed.
func (k RunKey) tableName(withSeed bool) string {
	var s string
	switch {
	case k.DiagP:
		s = "GD, diagonal P_m"
	case k.Model == "gpt":
		s = "GPT (1 layer)"
	case k.Model == "gdff":
		s = "GD + FF"
	case k.Kernel == "softmax":
		s = "GD (softmax, 1 step)"
	default:
		s = "GD"
	}
	if withSeed {
		s += fmt.Sprintf(", seed %d", k.Seed)
	}
	return s
}

// writeTables writes the tables of RESULTS.md that have runs: Section 5.3's
// three models, the diagonal-P_m ablation, the kernels of Appendix K and
// the second corpus.
func writeTables(w io.Writer, runs []merged) {
	head := "| model | attention params | other params | test ppl | continuation NLL (ppl) | distinct-1 | distinct-2 | rep-4 | wall time |\n" +
		"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
	row := func(m merged) string {
		r := m.Output.Report
		return fmt.Sprintf("| %s | %s | %s | %s | %.3f (%.1f) | %.3f | %.3f | %.3f | %s |\n", m.name, thousands(r.AttnParams),
			thousands(r.Rest), sig4(r.TestPPL), r.ContNLL, r.ContPPL, r.Distinct1, r.Distinct2, r.Rep4, minutes(m.Seconds))
	}
	sections := []struct {
		tag, title string
	}{
		{tagMain, "Section 5.3: GD, GD + FF and a one-layer GPT on TinyStories"},
		{tagDiagP, "Ablation: diagonal P_m"},
		{tagKernels, "Appendix K: kernels, with and without the feed-forward block (TinyStories)"},
		{tagCombined, "The second corpus: TinyStories + Gutenberg children's books"},
	}
	for _, s := range sections {
		var in []merged
		for _, m := range runs {
			if slices.Contains(m.rows, s.tag) {
				in = append(in, m)
			}
		}
		if len(in) == 0 {
			continue
		}
		fmt.Fprintf(w, "## %s\n\n", s.title)
		for _, c := range corpusLines(in) {
			fmt.Fprintln(w, c)
		}
		fmt.Fprintln(w)
		if s.tag != tagKernels {
			fmt.Fprint(w, head)
			for _, m := range in {
				fmt.Fprint(w, row(m))
			}
			fmt.Fprintln(w)
			continue
		}
		// By model, then kernel, as RESULTS.md.
		slices.SortStableFunc(in, func(a, b merged) int {
			return strings.Compare(a.Key.Model+" "+a.Key.Kernel, b.Key.Model+" "+b.Key.Kernel)
		})
		fmt.Fprint(w, "| model | kernel | test ppl | 2nd-half NLL (ppl) | distinct-1 | distinct-2 | rep-4 | wall time |\n"+
			"| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		for _, m := range in {
			r, kernel := m.Output.Report, m.Key.Kernel
			if kernel == "" {
				kernel = "softmax"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %.3f (%.1f) | %.3f | %.3f | %.3f | %s |\n", m.short, kernel, sig4(r.TestPPL),
				r.ContNLL, r.ContPPL, r.Distinct1, r.Distinct2, r.Rep4, minutes(m.Seconds))
		}
		fmt.Fprintln(w)
	}
}

// corpusLines describes the data of the runs, one line per distinct
// corpus and split.
func corpusLines(runs []merged) []string {
	var out []string
	for _, m := range runs {
		d := m.Output.Data
		s := fmt.Sprintf("%s (preset %s, data seed %d): %s stories, %s tokens; split %d/%d/%d stories; vocabulary %s ids (%s held-out tokens unknown)",
			m.Key.Corpus, m.Key.Preset, m.Key.DataSeed, thousands(d.Stories), thousands(d.Tokens), d.Train, d.Valid, d.Test,
			thousands(d.Vocab), thousands(d.UnkHeld))
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// writeGenerations writes each run's beam-search continuations and its
// sampled continuation.
func writeGenerations(w io.Writer, runs []merged) {
	fmt.Fprint(w, "## Generations\n\n")
	for _, m := range runs {
		fmt.Fprintf(w, "### %s\n\n", m.Label)
		for _, e := range m.Output.Report.Examples {
			fmt.Fprintf(w, "```\n%s\n```\n\n", e)
		}
		fmt.Fprintf(w, "Sampled (%s): %s*%s*\n\n", describe(m.Key.Sample.Decode.config()), m.Key.Sample.Prompt, oneLine(m.Output.Sample))
	}
}

// csvTable is language.csv: a row per run done.
func csvTable(runs []merged) ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write([]string{"corpus", "variant", "model", "kernel", "diag_p", "preset", "seed", "attention_params", "other_params",
		"test_ppl", "test_nll", "continuation_nll", "continuation_ppl", "distinct1", "distinct2", "rep4", "generated_length", "seconds"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, m := range runs {
		k, r := m.Key, m.Output.Report
		w.Write([]string{k.Corpus, k.Variant, k.Model, k.Kernel, strconv.FormatBool(k.DiagP), k.Preset, strconv.FormatUint(k.Seed, 10),
			strconv.Itoa(r.AttnParams), strconv.Itoa(r.Rest), f(r.TestPPL), f(r.TestNLL), f(r.ContNLL), f(r.ContPPL),
			f(r.Distinct1), f(r.Distinct2), f(r.Rep4), f(r.GenLen), f(m.Seconds)})
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

// sig4 formats a perplexity with four significant digits (48.56, 109.0).
func sig4(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 100:
		return fmt.Sprintf("%.1f", v)
	case v >= 10:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func minutes(sec float64) string { return fmt.Sprintf("%.1f min", sec/60) }
