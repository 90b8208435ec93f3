package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/graph"
)

// writeCorpus writes a small synthetic corpus of 60 stories (blank lines
// between paragraphs, every story opening with "Once upon a time") and
// returns its path.
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

func tinyRun(t *testing.T, model, corpus string) runConfig {
	t.Helper()
	p := presets["tiny"]
	rc := runConfig{Model: model, Preset: "tiny", Dtype: "float32", Seed: 3, Train: p.train,
		Data: dataConfig{Corpus: corpus, Split: "auto", Seed: 1, ValidFrac: 0.1, TestFrac: 0.1, Restrict: true, MinCount: 1}}
	rc.Train.Steps, rc.Train.Warmup, rc.Train.CkptEvery, rc.Train.EvalEvery = 8, 2, 4, 4
	return rc
}

// TestResumeEqualsUninterrupted trains 8 steps in one go, and 4 steps then
// (in a new trainer, from the checkpoint written at step 4) the last 4: the
// parameters and optimiser moments must be the same, bit for bit.
func TestResumeEqualsUninterrupted(t *testing.T) {
	corpus := writeCorpus(t)
	for _, model := range []string{"gd", "gdff", "gpt"} {
		t.Run(model, func(t *testing.T) {
			rc := tinyRun(t, model, corpus)
			ds, err := loadData(rc.Data)
			if err != nil {
				t.Fatal(err)
			}
			rc.Vocab = ds.Codec.Vocab.Size()
			if err := modelConfigs(&rc, presets["tiny"], "softmax", false); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			train := func(out string, ckpt *checkpoint.Checkpoint, stopAfter int) *trainer {
				tr, err := newTrainer(rc, ds, ckpt, out, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				tr.stopAfter = stopAfter
				if err := tr.run(); err != nil {
					t.Fatal(err)
				}
				return tr
			}
			whole := train(filepath.Join(dir, "whole"), nil, 0)
			defer whole.close()
			first := train(filepath.Join(dir, "part"), nil, 6) // killed at step 6, after the step-4 checkpoint
			first.close()
			c, rc2, err := readRun(filepath.Join(dir, "part"))
			if err != nil {
				t.Fatal(err)
			}
			if c.Optim.Step != 4 {
				t.Fatalf("checkpoint at step %d, want 4", c.Optim.Step)
			}
			if err := checkVocab(c, ds.Codec.Vocab); err != nil {
				t.Fatal(err)
			}
			rc = rc2
			resumed := train(filepath.Join(dir, "part"), c, 0)
			defer resumed.close()
			for _, p := range whole.m.Scope().Params() {
				q, _ := resumed.m.Scope().Lookup(p.Name())
				a, _ := graph.Values(p)
				b, _ := graph.Values(q)
				if !slices.Equal(a, b) {
					t.Errorf("parameter %s differs after resuming", p.Name())
				}
			}
			sa, err := whole.tr.State()
			if err != nil {
				t.Fatal(err)
			}
			sb, err := resumed.tr.State()
			if err != nil {
				t.Fatal(err)
			}
			if sa.Step != 8 || sb.Step != 8 {
				t.Errorf("steps %d and %d, want 8", sa.Step, sb.Step)
			}
			for name, m := range sa.M {
				if !slices.Equal(m, sb.M[name]) || !slices.Equal(sa.V[name], sb.V[name]) {
					t.Errorf("optimiser moments of %s differ after resuming", name)
				}
			}
		})
	}
}

// TestCommands runs train, evaluate and generate end to end on the
// synthetic corpus, then checks that bad input gives errors, not panics.
func TestCommands(t *testing.T) {
	corpus := writeCorpus(t)
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "ckpt")
	quiet(t)
	if err := cmdTrain([]string{"-model", "gd", "-preset", "tiny", "-corpus", corpus, "-out", ckpt, "-steps", "6", "-stories", "3", "-max-new", "4"}); err != nil {
		t.Fatal(err)
	}
	if err := cmdEvaluate([]string{"-ckpt", ckpt, "-stories", "2", "-max-new", "3", "-strategy", "greedy"}); err != nil {
		t.Fatal(err)
	}
	if err := cmdGenerate([]string{"-ckpt", ckpt, "-prompt", "Once upon a time, there was a little", "-max-new", "5", "-strategy", "sample", "-top-k", "3"}); err != nil {
		t.Fatal(err)
	}
	if err := cmdTrain([]string{"-resume", ckpt, "-steps", "8", "-no-eval"}); err != nil {
		t.Fatal(err)
	}

	empty := filepath.Join(dir, "empty.txt")
	os.WriteFile(empty, []byte("\n\n"), 0o644)
	corrupt := filepath.Join(dir, "corrupt")
	copyDir(t, ckpt, corrupt)
	npys, _ := filepath.Glob(filepath.Join(corrupt, "*.npy"))
	if err := os.Truncate(npys[0], 100); err != nil {
		t.Fatal(err)
	}
	noConfig := filepath.Join(dir, "noconfig")
	copyDir(t, ckpt, noConfig)
	os.Remove(filepath.Join(noConfig, "config.json"))

	for _, c := range []struct {
		name string
		run  func([]string) error
		args []string
		want string
	}{
		{"missing corpus", cmdTrain, []string{"-preset", "tiny", "-corpus", filepath.Join(dir, "nope.txt")}, "does not exist"},
		{"empty corpus", cmdTrain, []string{"-preset", "tiny", "-corpus", empty}, "holds no story"},
		{"unknown model", cmdTrain, []string{"-preset", "tiny", "-corpus", corpus, "-model", "rnn"}, "unknown -model"},
		{"unknown preset", cmdTrain, []string{"-preset", "huge", "-corpus", corpus}, "unknown -preset"},
		{"unknown prompt tokens", cmdGenerate, []string{"-ckpt", ckpt, "-prompt", "Quantum chromodynamics"}, "not in the model's vocabulary"},
		{"empty prompt", cmdGenerate, []string{"-ckpt", ckpt, "-prompt", " "}, "prompt is empty"},
		{"corrupt checkpoint", cmdGenerate, []string{"-ckpt", corrupt}, "truncated"},
		{"corrupt checkpoint", cmdEvaluate, []string{"-ckpt", corrupt}, "truncated"},
		{"no config", cmdEvaluate, []string{"-ckpt", noConfig}, "config.json"},
		{"missing checkpoint", cmdTrain, []string{"-resume", filepath.Join(dir, "none")}, "no such file"},
		{"bad strategy", cmdGenerate, []string{"-ckpt", ckpt, "-strategy", "nucleus"}, "unknown strategy"},
	} {
		err := c.run(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
	// With -allow-unk the unknown tokens become <|unk|> and generation runs.
	if err := cmdGenerate([]string{"-ckpt", ckpt, "-prompt", "Quantum chromodynamics", "-allow-unk", "-max-new", "3"}); err != nil {
		t.Errorf("-allow-unk: %v", err)
	}
}

// TestTinyStories trains each model a few steps on the shared TinyStories
// file and evaluates it (skipped without the file, and under -short).
func TestTinyStories(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	corpus := filepath.Join("..", "..", defaultCorpus)
	if _, err := os.Stat(corpus); err != nil {
		t.Skipf("shared TinyStories file not found at %s: %v", corpus, err)
	}
	quiet(t)
	for _, m := range []string{"gd", "gdff", "gpt"} {
		if err := cmdTrain([]string{"-model", m, "-preset", "tiny", "-corpus", corpus, "-steps", "3", "-stories", "4", "-max-new", "5"}); err != nil {
			t.Errorf("%s: %v", m, err)
		}
	}
}

// quiet sends the commands' stdout and stderr to /dev/null for the test.
func quiet(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	out, errw := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = null, null
	t.Cleanup(func() { os.Stdout, os.Stderr = out, errw; null.Close() })
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
