package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/graph/npy"
	"github.com/gdattn/gdattn/internal/cli/clitest"
)

// TestCommandLine runs the language binary on bad command lines and bad
// inputs: each must be refused before any training, with exit status 2
// and one line on stderr naming the flag or file, never a stack trace.
func TestCommandLine(t *testing.T) {
	bin := clitest.Build(t, ".")
	dir := t.TempDir()
	corpus := writeCorpus(t)
	// A real checkpoint (two steps of the tiny preset), then copies of it
	// with crafted config.json files.
	ck := filepath.Join(dir, "ckpt")
	if code, _, stderr := clitest.Exec(t, bin, "train", "-preset", "tiny", "-corpus", corpus, "-out", ck, "-steps", "2", "-no-eval"); code != 0 {
		t.Fatalf("making the checkpoint: exit %d: %s", code, stderr)
	}
	// edited copies the checkpoint with its config.json edited, checksums
	// left as they were; crafted reseals the edit (checkpoint.Reseal) where
	// it still parses, as a deliberate hand edit would be, so that what is
	// tested is the validation behind the integrity check.
	edited := func(name string, edit func(raw []byte) []byte) string {
		d := filepath.Join(dir, name)
		copyDir(t, ck, d)
		p := filepath.Join(d, "config.json")
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, edit(raw), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	crafted := func(name string, edit func(raw []byte) []byte) string {
		d := edited(name, edit)
		if json.Valid(mustRead(t, filepath.Join(d, "config.json"))) {
			if err := checkpoint.Reseal(d); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	set := func(value string, path ...string) func([]byte) []byte {
		return func(raw []byte) []byte { return setConfigField(t, raw, value, path...) }
	}
	literal := func(s string) func([]byte) []byte { return func([]byte) []byte { return []byte(s) } }
	a := func(s ...string) []string { return s }
	train := func(s ...string) []string {
		return append([]string{"train", "-preset", "tiny", "-corpus", corpus}, s...)
	}
	evaluate := func(ckpt string, s ...string) []string { return append([]string{"evaluate", "-ckpt", ckpt}, s...) }
	// A checkpoint without optimiser state: the manifest's optim entry and
	// its files removed, resealed.
	noOptim := crafted("nooptim", func(raw []byte) []byte {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		var man map[string]json.RawMessage
		if err := json.Unmarshal(m["manifest"], &man); err != nil {
			t.Fatal(err)
		}
		delete(man, "optim")
		m["manifest"] = must(json.Marshal(man))
		return must(json.Marshal(m))
	})
	if err := os.RemoveAll(filepath.Join(noOptim, "optim")); err != nil {
		t.Fatal(err)
	}
	// A checkpoint whose first parameter holds a NaN, resealed.
	nanCk := filepath.Join(dir, "nan")
	copyDir(t, ck, nanCk)
	npys, _ := filepath.Glob(filepath.Join(nanCk, "*.npy"))
	arr := must(npy.ReadFile(npys[0]))
	if len(arr.F32) > 0 {
		arr.F32[0] = float32(math.NaN())
	} else {
		arr.F64[0] = math.NaN()
	}
	if err := npy.WriteFile(npys[0], arr); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.Reseal(nanCk); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other") // another checkpoint
	copyDir(t, ck, other)
	foreign := filepath.Join(dir, "photos") // a directory that is not a checkpoint
	if err := os.MkdirAll(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(foreign, "cat.jpg"), []byte("meow"), 0o644); err != nil {
		t.Fatal(err)
	}
	clitest.Run(t, bin, "language", []clitest.Case{
		clitest.Usage("resume without optimiser state", a("train", "-resume", noOptim, "-steps", "4"), "-resume", "no optimiser state"),
		clitest.Usage("resume over another checkpoint", a("train", "-resume", ck, "-steps", "4", "-out", other), "-out", other, "-resume"),
		clitest.Usage("out is not a checkpoint", train("-out", foreign), "-out", "not a checkpoint"),
		clitest.Usage("resume out is not a checkpoint", a("train", "-resume", ck, "-steps", "4", "-out", foreign), "-out", foreign),
		clitest.Usage("evaluate NaN weights", evaluate(nanCk), "nan", "NaN"),
		clitest.Usage("generate NaN weights", a("generate", "-ckpt", nanCk), "nan", "NaN"),
		clitest.Usage("config: unknown preset", a("train", "-resume", crafted("preset", set(`"huge"`, "run", "preset")), "-steps", "4"), "run.preset"),
		clitest.OK("help", a("-h"), "Usage: language <command>"),
		clitest.OK("train help", a("train", "-h"), "Usage: language train", "-resume"),
		clitest.Usage("no command", a(), "no command"),
		clitest.Usage("unknown command", a("serve"), `unknown command "serve"`),
		clitest.Usage("flag before command", a("-steps", "5", "train"), `command "train" comes first`),
		clitest.Usage("stray argument", train("-no-eval", "now"), `unexpected argument "now"`),
		clitest.Usage("unknown flag", train("-lr", "1e-3"), "-lr"),
		clitest.Usage("unparsable int", train("-steps", "1e3"), "-steps"),
		clitest.Usage("negative steps", train("-steps", "-5"), "-steps"),
		clitest.Usage("negative batch", train("-batch", "-1"), "-batch"),
		clitest.Usage("negative ckpt-every", train("-ckpt-every", "-1"), "-ckpt-every"),
		clitest.Usage("zero stories", train("-stories", "0"), "-stories"),
		clitest.Usage("NaN valid-frac", train("-valid-frac", "NaN"), "-valid-frac"),
		clitest.Usage("valid-frac above 1", train("-valid-frac", "1.5"), "-valid-frac"),
		clitest.Usage("negative test-frac", train("-test-frac", "-0.1"), "-test-frac"),
		clitest.Usage("fractions summing to 1", train("-valid-frac", "0.6", "-test-frac", "0.5"), "-valid-frac", "-test-frac"),
		clitest.Usage("unknown model", train("-model", "rnn"), "unknown -model"),
		clitest.Usage("unknown preset", a("train", "-preset", "huge"), "unknown -preset"),
		clitest.Usage("unknown split", train("-split", "lines"), "-split"),
		clitest.Usage("unknown kernel", train("-kernel", "cosine"), "-kernel"),
		clitest.Usage("unknown dtype", train("-dtype", "bf16"), "-dtype"),
		clitest.Usage("unknown device", train("-device", "tpu"), "-device"),
		clitest.Usage("unknown strategy", train("-strategy", "nucleus"), "-strategy", "unknown strategy"),
		clitest.Usage("zero max-new", train("-max-new", "0"), "-max-new"),
		clitest.Usage("zero beams", train("-beams", "0"), "-beams"),
		clitest.Usage("NaN temperature", train("-strategy", "sample", "-temperature", "NaN"), "-temperature: NaN is not a finite positive number"),
		clitest.Usage("negative top-k", train("-strategy", "sample", "-top-k", "-1"), "-top-k"),
		clitest.Usage("beams without beam search", train("-strategy", "greedy", "-beams", "3"), "-beams needs -strategy beam"),
		clitest.Usage("temperature without sampling", train("-temperature", "0.5"), "-temperature needs -strategy sample"),
		clitest.Usage("kernel with gpt", train("-model", "gpt", "-kernel", "rbf"), "-kernel needs -model gd or gdff"),
		clitest.Usage("xent32 with float64", train("-xent32", "-dtype", "float64"), "-xent32 needs -dtype float32 and -device cpu"),
		clitest.Usage("xent32 with cuda", train("-xent32", "-device", "cuda"), "-xent32 needs -dtype float32 and -device cpu"),
		clitest.Usage("xent32 with resume", a("train", "-resume", ck, "-xent32"), "-xent32 does not apply to -resume"),
		clitest.Usage("stories with no-eval", train("-no-eval", "-stories", "5"), "-stories does not apply to -no-eval"),
		clitest.Usage("kernel with resume", a("train", "-resume", ck, "-kernel", "rbf"), "-kernel does not apply to -resume"),
		clitest.Usage("books of a file", train("-books", "carroll-alice"), "-books needs a Gutenberg directory"),
		clitest.Usage("missing corpus", a("train", "-preset", "tiny", "-corpus", filepath.Join(dir, "nope.txt")), "nope.txt"),
		clitest.Usage("missing checkpoint", a("train", "-resume", filepath.Join(dir, "none")), filepath.Join(dir, "none")),
		clitest.Usage("evaluate without ckpt", a("evaluate"), "-ckpt is required"),
		clitest.Usage("evaluate stray argument", evaluate(ck, "all"), `unexpected argument "all"`),
		clitest.Usage("evaluate: missing corpus", evaluate(ck, "-corpus", filepath.Join(dir, "nope.txt")), "nope.txt"),
		clitest.Usage("evaluate: zero stories", evaluate(ck, "-stories", "0"), "-stories"),
		clitest.Usage("evaluate: negative examples", evaluate(ck, "-examples", "-1"), "-examples"),
		clitest.Usage("generate: empty prompt", a("generate", "-ckpt", ck, "-prompt", ""), "-prompt is empty"),
		clitest.Usage("generate: unknown tokens", a("generate", "-ckpt", ck, "-prompt", "Quantum chromodynamics"), "-prompt", "not in the model's vocabulary"),
		clitest.Usage("generate: top-k with greedy", a("generate", "-ckpt", ck, "-top-k", "5"), "-top-k needs -strategy sample"),
		clitest.Usage("config: edited, checksums kept", evaluate(edited("edited", func(raw []byte) []byte {
			return regexp.MustCompile(`"lr": ?`).ReplaceAll(raw, []byte(`"lr":1`)) // 0.001 -> 10.001
		})), "config.json", "was edited"),
		clitest.Usage("config: garbage", evaluate(crafted("garbage", literal("{{{"))), "config.json"),
		clitest.Usage("config: deeply nested", evaluate(crafted("nested", literal(strings.Repeat(`{"a":`, 100000)))), "config.json"),
		clitest.Usage("config: huge number", evaluate(crafted("huge", set("1e400", "gd_lm", "vocab"))), "huge", "vocab"),
		clitest.Usage("config: huge vocab", evaluate(crafted("vocab", set("2000000000", "gd_lm", "vocab"))), "vocab", "Vocab"),
		clitest.Usage("config: huge width", evaluate(crafted("width", set("1000000", "gd_lm", "d_prime"))), "width", "DPrime"),
		clitest.Usage("config: huge context", evaluate(crafted("context", set("100000000", "gd_lm", "context"))), "context", "Context"),
		clitest.Usage("config: huge heads", evaluate(crafted("heads", set("1000000000", "gd_lm", "heads"))), "heads", "Heads"),
		clitest.Usage("config: huge steps", evaluate(crafted("steps", set("9223372036854775807", "gd_lm", "steps"))), "steps", "Steps"),
		clitest.Usage("config: huge batch", evaluate(crafted("batch", set("1000000000", "run", "train", "batch"))), "config.json", "train.batch"),
		clitest.Usage("config: negative lr", evaluate(crafted("lr", set("-1", "run", "train", "lr"))), "config.json", "train.lr"),
		clitest.Usage("config: fraction", evaluate(crafted("frac", set("2", "run", "data", "test_frac"))), "config.json", "data.test_frac"),
		clitest.Usage("config: unknown split", evaluate(crafted("split", set(`"lines"`, "run", "data", "split"))), "config.json", "data.split"),
		clitest.Usage("config: no model", evaluate(crafted("nomodel", set("null", "gd_lm"))), "nomodel", "gd_lm"),
		clitest.Usage("config: gpt model with gd config", evaluate(crafted("mismatch", set(`"gpt"`, "run", "model"))), "config.json"),
		clitest.Usage("config: generate", a("generate", "-ckpt", crafted("gen", set("2000000000", "gd_lm", "context"))), "gen", "Context"),
		clitest.Usage("config: resume", a("train", "-resume", crafted("resume", set(`"float16"`, "dtype"))), "resume", "dtype"),
	})
}

// setConfigField sets the field at path under "config" of a checkpoint's
// config.json to the JSON text value.
func setConfigField(t *testing.T, raw []byte, value string, path ...string) []byte {
	t.Helper()
	var set func(raw json.RawMessage, path []string) json.RawMessage
	set = func(raw json.RawMessage, path []string) json.RawMessage {
		if len(path) == 0 {
			return json.RawMessage(value)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		if _, ok := m[path[0]]; !ok {
			t.Fatalf("config.json has no field %s", path[0])
		}
		m[path[0]] = set(m[path[0]], path[1:])
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	return set(raw, append([]string{"config"}, path...))
}

// mustRead returns the bytes of the file at path.
func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
