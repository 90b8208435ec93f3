package regression

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/experiment"
)

// tinyOptions is the quick preset at toy sizes (d = 4, N = 5, one epoch,
// two seeds, K = 1, 2, L = 32, 64): 8 linear and 8 nonlinear runs.
func tinyOptions(results string) Options {
	o := Options{Exps: "linear,nonlinear", Steps: "1,2", Ls: "32,64", Dtype: "float64", Results: results,
		D: 4, N: 5, DY: 1, L: 64, M: 32, Epochs: 1, Batch: 16, Seeds: 2, LR: 1e-3, Seed: 1, DataSeed: 1, Quick: true, Quiet: true}
	o.Set = map[string]bool{}
	for _, f := range []string{"quick", "quiet", "L", "M", "epochs", "seeds", "steps", "Ls", "batch", "d", "N", "out", "results"} {
		o.Set[f] = true
	}
	return o
}

// TestShardsAndMerge runs a tiny plan as two shards, an -index rerun and
// -merge (refused while a shard is missing), and checks that the tables
// equal a single process's and that -index past the plan is refused.
func TestShardsAndMerge(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	dir := t.TempDir()
	one, many := filepath.Join(dir, "one"), filepath.Join(dir, "many")
	run := func(res string, exp experiment.Flags) error {
		p, err := Resolve(tinyOptions(res))
		if err != nil {
			return err
		}
		if err := Check(p, exp); err != nil {
			return err
		}
		return RunAll(p, exp, nil)
	}
	if err := run(one, experiment.Flags{}); err != nil {
		t.Fatal(err)
	}
	if err := run(many, experiment.Flags{Shard: "0/2"}); err != nil {
		t.Fatal(err)
	}
	if err := run(many, experiment.Flags{Merge: true}); err == nil || !strings.Contains(err.Error(), "8 of 16 runs") {
		t.Errorf("-merge with a shard missing: %v", err)
	}
	for _, exp := range []experiment.Flags{{Shard: "1/2"}, {Index: "3"}, {Merge: true}} {
		if err := run(many, exp); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(many, "runs", "*"))
	if len(files) != 16 {
		t.Errorf("%d files in runs/, want 16", len(files))
	}
	for _, f := range []string{"linear.csv", "nonlinear.csv"} { // the JSON files hold timings
		a, _ := os.ReadFile(filepath.Join(one, f))
		b, _ := os.ReadFile(filepath.Join(many, f))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s: sharded\n%s\none process\n%s", f, b, a)
		}
	}
	for _, f := range []string{"regression-linear-quick.png", "regression-nonlinear-quick.png"} {
		if st, err := os.Stat(filepath.Join(many, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if err := run(many, experiment.Flags{Index: "16"}); err == nil || !strings.Contains(err.Error(), "-index 16") {
		t.Errorf("-index 16 of 16 runs: %v", err)
	}
}
