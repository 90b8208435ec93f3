package fewshot

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/data"
)

// fakeImages returns 28×28 drawings of `classes` categories, n of each:
// category c is a bar through the centre at angle c·π/classes, jittered.
func fakeImages(classes, n int, seed uint64) *data.Features {
	const S = data.QuickDrawSide
	rng := rand.New(rand.NewPCG(seed, seed))
	f := &data.Features{Dim: S * S, MaxCount: n, Counts: make([]int, classes), X: make([]float64, classes*n*S*S), Names: make([]string, classes)}
	for c := 0; c < classes; c++ {
		f.Counts[c], f.Names[c] = n, fmt.Sprintf("cat%02d", c)
		for i := 0; i < n; i++ {
			img := f.X[(c*n+i)*S*S : (c*n+i+1)*S*S]
			a := math.Pi*float64(c)/float64(classes) + 0.1*rng.NormFloat64()
			ox, oy := 14+2*rng.NormFloat64(), 14+2*rng.NormFloat64()
			for r := -10.0; r <= 10; r += 0.5 {
				x, y := int(ox+r*math.Cos(a)), int(oy+r*math.Sin(a))
				if x >= 0 && x < S && y >= 0 && y < S {
					img[y*S+x] = 1
				}
			}
		}
	}
	return f
}

// writeQuickDraw writes f as a folder of <category>.ndjson.gz files.
func writeQuickDraw(t *testing.T, f *data.Features) string {
	t.Helper()
	dir := t.TempDir()
	for c, name := range f.Names {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		for i := 0; i < f.Counts[c]; i++ {
			raw, _ := json.Marshal(f.Vector(c, i))
			zw.Write(append(raw, '\n'))
		}
		zw.Close()
		if err := os.WriteFile(filepath.Join(dir, name+".ndjson.gz"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestCNNNeverSeesHeldOut poisons the held-out categories with NaN pixels:
// training the feature extractor must still succeed (it never reads them),
// while the same poison in a training category makes training fail (so the
// poison would be noticed).
func TestCNNNeverSeesHeldOut(t *testing.T) {
	px := fakeImages(8, 12, 1)
	train, test, err := data.SplitClasses(px.Classes(), 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	poison := func(classes []int) *data.Features {
		p := *px
		p.X = append([]float64(nil), px.X...)
		for _, c := range classes {
			for i := c * p.MaxCount * p.Dim; i < (c+1)*p.MaxCount*p.Dim; i++ {
				p.X[i] = math.NaN()
			}
		}
		return &p
	}
	spec := featureSpec{Kind: "cnn", Dim: 8, Channels: [2]int{2, 2}, Epochs: 1, Seed: 1}
	_, res, err := trainCNN(spec, poison(test), train, nil)
	if err != nil {
		t.Fatalf("held-out categories poisoned: %v (the CNN read a held-out category?)", err)
	}
	if len(res.Loss) != 1 || math.IsNaN(res.Loss[0]) || res.Images != len(train)*12 {
		t.Errorf("training result %+v, want one finite epoch over the %d training images", res, len(train)*12)
	}
	if _, _, err := trainCNN(spec, poison(train[:1]), train, nil); err == nil {
		t.Error("a poisoned training category went unnoticed: the test above proves nothing")
	}
}

func tinyOptions(qd, cache, out string) Options {
	o := Defaults()
	o.QuickDraw, o.Cache, o.Out, o.Quiet = qd, cache, out, true
	o.TestClasses, o.CNNDim, o.CNNChannels, o.CNNEpochs = 5, 16, [2]int{2, 4}, 1
	o.D, o.L, o.M, o.Epochs, o.TFEpochs, o.Batch, o.Seeds, o.EvalPoints = 8, 16, 16, 2, 1, 8, 2, 2
	o.Models, o.ProbeSteps = "lp,gd1,gd2,tf", 20
	return o
}

// TestRunTiny runs the whole pipeline on a fake Quick, Draw! folder: both
// feature maps, every model, results.json and the PNG; a second run reuses
// the cached features.
func TestRunTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	qd := writeQuickDraw(t, fakeImages(12, 12, 2))
	cache, out := t.TempDir(), t.TempDir()
	o := tinyOptions(qd, cache, out)
	var stdout bytes.Buffer
	res, err := run(o, &stdout)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Features) != 2 || len(res.Features[0].Models) != 4 {
		t.Fatalf("results for %d feature sets, %d models; want 2, 4", len(res.Features), len(res.Features[0].Models))
	}
	for _, fr := range res.Features {
		if fr.InputDim != 8 || len(fr.Test) != 5 {
			t.Errorf("%s: input dim %d, %d test categories", fr.Kind, fr.InputDim, len(fr.Test))
		}
		for _, m := range fr.Models {
			if !(m.Top1 >= 0 && m.Top1 <= 1) || !(m.NLL > 0) || math.IsNaN(m.Top1Std) || (m.Name == "lp" && !(m.NLLStd > 0)) {
				t.Errorf("%s %s: top-1 %v NLL %v std %v", fr.Kind, m.Name, m.Top1, m.NLL, m.Top1Std)
			}
			if m.Name != "lp" && (len(m.Seeds) != 2 || len(m.Seeds[0].Curve) == 0) {
				t.Errorf("%s %s: %d seeds, curve %v", fr.Kind, m.Name, len(m.Seeds), m.Seeds[0].Curve)
			}
		}
	}
	for _, name := range []string{"results.json", "fewshot.png"} {
		if st, err := os.Stat(filepath.Join(out, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	var back Results
	raw, _ := os.ReadFile(filepath.Join(out, "results.json"))
	if err := json.Unmarshal(raw, &back); err != nil || back.Options.L != 16 {
		t.Errorf("results.json: %v, options %+v", err, back.Options)
	}
	// The cache holds the features in the authors' layout, with a split
	// whose two halves are disjoint.
	ents, _ := os.ReadDir(cache)
	if len(ents) != 2 {
		t.Fatalf("cache holds %d entries, want 2 (cnn, pca)", len(ents))
	}
	for _, e := range ents {
		dir := filepath.Join(cache, e.Name())
		f, err := data.ReadFeatures(filepath.Join(dir, "features.npy"), filepath.Join(dir, "counts.npy"))
		if err != nil {
			t.Fatal(err)
		}
		if f.Classes() != 12 {
			t.Errorf("%s: %d classes", dir, f.Classes())
		}
		var m featureMeta
		raw, _ := os.ReadFile(filepath.Join(dir, "meta.json"))
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		held := map[int]bool{}
		for _, c := range m.TestClasses {
			held[c] = true
		}
		for _, c := range m.TrainClasses {
			if held[c] {
				t.Errorf("%s: category %d is both a training and a held-out category", dir, c)
			}
		}
		if len(m.TrainClasses)+len(m.TestClasses) != 12 {
			t.Errorf("%s: split %d + %d categories", dir, len(m.TrainClasses), len(m.TestClasses))
		}
	}
	// Second run: features come from the cache, even with the drawings gone.
	out2 := t.TempDir()
	o.QuickDraw, o.Models, o.Out, o.Features = filepath.Join(t.TempDir(), "gone"), "gd3", out2, "cnn"
	if _, err := run(o, &stdout); err != nil {
		t.Fatalf("cached run: %v", err)
	}
	// Merging the two runs puts gd3 beside the cnn models of the first.
	out3 := t.TempDir()
	m, err := Combine([]string{out, out2}, out3, &stdout)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Features) != 2 || len(m.Features[0].Models) != 5 || m.Features[0].Models[4].Name != "gd3" {
		t.Errorf("merged: %d feature sets, first with %d models", len(m.Features), len(m.Features[0].Models))
	}
	// A model in both folders is taken from the last one.
	m, err = Combine([]string{out2, out}, out3, &stdout)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Features[0].Models) != 5 || m.Features[0].Models[0].Name != "gd3" {
		t.Errorf("merged in the other order: models %d, first %q", len(m.Features[0].Models), m.Features[0].Models[0].Name)
	}
	if _, err := os.Stat(filepath.Join(out3, "fewshot.png")); err != nil {
		t.Error(err)
	}
	if m, err := Combine([]string{out, out}, out3, &stdout); err != nil || len(m.Features[0].Models) != 4 || len(m.Features[0].Models[1].Seeds) != 2 {
		t.Errorf("merging a folder with itself: %v, want its 4 models once, with their 2 seeds", err)
	}
	// Seeds run as separate processes merge into one model.
	out4 := t.TempDir()
	o.Seed, o.Seeds, o.Out = 3, 1, out4
	if _, err := run(o, &stdout); err != nil {
		t.Fatal(err)
	}
	m, err = Combine([]string{out2, out4}, out3, &stdout)
	if err != nil {
		t.Fatal(err)
	}
	if gd3 := m.Features[0].Models[0]; len(gd3.Seeds) != 3 || gd3.Seeds[2].Seed != 3 || gd3.Top1Std == 0 && gd3.Seeds[0].Top1 != gd3.Seeds[2].Top1 {
		t.Errorf("merged seeds: %+v", gd3)
	}
	if _, err := Combine([]string{out}, out3, &stdout); err == nil {
		t.Error("combining one folder: no error")
	}
	if _, err := Combine([]string{out, t.TempDir()}, out3, &stdout); err == nil {
		t.Error("merge of a folder without results.json: no error")
	}
}

func TestRunErrors(t *testing.T) {
	qd := writeQuickDraw(t, fakeImages(10, 12, 3))
	tests := []struct {
		name string
		edit func(o *Options)
		want string
	}{
		{"unknown model", func(o *Options) { o.Models = "lp,rnn" }, `unknown model "rnn"`},
		{"unknown features", func(o *Options) { o.Features = "vgg" }, `unknown feature kind "vgg"`},
		{"no models", func(o *Options) { o.Models = " " }, "-models is empty"},
		{"too few held-out categories", func(o *Options) { o.TestClasses = 4; o.Features = "pca" }, "4 classes, want at least Ways = 5"},
		{"bad norm", func(o *Options) { o.Norm = "l1"; o.Features = "pca" }, "-norm"},
		{"bad dtype", func(o *Options) { o.Dtype = "int8" }, "int8"},
		{"no drawings", func(o *Options) { o.QuickDraw = t.TempDir() }, "fetch-quickdraw.sh"},
		{"zero episodes", func(o *Options) { o.L = 0 }, "must be positive"},
		{"zero TF epochs", func(o *Options) { o.TFEpochs = 0 }, "must be positive"},
		{"probe without steps", func(o *Options) { o.ProbeSteps = 0; o.Features = "pca" }, "Steps = 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tinyOptions(qd, t.TempDir(), "")
			o.Models = "lp"
			tt.edit(&o)
			_, err := run(o, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestBlocksOf(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
	}{{"gd1", 1}, {"gd12", 12}, {"gd0", 0}, {"gd", 0}, {"gdx", 0}, {"gd2x", 0}, {"tf", 0}} {
		got, err := blocksOf(tt.in)
		if got != tt.want || (err == nil) != (tt.want > 0) {
			t.Errorf("blocksOf(%q) = %d, %v, want %d", tt.in, got, err, tt.want)
		}
	}
}

// TestRunRealQuickDraw runs the pipeline on 20 real Quick, Draw! categories
// (fetched by scripts/fetch-quickdraw.sh), when they are there.
func TestRunRealQuickDraw(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	src := data.QuickDrawDir()
	cats, err := data.QuickDrawCategories(src)
	if err != nil {
		t.Skipf("Quick, Draw! data not found in %s (run scripts/fetch-quickdraw.sh, or set GDATTN_QUICKDRAW): %v", src, err)
	}
	qd := t.TempDir()
	for _, c := range cats[:20] {
		if err := os.Symlink(filepath.Join(src, c+".ndjson.gz"), filepath.Join(qd, c+".ndjson.gz")); err != nil {
			t.Fatal(err)
		}
	}
	o := tinyOptions(qd, t.TempDir(), "")
	o.Models, o.M = "lp,gd1", 200
	res, err := run(o, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fr := range res.Features {
		if len(fr.Test) != 5 || len(fr.Models) != 2 {
			t.Errorf("%s: %d held-out categories, %d models", fr.Kind, len(fr.Test), len(fr.Models))
		}
		// The pixel baseline separates real drawings well above chance
		// (0.2); the tiny CNN of this test is trained for one epoch only.
		if fr.Kind == "pca" && fr.Models[0].Top1 < 0.3 {
			t.Errorf("pca: linear probing top-1 %v, want >= 0.3", fr.Models[0].Top1)
		}
	}
}

// run runs every run of o's plan and merges them.
func run(o Options, stdout io.Writer) (*Results, error) {
	e, err := New(o)
	if err != nil {
		return nil, err
	}
	return e.Run(stdout)
}
