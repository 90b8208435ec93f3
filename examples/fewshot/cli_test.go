package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/internal/cli/clitest"
)

// TestCommandLine runs the fewshot binary on bad command lines and bad
// inputs: each must be refused before any work (no drawing read, no
// model trained), with exit status 2 and one line on stderr naming the
// flag or file, never a stack trace.
func TestCommandLine(t *testing.T) {
	bin := fewshotBin(t)
	dir := t.TempDir()
	results := func(name, content string) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "results.json"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	good := results("good", `{"features": [{"kind": "pca", "models": [{"name": "lp"}, {"name": "gd1", "seeds": [{"seed": 1, "top1": 0.5, "nll": 1}]}]}]}`)
	// The drawings are never read: every case fails first. An empty
	// -quickdraw folder keeps the cases off the user's real data.
	qd := t.TempDir()
	run := func(s ...string) []string {
		return append([]string{"-quickdraw", qd, "-cache", filepath.Join(dir, "cache")}, s...)
	}
	a := func(s ...string) []string { return s }
	clitest.Run(t, bin, "fewshot", []clitest.Case{
		clitest.OK("help", a("-h"), "Usage:", "-merge", "-combine", "-plan"),
		clitest.Usage("stray argument", run("-quick", "cnn"), `unexpected argument "cnn"`),
		clitest.Usage("unknown flag", run("-ways", "5"), "-ways"),
		clitest.Usage("unparsable float", run("-lr", "2e-2x"), "-lr"),
		clitest.Usage("NaN lr", run("-lr", "NaN"), "-lr: NaN is not a finite positive number"),
		clitest.Usage("Inf tf-lr", run("-tf-lr", "Inf"), "-tf-lr"),
		clitest.Usage("negative probe-l2", run("-probe-l2", "-1"), "-probe-l2"),
		clitest.Usage("NaN probe-l2", run("-probe-l2", "NaN"), "-probe-l2"),
		clitest.Usage("zero L", run("-L", "0"), "-L"),
		clitest.Usage("negative M", run("-M", "-4"), "-M"),
		clitest.Usage("zero epochs", run("-epochs", "0"), "-epochs"),
		clitest.Usage("zero tf-epochs", run("-tf-epochs", "0"), "-tf-epochs"),
		clitest.Usage("zero cnn-epochs", run("-cnn-epochs", "0"), "-cnn-epochs"),
		clitest.Usage("negative batch", run("-batch", "-1"), "-batch"),
		clitest.Usage("zero seeds", run("-seeds", "0"), "-seeds"),
		clitest.Usage("negative d", run("-d", "-1"), "-d"),
		clitest.Usage("huge cnn-dim", run("-cnn-dim", "1000000000"), "-cnn-dim"),
		clitest.Usage("zero dprime", run("-dprime", "0"), "-dprime"),
		clitest.Usage("zero eval-points", run("-eval-points", "0"), "-eval-points"),
		clitest.Usage("zero tf-layers", run("-tf-layers", "0"), "-tf-layers"),
		clitest.Usage("zero probe-steps", run("-probe-steps", "0"), "-probe-steps"),
		clitest.Usage("too few held-out categories", run("-test-classes", "4"), "-test-classes"),
		clitest.Usage("unknown norm", run("-norm", "l1"), "-norm"),
		clitest.Usage("unknown kernel", run("-kernel", "cosine"), "-kernel"),
		clitest.Usage("unknown dtype", run("-dtype", "int8"), "-dtype"),
		clitest.Usage("unknown feature", run("-features", "cnn,vgg"), "-features", "vgg"),
		clitest.Usage("unknown model", run("-models", "lp,rnn"), "-models", "rnn"),
		clitest.Usage("gd0", run("-models", "gd0"), "-models", "gd0"),
		clitest.Usage("huge gd", run("-models", "gd100000"), "-models", "gd100000"),
		clitest.Usage("empty models", run("-models", ""), "-models"),
		clitest.Usage("empty cache", a("-cache", ""), "-cache"),
		clitest.Usage("tf-lr without tf", run("-models", "lp,gd1", "-tf-lr", "0.1"), "-tf-lr needs tf in -models"),
		clitest.Usage("lr without gd", run("-models", "lp,tf", "-lr", "0.1"), "-lr needs a gd<K> model"),
		clitest.Usage("dtype with lp only", run("-models", "lp", "-dtype", "float64"), "-dtype needs a trained model"),
		clitest.Usage("probe-steps without lp", run("-models", "gd1", "-probe-steps", "10"), "-probe-steps needs lp in -models"),
		clitest.Usage("cnn-epochs without cnn", run("-features", "pca", "-cnn-epochs", "3"), "-cnn-epochs needs cnn in -features"),
		clitest.Usage("no drawings, no cache", a("-quickdraw", filepath.Join(dir, "nope"), "-cache", filepath.Join(dir, "nocache")), "-quickdraw", "nope"),
		// A feature cache present does not let a device through as the drawings.
		clitest.Usage("drawings a device, cache present", a("-quickdraw", "/dev/zero", "-cache", t.TempDir(), "-quick"), "-quickdraw", "/dev/zero", "not a folder"),
		clitest.Usage("run flag with combine", a("-combine", good+","+good, "-out", dir, "-L", "8"), "-L does not apply to -combine"),
		clitest.Usage("plan flag with combine", a("-combine", good+","+good, "-out", dir, "-plan"), "-plan does not apply to -combine"),
		clitest.Usage("combine without out", a("-combine", good+","+good, "-out", ""), "-combine needs -out"),
		clitest.Usage("combine of one", a("-combine", good, "-out", dir), "at least two"),
		clitest.Usage("combine into a combined folder", a("-combine", good+","+good, "-out", good), "-out", "is -combine"),
		clitest.Usage("combine of a missing folder", a("-combine", good+","+filepath.Join(dir, "nope"), "-out", dir), "nope"),
		clitest.Usage("combine of garbage", a("-combine", good+","+results("garbage", "{{"), "-out", dir), "garbage"),
		clitest.Usage("combine of nested", a("-combine", good+","+results("nested", strings.Repeat("[", 50000)), "-out", dir), "nested"),
		clitest.Usage("combine of a huge number", a("-combine", good+","+results("huge", `{"features": [{"input_dim": 1e400}]}`), "-out", dir), "huge"),
		clitest.Usage("combine of nothing", a("-combine", good+","+results("empty", `{}`), "-out", dir), "empty", "no results"),
		clitest.Usage("combine of a model without seeds", a("-combine", good+","+results("seedless", `{"features": [{"kind": "cnn", "models": [{"name": "gd2"}]}]}`), "-out", dir), "seedless", "gd2"),
		// The experiment flags (package experiment).
		clitest.Usage("merge is a switch", a("-merge", good+","+good, "-out", dir), `unexpected argument`),
		clitest.Usage("index past the plan", run("-index", "42"), "-index 42", "0..41"),
		clitest.Usage("index and shard", run("-index", "0", "-shard", "0/2"), "exclude each other"),
		clitest.Usage("bad shard", run("-shard", "2/2"), "-shard"),
		clitest.Usage("partial without merge", run("-partial"), "-partial needs -merge"),
		clitest.Usage("plan without out", run("-plan", "-out", ""), "-out is empty"),
		clitest.Usage("index without out", run("-index", "0", "-out", ""), "-out is empty"),
		clitest.Usage("unknown submit", run("-submit", "pbs"), "-submit"),
		clitest.Usage("parallel without submit", run("-parallel", "4"), "-parallel needs -submit"),
	})
}
