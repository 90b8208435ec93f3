package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/tf"
)

var (
	_ LM = (*gd.LM)(nil)
	_ LM = (*tf.GPT)(nil)
)

// storyData tokenises 60 small synthetic stories (seeded) into text data
// with a restricted vocabulary.
func storyData(t testing.TB) *data.TextData {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	animals := []string{"cat", "dog", "bird", "frog", "fox"}
	verbs := []string{"run", "jump", "sing", "swim", "play"}
	var stories []string
	for i := 0; i < 60; i++ {
		a, v := animals[rng.IntN(5)], verbs[rng.IntN(5)]
		stories = append(stories, fmt.Sprintf("Once upon a time, there was a little %s. The %s liked to %s. One day, the %s went to %s with a friend.", a, a, v, a, v))
	}
	tok, err := data.NewGPT2Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	ds, err := data.NewTextData(stories, tok, data.TextDataConfig{Seed: 1, ValidFrac: 0.1, TestFrac: 0.1, Restrict: true, MinCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// lmFamily builds and loads one family's model.
type lmFamily struct {
	name  string
	build func(s *graph.Scope, vocab, batch int, next bool) (LM, error)
	load  func(dir string, batch int, next bool) (LM, error)
	// from builds the model from a checkpoint already read.
	from func(c *checkpoint.Checkpoint, batch int, next bool) (LM, error)
	// rebuild is the model's Rebuild method.
	rebuild func(m LM, batch int, next bool) (LM, error)
}

var lmFamilies = []lmFamily{
	{
		name: "gd",
		build: func(s *graph.Scope, vocab, batch int, next bool) (LM, error) {
			return gd.NewLM(s.Sub("gd"), gd.LMConfig{Vocab: vocab, DPrime: 8, Context: 12, Heads: 2}, gd.LMOptions{Batch: batch, Next: next})
		},
		load: func(dir string, batch int, next bool) (LM, error) {
			return gd.LoadLM(dir, gd.LMOptions{Batch: batch, Next: next})
		},
		from: func(c *checkpoint.Checkpoint, batch int, next bool) (LM, error) {
			return gd.LMFromCheckpoint(c, gd.LMOptions{Batch: batch, Next: next})
		},
		rebuild: func(m LM, batch int, next bool) (LM, error) {
			return m.(*gd.LM).Rebuild(gd.LMOptions{Batch: batch, Next: next})
		},
	},
	{
		name: "gdff",
		build: func(s *graph.Scope, vocab, batch int, next bool) (LM, error) {
			return gd.NewLM(s.Sub("gdff"), gd.LMConfig{Vocab: vocab, DPrime: 8, Context: 12, Heads: 2, FF: true}, gd.LMOptions{Batch: batch, Next: next})
		},
		load: func(dir string, batch int, next bool) (LM, error) {
			return gd.LoadLM(dir, gd.LMOptions{Batch: batch, Next: next})
		},
		from: func(c *checkpoint.Checkpoint, batch int, next bool) (LM, error) {
			return gd.LMFromCheckpoint(c, gd.LMOptions{Batch: batch, Next: next})
		},
		rebuild: func(m LM, batch int, next bool) (LM, error) {
			return m.(*gd.LM).Rebuild(gd.LMOptions{Batch: batch, Next: next})
		},
	},
	{
		name: "gpt",
		build: func(s *graph.Scope, vocab, batch int, next bool) (LM, error) {
			return tf.NewGPT(s.Sub("gpt"), tf.GPTConfig{Vocab: vocab, DModel: 8, Context: 12, Heads: 2}, tf.GPTOptions{Batch: batch, Next: next})
		},
		load: func(dir string, batch int, next bool) (LM, error) {
			return tf.LoadGPT(dir, tf.GPTOptions{Batch: batch, Next: next})
		},
		from: func(c *checkpoint.Checkpoint, batch int, next bool) (LM, error) {
			return tf.GPTFromCheckpoint(c, tf.GPTOptions{Batch: batch, Next: next})
		},
		rebuild: func(m LM, batch int, next bool) (LM, error) {
			return m.(*tf.GPT).Rebuild(tf.GPTOptions{Batch: batch, Next: next})
		},
	},
}

func tinyLMConfig(dir string) LMConfig {
	return LMConfig{Steps: 8, Warmup: 2, LR: 3e-3, MinLR: 3e-4, WeightDecay: 1e-2, ClipNorm: 1, Seed: 5,
		EvalEvery: 4, EvalBatches: 2, Dir: dir, CkptEvery: 4, Run: map[string]any{"note": "test"}}
}

func newLM(t *testing.T, f lmFamily, ds *data.TextData, batch int, next bool) LM {
	t.Helper()
	s, err := graph.NewScope(graph.Float32, 3)
	if err != nil {
		t.Fatal(err)
	}
	m, err := f.build(s, ds.Codec.Vocab.Size(), batch, next)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestLMTrainerResume trains 8 steps in one go, and 6 steps (checkpoint at
// 4) then, in a new trainer on the model loaded from that checkpoint, the
// rest: the parameters and optimiser moments must be the same bit for bit,
// whether the checkpoint is read by the loader and by Resume (dir) or
// read once and handed to both (FromCheckpoint, ResumeFrom). The resumed
// checkpoint also holds the codec and the run settings.
func TestLMTrainerResume(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: training")
	}
	ds := storyData(t)
	for _, f := range lmFamilies {
		t.Run(f.name, func(t *testing.T) {
			dir := t.TempDir()
			fit := func(m LM, cfg LMConfig, resume func(*LMTrainer) error, stopAt int) *LMTrainer {
				tr, err := NewLMTrainer(m, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if resume != nil {
					if err := resume(tr); err != nil {
						t.Fatal(err)
					}
				}
				tr.stopAt = stopAt
				if err := tr.FitText(ds); err != nil {
					t.Fatal(err)
				}
				return tr
			}
			whole := fit(newLM(t, f, ds, 4, false), tinyLMConfig(filepath.Join(dir, "whole")), nil, 0)
			defer whole.Close()
			for _, route := range []string{"dir", "read once"} {
				part := filepath.Join(dir, "part-"+strings.ReplaceAll(route, " ", "-"))
				fit(newLM(t, f, ds, 4, false), tinyLMConfig(part), nil, 6).Close() // killed at 6, after the step-4 checkpoint
				var run map[string]any
				if fam, step, err := ReadRun(part, &run); err != nil || step != 4 || run["note"] != "test" || (fam == "tf_gpt") != (f.name == "gpt") {
					t.Fatalf("ReadRun: family %q, step %d, run %v, err %v; want step 4", fam, step, run, err)
				}
				var loaded LM
				var resume func(*LMTrainer) error
				if route == "dir" {
					m, err := f.load(part, 4, false)
					if err != nil {
						t.Fatal(err)
					}
					loaded, resume = m, func(tr *LMTrainer) error { return tr.Resume(part) }
				} else {
					c, err := checkpoint.Read(part)
					if err != nil {
						t.Fatal(err)
					}
					var run2 map[string]any
					if fam, step, err := DecodeRun(c.Header(), &run2); err != nil || step != 4 || run2["note"] != "test" || (fam == "tf_gpt") != (f.name == "gpt") {
						t.Fatalf("DecodeRun: family %q, step %d, run %v, err %v; want step 4", fam, step, run2, err)
					}
					m, err := f.from(c, 4, false)
					if err != nil {
						t.Fatal(err)
					}
					loaded, resume = m, func(tr *LMTrainer) error { return tr.ResumeFrom(c) }
				}
				if c := loaded.TextCodec(); c == nil || !slices.Equal(c.Vocab.GPTIDs(), ds.Codec.Vocab.GPTIDs()) {
					t.Fatalf("%s: the loaded model's codec %v, want the data's", route, c)
				}
				resumed := fit(loaded, tinyLMConfig(part), resume, 0)
				defer resumed.Close()
				if st := resumed.Trainer().StepCount(); st != 8 {
					t.Fatalf("%s: resumed at step %d, want 8", route, st)
				}
				for _, p := range whole.Model().Scope().Params() {
					q, ok := resumed.Model().Scope().Lookup(p.Name())
					if !ok {
						t.Fatalf("%s: parameter %s missing after loading", route, p.Name())
					}
					a, _ := graph.Values(p)
					b, _ := graph.Values(q)
					if !slices.Equal(a, b) {
						t.Errorf("%s: parameter %s differs after resuming", route, p.Name())
					}
				}
				sa, _ := whole.Trainer().State()
				sb, _ := resumed.Trainer().State()
				for name, m := range sa.M {
					if !slices.Equal(m, sb.M[name]) || !slices.Equal(sa.V[name], sb.V[name]) {
						t.Errorf("%s: optimiser moments of %s differ after resuming", route, name)
					}
				}
			}
		})
	}
}

// TestLMResumeChecks: ReadRun reads config.json only (a damaged moment
// file does not stop it; Resume then names the file), and ResumeFrom
// refuses a nil checkpoint and one without optimiser state.
func TestLMResumeChecks(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: training")
	}
	ds := storyData(t)
	f := lmFamilies[0]
	dir := filepath.Join(t.TempDir(), "ckpt")
	cfg := tinyLMConfig(dir)
	cfg.Steps, cfg.Warmup, cfg.CkptEvery = 2, 1, 2
	tr, err := NewLMTrainer(newLM(t, f, ds, 4, false), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.FitText(ds); err != nil {
		t.Fatal(err)
	}
	moments, err := filepath.Glob(filepath.Join(dir, "optim", "v", "*.npy"))
	if err != nil || len(moments) == 0 {
		t.Fatalf("no moment files under %s: %v", dir, err)
	}
	if err := os.WriteFile(moments[0], []byte("damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	var run map[string]any
	if _, step, err := ReadRun(dir, &run); err != nil || step != 2 {
		t.Errorf("ReadRun with a damaged moment file: step %d, %v; want step 2, nil (it reads config.json only)", step, err)
	}
	if err := tr.Resume(dir); err == nil || !strings.Contains(err.Error(), filepath.Base(moments[0])) {
		t.Errorf("Resume with a damaged moment file: %v, want an error naming %s", err, filepath.Base(moments[0]))
	}
	if err := tr.ResumeFrom(nil); err == nil {
		t.Error("ResumeFrom(nil): nil error")
	}
	plain := filepath.Join(t.TempDir(), "plain")
	if err := tr.Model().(*gd.LM).Save(plain); err != nil {
		t.Fatal(err)
	}
	c, err := checkpoint.Read(plain)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.ResumeFrom(c); err == nil || !strings.Contains(err.Error(), "no optimiser state") {
		t.Errorf("ResumeFrom a checkpoint without optimiser state: %v", err)
	}
	if _, _, err := DecodeRun(nil, &run); err == nil {
		t.Error("DecodeRun(nil): nil error")
	}
}

// TestLMGenerateRoundTrip trains a few steps, saves with the model's Save,
// loads a generation graph, and checks that it generates what the trained
// model's Rebuild generates, for each strategy, from ids and from text;
// that a context longer than the window is cropped to its last T ids; and
// that the trainer's perplexity is finite.
func TestLMGenerateRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: training")
	}
	ds := storyData(t)
	for _, f := range lmFamilies {
		t.Run(f.name, func(t *testing.T) {
			m := newLM(t, f, ds, 4, false)
			cfg := tinyLMConfig("")
			tr, err := NewLMTrainer(m, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			if err := tr.FitText(ds); err != nil {
				t.Fatal(err)
			}
			if l, err := tr.Loss(ds.TestStream, 0); err != nil || math.IsNaN(l) || l <= 0 {
				t.Fatalf("test loss %v, %v", l, err)
			}
			dir := filepath.Join(t.TempDir(), "ckpt")
			if err := m.(interface{ Save(string) error }).Save(dir); err != nil {
				t.Fatal(err)
			}
			gen, err := f.rebuild(m, 3, true)
			if err != nil {
				t.Fatal(err)
			}
			loaded, err := f.load(dir, 2, true)
			if err != nil {
				t.Fatal(err)
			}
			prompts := [][]int{ds.Test[0].IDs[:5], ds.Test[1].IDs[:3], ds.Valid[0].IDs[:7]}
			for _, dc := range []data.DecodeConfig{
				{MaxNew: 6, Stop: data.StopNever()},
				{Strategy: data.DecodeSample, MaxNew: 6, TopK: 4, Temperature: 0.7, Seed: 9, Stop: data.StopNever()},
				{Strategy: data.DecodeBeam, MaxNew: 6, Beams: 3, Stop: data.StopNever()},
			} {
				a, err := Generate(gen, prompts, dc)
				if err != nil {
					t.Fatal(err)
				}
				b, err := Generate(loaded, prompts, dc)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.EqualFunc(a, b, slices.Equal[[]int]) {
					t.Errorf("%s: the loaded model generates %v, the trained one %v", dc.Strategy, b, a)
				}
				for _, g := range a {
					if len(g) != 6 {
						t.Errorf("%s: generated %d ids, want 6", dc.Strategy, len(g))
					}
				}
				ta, err := GenerateText(gen, "Once upon a time, there was a little", dc)
				if err != nil {
					t.Fatal(err)
				}
				tb, err := GenerateText(loaded, "Once upon a time, there was a little", dc)
				if err != nil || ta != tb {
					t.Errorf("%s: text %q and %q (%v)", dc.Strategy, ta, tb, err)
				}
			}
			// Cropping: a context of 20 ids gives the logits of its last 12.
			g, err := NewGenerator(loaded)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			long := ds.TrainStream[:20]
			out, err := g.Next([][]int{long, long[8:], long[3:9]})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(out[0], out[1]) {
				t.Error("a context longer than the window is not cropped to its last ContextLen ids")
			}
			if slices.Equal(out[0], out[2]) {
				t.Error("different contexts give the same logits")
			}
			if _, err := g.GenerateText("Quantum chromodynamics", data.DecodeConfig{}); err == nil || !strings.Contains(err.Error(), "not in the model's vocabulary") {
				t.Errorf("unknown prompt tokens: err = %v", err)
			}
		})
	}
}

// TestLMErrors: bad configs and the wrong graph are errors, not panics; a
// non-finite parameter stops Fit at the first step with an error.
func TestLMErrors(t *testing.T) {
	ds := storyData(t)
	f := lmFamilies[0]
	m := newLM(t, f, ds, 2, false)
	next := newLM(t, f, ds, 2, true)
	good := tinyLMConfig("")
	for _, c := range []struct {
		name string
		m    LM
		edit func(*LMConfig)
		want string
	}{
		{"nil model", nil, func(*LMConfig) {}, "model is nil"},
		{"generation graph", next, func(*LMConfig) {}, "generation graph"},
		{"no steps", m, func(c *LMConfig) { c.Steps = 0 }, "Steps"},
		{"warmup", m, func(c *LMConfig) { c.Warmup = 8 }, "Warmup"},
		{"lr", m, func(c *LMConfig) { c.LR = math.NaN() }, "LR"},
		{"min lr", m, func(c *LMConfig) { c.MinLR = 1 }, "MinLR"},
		{"pad", m, func(c *LMConfig) { c.Pad = -1 }, "Pad"},
		{"eval", m, func(c *LMConfig) { c.EvalEvery = -1 }, "EvalEvery"},
	} {
		cfg := good
		c.edit(&cfg)
		if tr, err := NewLMTrainer(c.m, cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
			if tr != nil {
				tr.Close()
			}
		}
	}
	if _, err := NewGenerator(m); err == nil || !strings.Contains(err.Error(), "training graph") {
		t.Errorf("generator on a training graph: err = %v", err)
	}
	if _, err := GenerateText(next, "Once", data.DecodeConfig{}); err == nil || !strings.Contains(err.Error(), "no text codec") {
		t.Errorf("text without a codec: err = %v", err)
	}
	if _, err := Generate(next, [][]int{{}}, data.DecodeConfig{}); err == nil {
		t.Error("empty prompt: no error")
	}
	tr, err := NewLMTrainer(m, good)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Fit([]int{1, 2}, nil); err == nil {
		t.Error("a stream shorter than a window: no error")
	}
	p := m.Scope().Params()[0]
	v, _ := graph.Values(p)
	v[0] = math.NaN()
	if err := graph.SetValue(p, v); err != nil {
		t.Fatal(err)
	}
	if err := tr.Fit(ds.TrainStream, nil); err == nil || !strings.Contains(err.Error(), "step 1") {
		t.Errorf("NaN parameter: err = %v, want it to name step 1", err)
	}
	ev, err := NewLMTrainer(newLM(t, f, ds, 2, false), LMConfig{EvalOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	if err := ev.Fit(ds.TrainStream, nil); err == nil {
		t.Error("Fit with EvalOnly: no error")
	}
	if _, err := ev.Loss(ds.ValidStream, 1); err != nil {
		t.Errorf("Loss with EvalOnly: %v", err)
	}
}
