package main

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/graph/npy"
	"github.com/gdattn/gdattn/internal/cli/clitest"
)

// TestCommandLine runs the synthetic binary on bad command lines and bad
// inputs: each must be refused before any training, with exit status 2
// and one line on stderr naming the flag or file, never a stack trace.
func TestCommandLine(t *testing.T) {
	bin := clitest.Build(t, ".")
	dir := t.TempDir()
	// A real checkpoint (one training step on 4 contexts) and contexts
	// that fit it, then copies of it with crafted config.json files.
	if code, _, stderr := clitest.Exec(t, bin, "-L", "4", "-M", "4", "-batch", "4", "-epochs", "1", "-quiet", "-out", dir); code != 0 {
		t.Fatalf("making the checkpoint: exit %d: %s", code, stderr)
	}
	ck := filepath.Join(dir, "blocks1-seed1")
	task, err := data.NewSynthetic(data.DefaultSyntheticConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := task.Sample(3, rand.New(rand.NewPCG(5, 5)))
	if err != nil {
		t.Fatal(err)
	}
	x, y := writeContexts(t, dir, b)
	garbage := filepath.Join(dir, "garbage.npy")
	os.WriteFile(garbage, []byte("not an npy file"), 0o644)
	crafted := func(name string, edit func(raw []byte) []byte) string {
		d := filepath.Join(dir, name)
		copyCheckpoint(t, ck, d)
		p := filepath.Join(d, "config.json")
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out := edit(raw)
		if err := os.WriteFile(p, out, 0o644); err != nil {
			t.Fatal(err)
		}
		if json.Valid(out) { // a deliberate hand edit: reseal, so the validation is what is tested
			if err := checkpoint.Reseal(d); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	setField := func(field, value string) func([]byte) []byte {
		return func(raw []byte) []byte { return setModelField(t, raw, field, value) }
	}
	eval := func(ckpt string, more ...string) []string {
		return append([]string{"-eval", ckpt, "-x", x, "-y", y, "-probs", filepath.Join(dir, "p.npy")}, more...)
	}
	link := filepath.Join(dir, "link.npy")
	if err := os.Symlink(y, link); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, "photos") // -out whose blocks1-seed1 is not a checkpoint
	if err := os.MkdirAll(filepath.Join(foreign, "blocks1-seed1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(foreign, "blocks1-seed1", "cat.jpg"), []byte("meow"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []clitest.Case{
		clitest.OK("help", []string{"-h"}, "Usage:", "-blocks"),
		clitest.Usage("probs is -x", eval(ck, "-probs", x), "-probs", "is -x"),
		clitest.Usage("probs is -y through a link", eval(ck, "-probs", link), "-probs", "is -y"),
		clitest.Usage("probs inside the checkpoint", eval(ck, "-probs", filepath.Join(ck, "config.json")), "-probs", "inside -eval"),
		clitest.Usage("sets over the size limit", []string{"-N", "4096", "-batch", "65536", "-L", "65536"}, "-L", "data.MaxElements"),
		clitest.Usage("out holds a non-checkpoint", []string{"-out", foreign}, "-out", "not a checkpoint"),
		clitest.Usage("stray argument", []string{"train"}, `unexpected argument "train"`),
		clitest.Usage("unknown flag", []string{"-nope"}, "-nope"),
		clitest.Usage("unparsable int", []string{"-L", "many"}, "-L"),
		clitest.Usage("negative L", []string{"-L", "-5"}, "-L"),
		clitest.Usage("zero M", []string{"-M", "0"}, "-M"),
		clitest.Usage("zero N", []string{"-N", "0"}, "-N"),
		clitest.Usage("huge N", []string{"-N", "2000000000"}, "-N"),
		clitest.Usage("negative batch", []string{"-batch", "-1"}, "-batch"),
		clitest.Usage("zero epochs", []string{"-epochs", "0"}, "-epochs"),
		clitest.Usage("zero seeds", []string{"-seeds", "0"}, "-seeds"),
		clitest.Usage("NaN lr", []string{"-lr", "NaN"}, "-lr: NaN is not a finite positive number"),
		clitest.Usage("Inf lr", []string{"-lr", "+Inf"}, "-lr"),
		clitest.Usage("negative lr", []string{"-lr", "-0.1"}, "-lr"),
		clitest.Usage("zero blocks", []string{"-blocks", "0"}, "-blocks"),
		clitest.Usage("blocks list", []string{"-blocks", "1,x"}, "-blocks"),
		clitest.Usage("huge blocks", []string{"-blocks", "100000000"}, "-blocks"),
		clitest.Usage("kernel", []string{"-kernel", "cosine"}, "-kernel"),
		clitest.Usage("dtype", []string{"-dtype", "float16"}, "-dtype"),
		clitest.Usage("device", []string{"-device", "tpu"}, "-device"),
		clitest.Usage("empty probs", eval(ck, "-probs", ""), "-probs"),
		clitest.Usage("x without eval", []string{"-x", x}, "-x needs -eval"),
		clitest.Usage("probs without eval", []string{"-probs", "p.npy"}, "-probs needs -eval"),
		clitest.Usage("quick without sweep", []string{"-quick"}, "-quick needs -sweep"),
		clitest.Usage("index past the plan", []string{"-sweep", "fig2", "-index", "100"}, "-index 100", "0..99"),
		clitest.Usage("index env unset", []string{"-sweep", "fig2", "-index", "env"}, "JOB_COMPLETION_INDEX"),
		clitest.Usage("eval without x", []string{"-eval", ck}, "-eval needs -x and -y"),
		clitest.Usage("training flag with eval", eval(ck, "-L", "8"), "-L does not apply to -eval"),
		clitest.Usage("device with eval", eval(ck, "-device", "cpu"), "-device does not apply to -eval"),
		clitest.Usage("sweep with eval", eval(ck, "-sweep", "all"), "-sweep does not apply to -eval"),
		clitest.Usage("kernel with sweep", []string{"-sweep", "fig2", "-kernel", "rbf"}, "-kernel does not apply"),
		clitest.Usage("unknown figure", []string{"-sweep", "fig9"}, "-sweep", "fig9"),
		clitest.Usage("bad shard", []string{"-sweep", "all", "-shard", "2/2"}, "-shard"),
		clitest.Usage("bad Ls", []string{"-sweep", "fig2", "-Ls", "16,0"}, "-Ls"),
		clitest.Usage("plan with merge", []string{"-sweep", "all", "-merge", "-plan"}, "exclude each other"),
		clitest.Usage("partial without merge", []string{"-sweep", "all", "-partial"}, "-partial needs -merge"),
		clitest.Usage("index without sweep: of -sweep all", []string{"-index", "180"}, "-index 180", "0..179"),
		clitest.Usage("quick without sweep", []string{"-quick"}, "-quick needs -sweep"),
		clitest.Usage("index past the plan", []string{"-sweep", "fig2", "-index", "100"}, "-index 100", "0..99"),
		clitest.Usage("index env unset", []string{"-sweep", "fig2", "-index", "env"}, "JOB_COMPLETION_INDEX"),
		clitest.Usage("missing checkpoint", eval(filepath.Join(dir, "nope")), filepath.Join(dir, "nope")),
		clitest.Usage("missing x", []string{"-eval", ck, "-x", filepath.Join(dir, "nope.npy"), "-y", y}, "nope.npy"),
		clitest.Usage("garbage y", []string{"-eval", ck, "-x", x, "-y", garbage}, "garbage.npy"),
		clitest.Usage("x of another task", []string{"-eval", ck, "-x", y, "-y", y}, "-x"),
		clitest.Usage("config: garbage", eval(crafted("garbage", func([]byte) []byte { return []byte("{not json") })), "config.json"),
		clitest.Usage("config: deeply nested", eval(crafted("nested", func([]byte) []byte { return []byte(strings.Repeat("[", 100000)) })), "config.json"),
		clitest.Usage("config: huge number", eval(crafted("huge", setField("blocks", "1e400"))), "gd: load", "blocks"),
		clitest.Usage("config: huge Blocks", eval(crafted("blocks", setField("blocks", "100000000"))), "gd: load", "Blocks"),
		clitest.Usage("config: max int Blocks", eval(crafted("maxint", setField("blocks", "9223372036854775807"))), "gd: load", "Blocks"),
		clitest.Usage("config: huge Heads", eval(crafted("heads", setField("heads", "1000000000"))), "gd: load", "Heads"),
		clitest.Usage("config: huge DPrime", eval(crafted("dprime", setField("d_prime", "2000000000"))), "config.json", "gd.d_prime"),
		clitest.Usage("config: negative C", eval(crafted("c", setField("c", "-3"))), "gd: load", "C = -3"),
		clitest.Usage("config: negative Alpha", eval(crafted("alpha", setField("alpha", "-1"))), "gd: load", "Alpha"),
		clitest.Usage("config: dtype", eval(crafted("dtype", func(raw []byte) []byte {
			return bytes.Replace(raw, []byte(`"dtype": "float64"`), []byte(`"dtype": "float8"`), 1)
		})), "config.json", "float8"),
	}
	clitest.Run(t, bin, "synthetic", cases)
}

// setModelField sets config.model.<field> of a checkpoint's config.json to
// the JSON number text value.
func setModelField(t *testing.T, raw []byte, field, value string) []byte {
	t.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(doc["config"], &cfg); err != nil {
		t.Fatal(err)
	}
	var model map[string]json.RawMessage
	if err := json.Unmarshal(cfg["gd"], &model); err != nil {
		t.Fatal(err)
	}
	if _, ok := model[field]; !ok {
		t.Fatalf("config.gd has no field %s", field)
	}
	model[field] = json.RawMessage(value)
	var err error
	if cfg["gd"], err = json.Marshal(model); err != nil {
		t.Fatal(err)
	}
	if doc["config"], err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// copyCheckpoint copies the files of checkpoint directory src to dst.
func copyCheckpoint(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// writeContexts writes x (B, N+1, d) float64 and y (B, N+1) int64 .npy files.
func writeContexts(t *testing.T, dir string, b *data.Batch) (string, string) {
	t.Helper()
	y := make([]int64, len(b.Y))
	for i, v := range b.Y {
		y[i] = int64(v)
	}
	xp, yp := filepath.Join(dir, "x.npy"), filepath.Join(dir, "y.npy")
	if err := npy.WriteFile(xp, &npy.Array{Shape: []int{b.B, b.T, b.D}, Dtype: npy.Float64, F64: b.X}); err != nil {
		t.Fatal(err)
	}
	if err := npy.WriteFile(yp, &npy.Array{Shape: []int{b.B, b.T}, Dtype: npy.Int64, I64: y}); err != nil {
		t.Fatal(err)
	}
	return xp, yp
}
