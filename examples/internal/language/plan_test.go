package language

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/experiment"
)

// writeCorpus writes a small synthetic corpus of 60 stories and returns
// its path.
func writeCorpus(t *testing.T) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	animals := []string{"cat", "dog", "bird", "frog", "fox"}
	verbs := []string{"run", "jump", "sing", "swim", "play"}
	var b strings.Builder
	for i := 0; i < 60; i++ {
		a, v := animals[rng.IntN(5)], verbs[rng.IntN(5)]
		fmt.Fprintf(&b, "Once upon a time, there was a little %s. The %s liked to %s.\n\n", a, a, v)
		fmt.Fprintf(&b, "One day, the %s went to %s with a friend. They were happy.\n\n", a, v)
	}
	p := filepath.Join(t.TempDir(), "corpus.txt")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPlanAppendixK: the default plan is the 11 runs of RESULTS.md's
// tables, in table order, with distinct keys, tags and estimates; -variants
// and -corpora select among them, -seeds multiplies them.
func TestPlanAppendixK(t *testing.T) {
	o := SweepOptions{Preset: "small", Seeds: 1, Seed: 1, DataSeed: 1, Dtype: "float32", TinyStories: "ts.txt"}
	sw, err := NewSweep(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := sw.Plan.Validate(); err != nil {
		t.Fatal(err)
	}
	var labels []string
	for i, r := range sw.Plan.Runs {
		labels = append(labels, r.Label+" "+strings.Join(r.Tags, ","))
		if r.Estimate <= 0 {
			t.Errorf("run %d (%s): estimate %v", i, r.Label, r.Estimate)
		}
	}
	want := []string{
		"tinystories gd seed 1 main,kernels", "tinystories gdff seed 1 main,kernels", "tinystories gpt seed 1 main,kernels",
		"tinystories gd-diagp seed 1 diag-p", "tinystories gd-linear seed 1 kernels", "tinystories gd-rbf seed 1 kernels",
		"tinystories gdff-linear seed 1 kernels", "tinystories gdff-rbf seed 1 kernels",
		"tinystories+gutenberg gd seed 1 combined", "tinystories+gutenberg gdff seed 1 combined", "tinystories+gutenberg gpt seed 1 combined",
	}
	if !slices.Equal(labels, want) {
		t.Errorf("plan:\n%s\nwant\n%s", strings.Join(labels, "\n"), strings.Join(want, "\n"))
	}
	// The combined corpus costs more than TinyStories; gd's run there reads the books.
	if sw.Plan.Runs[8].Estimate <= sw.Plan.Runs[0].Estimate {
		t.Errorf("estimates: combined gd %v <= tinystories gd %v", sw.Plan.Runs[8].Estimate, sw.Plan.Runs[0].Estimate)
	}
	if k := sw.Keys[8]; len(k.Books) != 4 || k.Corpus != "tinystories+gutenberg" {
		t.Errorf("combined run: %+v", k)
	}
	// A run on a GPU is another run; on the CPU the key names no device.
	o.Device = "cuda"
	gpu, err := NewSweep(o)
	if err != nil {
		t.Fatal(err)
	}
	if k := sw.Plan.Runs[0].Key; strings.Contains(k, "device") || gpu.Plan.Runs[0].Key == k || !strings.Contains(gpu.Plan.Runs[0].Key, `"device":"cuda"`) {
		t.Errorf("keys: cpu %s, cuda %s", k, gpu.Plan.Runs[0].Key)
	}
	o.Device = "cpu"
	// The paper's size costs far more than the small preset.
	o.Preset = "paper"
	paper, err := NewSweep(o)
	if err != nil {
		t.Fatal(err)
	}
	if p, s := paper.Plan.Runs[0].Estimate, sw.Plan.Runs[0].Estimate; p < 100*s {
		t.Errorf("paper gd estimate %v, small %v", p, s)
	}
	o.Preset, o.Variants, o.Corpora, o.Seeds = "small", "gd,gpt", "tinystories", 3
	sub, err := NewSweep(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(sub.Plan.Runs) != 6 || sub.Keys[5].Seed != 3 || sub.Keys[5].Variant != "gpt" {
		t.Errorf("-variants gd,gpt -corpora tinystories -seeds 3: %d runs, last %+v", len(sub.Plan.Runs), sub.Keys[len(sub.Keys)-1])
	}
	for _, bad := range []SweepOptions{
		{Preset: "huge", Seeds: 1},
		{Preset: "small", Seeds: 1, Variants: "lstm"},
		{Preset: "small", Seeds: 1, Corpora: "wiki"},
		{Preset: "small", Seeds: 1, Variants: "gd-rbf", Corpora: "tinystories+gutenberg"},
	} {
		if _, err := NewSweep(bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// TestRunAsTrain: a run of the plan prints the report "language train"
// prints for the same settings, digit for digit; its sampled continuation
// is what "language generate" gives with the run's checkpoint; the merge
// writes the tables from the result files, and reruns of the runs done are
// skipped.
func TestRunAsTrain(t *testing.T) {
	corpus := writeCorpus(t)
	dir := t.TempDir()
	var trainOut bytes.Buffer
	err := Train(TrainOptions{Model: "gpt", Preset: "tiny", Corpus: corpus, Split: "auto", Kernel: "softmax", Dtype: "float32",
		Steps: 3, Seed: 1, DataSeed: 1, Stories: 3, Device: "cpu", Decode: data.DecodeConfig{Strategy: data.DecodeBeam, MaxNew: 100, Beams: 3},
		Stdout: &trainOut, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	o := SweepOptions{Preset: "tiny", Variants: "gd,gpt", Corpora: "tinystories", Seeds: 1, Seed: 1, DataSeed: 1, Dtype: "float32",
		Steps: 3, Stories: 3, TinyStories: corpus, Results: filepath.Join(dir, "results"), Ckpt: filepath.Join(dir, "ckpt"),
		Device: "cpu", Quiet: true}
	sw, err := NewSweep(o)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := sw.Run(experiment.Flags{Index: "1"}, flag.NewFlagSet("x", flag.ContinueOnError), &out); err != nil {
		t.Fatal(err)
	}
	report, _, _ := strings.Cut(out.String(), "\nSAMPLE")
	report = strings.TrimPrefix(report, "== run 1: tinystories gpt seed 1\n")
	if report != trainOut.String() {
		t.Errorf("the plan's run printed\n%s\n\"language train\" printed\n%s", report, trainOut.String())
	}
	// The sample, from the checkpoint.
	ckpts, _ := filepath.Glob(filepath.Join(o.Ckpt, "tinystories-gpt-seed-1-*"))
	if len(ckpts) != 1 {
		t.Fatalf("checkpoints %v, want one", ckpts)
	}
	var gen bytes.Buffer
	if err := Generate(GenerateOptions{Ckpt: ckpts[0], Prompt: sampleConfig.Prompt, AllowUnk: true, Decode: sampleConfig.Decode.config(),
		Stdout: &gen, Log: io.Discard}); err != nil {
		t.Fatal(err)
	}
	store, err := experiment.OpenStore(o.Results)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := experiment.Collect(sw.Plan, store)
	if err != nil {
		t.Fatal(err)
	}
	var ro runOutput
	if err := json.Unmarshal(rep.Results[sw.Plan.Runs[1].Key].Output, &ro); err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSuffix(gen.String(), "\n"); sampleConfig.Prompt+ro.Sample != want {
		t.Errorf("sample %q, language generate %q", sampleConfig.Prompt+ro.Sample, want)
	}
	// Everything: run 0 runs, run 1 is skipped, then the merge.
	out.Reset()
	if err := sw.Run(experiment.Flags{}, flag.NewFlagSet("x", flag.ContinueOnError), &out); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Contains(s, "== run 1") || !strings.Contains(s, "== run 0") ||
		!strings.Contains(s, "| GD (softmax, 1 step) |") || !strings.Contains(s, "| GPT (1 layer) |") || strings.Contains(s, "PARTIAL") {
		t.Errorf("the run of the rest and the merge printed\n%s", s)
	}
	md, err := os.ReadFile(filepath.Join(o.Results, "language.md"))
	if err != nil {
		t.Fatal(err)
	}
	merged := out.String()
	merged = merged[strings.Index(merged, "## Section 5.3"):strings.Index(merged, "wrote ")]
	if !strings.HasPrefix(string(md), merged) || !strings.Contains(string(md), "## Generations") {
		t.Errorf("language.md does not start with the printed tables:\n%s", md)
	}
	// -merge alone reprints the same tables.
	out.Reset()
	if err := sw.Run(experiment.Flags{Merge: true}, flag.NewFlagSet("x", flag.ContinueOnError), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), merged) {
		t.Errorf("-merge printed\n%s\nwant the tables\n%s", out.String(), merged)
	}
}

func TestFormats(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {211456, "211,456"}, {25864704, "25,864,704"}, {-1234, "-1,234"}} {
		if got := thousands(c.n); got != c.want {
			t.Errorf("thousands(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	for _, c := range []struct {
		v    float64
		want string
	}{{48.5612, "48.56"}, {109.04, "109.0"}, {255.62, "255.6"}, {4627.3, "4627"}, {3.14159, "3.142"}} {
		if got := sig4(c.v); got != c.want {
			t.Errorf("sig4(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestCommittedRuns: the result files committed under
// docs/results/language-small are runs of today's plan (their keys are
// stable), the plan is complete, and -merge reprints RESULTS.md's rows
// from them.
func TestCommittedRuns(t *testing.T) {
	src := filepath.Join("..", "..", "..", "docs", "results", "language-small", "runs")
	files, err := filepath.Glob(filepath.Join(src, "*.json"))
	if err != nil || len(files) != 11 {
		t.Fatalf("committed runs %v (%v), want 11", files, err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "runs"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "runs", filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sw, err := NewSweep(SweepOptions{Preset: "small", Seeds: 1, Seed: 1, DataSeed: 1, Dtype: "float32", Device: "cpu", Results: dir})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := sw.Run(experiment.Flags{Merge: true}, flag.NewFlagSet("x", flag.ContinueOnError), &out); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"11 runs, 11 done",
		"| GD (softmax, 1 step) | 16,640 | 211,456 | 48.56 | 4.135 (62.5) | 0.168 | 0.211 | 0.727 |",
		"| GD + FF | 16,640 | 244,672 | 39.41 | 3.929 (50.8) | 0.268 | 0.328 | 0.610 |",
		"| GPT (1 layer) | 16,384 | 244,736 | 34.58 | 3.809 (45.1) | 0.218 | 0.294 | 0.597 |",
		"| GD (softmax, 1 step) | 16,640 | 513,984 | 147.2 | 5.003 (148.9) | 0.139 | 0.172 | 0.775 |",
		"| GD + FF | 16,640 | 547,200 | 117.8 | 4.781 (119.2) | 0.199 | 0.269 | 0.599 |",
		"| GD | rbf | 59.91 | 4.366 (78.8) | 0.163 | 0.235 | 0.651 |",
		"| GD + FF | linear | 43.91 | 4.044 (57.1) | 0.133 | 0.162 | 0.803 |",
		"| GD, diagonal P_m | 512 | 211,456 | 109.0 | 4.874 (130.8) | 0.014 | 0.014 | 0.985 |",
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("-merge of the committed runs does not print %q:\n%s", w, out.String())
		}
	}
}
