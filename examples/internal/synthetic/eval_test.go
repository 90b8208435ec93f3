package synthetic

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/graph/npy"
)

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

// TestTrainSaveEvaluate trains a small model, saves it, and evaluates the
// checkpoint on .npy contexts; then checks the errors for a corrupt
// checkpoint and mismatched inputs.
func TestTrainSaveEvaluate(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	dir := t.TempDir()
	o := Options{Blocks: "2", Kernel: "rbf", Dtype: "float64", Out: filepath.Join(dir, "ck"),
		L: 128, M: 64, N: 10, Epochs: 2, Batch: 32, Seeds: 1, LR: 1e-2, Seed: 3, DataSeed: 4, Quiet: true}
	if err := TrainBlocks(o); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "ck", "blocks2-seed3")
	task, _ := data.NewSynthetic(data.DefaultSyntheticConfig(), 4)
	b, _ := task.Sample(50, rand.New(rand.NewPCG(9, 9)))
	xp, yp := writeContexts(t, dir, b)
	probs := filepath.Join(dir, "p.npy")
	if err := EvalCheckpoint(ck, xp, yp, probs); err != nil {
		t.Fatal(err)
	}
	p, err := npy.ReadFile(probs)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Shape) != 2 || p.Shape[0] != 50 || p.Shape[1] != 25 {
		t.Fatalf("probs shape %v, want (50, 25)", p.Shape)
	}
	for i := 0; i < 50; i++ {
		s := 0.0
		for _, v := range p.F64[i*25 : (i+1)*25] {
			s += v
		}
		if math.Abs(s-1) > 1e-9 {
			t.Fatalf("probabilities of context %d sum to %v", i, s)
		}
	}

	// Mismatched inputs: x with the wrong d.
	bad := *b
	bad.D = 9
	bad.X = b.X[:b.B*b.T*9]
	badDir := t.TempDir()
	bxp, _ := writeContexts(t, badDir, &bad)
	if err := EvalCheckpoint(ck, bxp, yp, probs); err == nil || !strings.Contains(err.Error(), "-x") {
		t.Errorf("wrong x shape: error = %v, want one naming -x", err)
	}
	// A label out of range.
	yb := append([]int(nil), b.Y...)
	yb[3] = 99
	b3 := *b
	b3.Y = yb
	d3 := t.TempDir()
	_, byp := writeContexts(t, d3, &b3)
	if err := EvalCheckpoint(ck, xp, byp, probs); err == nil || !strings.Contains(err.Error(), "99") {
		t.Errorf("label out of range: error = %v, want one naming the label", err)
	}
	// A truncated parameter file.
	wp := filepath.Join(ck, "we.npy")
	raw, _ := os.ReadFile(wp)
	if err := os.WriteFile(wp, raw[:len(raw)-8], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := EvalCheckpoint(ck, xp, yp, probs); err == nil || !strings.Contains(err.Error(), "we.npy") {
		t.Errorf("truncated checkpoint: error = %v, want one naming we.npy", err)
	}
	// A missing checkpoint.
	if err := EvalCheckpoint(filepath.Join(dir, "nope"), xp, yp, probs); err == nil {
		t.Error("missing checkpoint: no error")
	}
}
