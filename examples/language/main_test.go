package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/tf"
	"github.com/gdattn/gdattn/train"
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

// TestLibraryGeneratesAsCLI checks that a checkpoint written by "language
// train" loads with gd.LoadLM / tf.LoadGPT, codec included, and that the
// library's generation from the loaded model gives exactly the text
// "language generate -ckpt" prints, for each strategy.
func TestLibraryGeneratesAsCLI(t *testing.T) {
	corpus := writeCorpus(t)
	quiet(t)
	for _, model := range []string{"gd", "gpt"} {
		ckpt := filepath.Join(t.TempDir(), model)
		if err := cmdTrain([]string{"-model", model, "-preset", "tiny", "-corpus", corpus, "-out", ckpt, "-steps", "6", "-no-eval"}); err != nil {
			t.Fatal(err)
		}
		var m train.LM
		var err error
		if model == "gd" {
			m, err = gd.LoadLM(ckpt, gd.LMOptions{Batch: 1, Next: true})
		} else {
			m, err = tf.LoadGPT(ckpt, tf.GPTOptions{Batch: 1, Next: true})
		}
		if err != nil {
			t.Fatal(err)
		}
		prompt := "Once upon a time, there was a little"
		for _, c := range []struct {
			args []string
			cfg  data.DecodeConfig
		}{
			{[]string{"-max-new", "12"}, data.DecodeConfig{MaxNew: 12}},
			{[]string{"-max-new", "12", "-strategy", "sample", "-top-k", "5", "-temperature", "0.8", "-sample-seed", "7"},
				data.DecodeConfig{Strategy: data.DecodeSample, MaxNew: 12, TopK: 5, Temperature: 0.8, Seed: 7}},
			{[]string{"-max-new", "12", "-strategy", "beam", "-beams", "3"}, data.DecodeConfig{Strategy: data.DecodeBeam, MaxNew: 12, Beams: 3}},
		} {
			cli := captureStdout(t, func() error {
				return cmdGenerate(append([]string{"-ckpt", ckpt, "-prompt", prompt}, c.args...))
			})
			text, err := train.GenerateText(m, prompt, c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			cli = strings.TrimSuffix(strings.TrimSuffix(cli, "\n"), data.EOTText)
			if got := prompt + text.Text; got != cli {
				t.Errorf("%s %v: the library generates %q, language generate printed %q", model, c.args, got, cli)
			}
		}
	}
}

// captureStdout returns what run writes to os.Stdout.
func captureStdout(t *testing.T, run func() error) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = f
	err = run()
	os.Stdout = old
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	return string(b)
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
