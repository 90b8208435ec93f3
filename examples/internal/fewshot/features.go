package fewshot

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/examples/internal/fewshot/cnn"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/npy"
	"github.com/gdattn/gdattn/internal/cli"
	"github.com/gdattn/gdattn/internal/infile"
	"github.com/gdattn/gdattn/internal/strictjson"
)

// featureSpec names a feature set; equal specs give equal features, and the
// cache folder is named after a hash of the spec.
type featureSpec struct {
	Kind        string `json:"kind"` // "cnn" (learned) or "pca" (raw pixels)
	TestClasses int    `json:"test_classes"`
	SplitSeed   uint64 `json:"split_seed"`
	Dim         int    `json:"dim"` // CNN penultimate width, or PCA components
	// CNN only.
	Channels [2]int `json:"channels,omitempty"`
	Epochs   int    `json:"epochs,omitempty"`
	Seed     uint64 `json:"seed,omitempty"`
	Val      int    `json:"val,omitempty"`
}

func (s featureSpec) key() string {
	b, _ := json.Marshal(s)
	b = append(b, cacheFormat...)
	return fmt.Sprintf("%s-%x", s.Kind, sha256.Sum256(b))[:len(s.Kind)+13]
}

// cacheFormat is part of every cache key: entries written before the
// cache stored the features exactly (the PCA features were rounded to
// float32, so a run reading them back differed from a fresh one) have
// other keys and are never read.
const cacheFormat = "exact-v2"

// cacheDtype is the .npy dtype that stores the features of f exactly:
// float32 when every value is one (the CNN's), else float64 (PCA's).
func cacheDtype(f *data.Features) string {
	for _, x := range f.X {
		if y := float64(float32(x)); y != x && !(math.IsNaN(x) && math.IsNaN(y)) {
			return npy.Float64
		}
	}
	return npy.Float32
}

// featureMeta is meta.json of a cached feature set.
type featureMeta struct {
	Spec         featureSpec `json:"spec"`
	Categories   []string    `json:"categories"`
	TrainClasses []int       `json:"train_classes"`
	TestClasses  []int       `json:"test_classes"`
	// CNN only: the classifier's training curve on the training classes.
	CNNLoss     []float64 `json:"cnn_loss,omitempty"`
	CNNValAcc   []float64 `json:"cnn_val_acc,omitempty"`
	BuildSecond float64   `json:"build_seconds"`
}

// featureSet is a feature array with its split.
type featureSet struct {
	F    *data.Features
	Meta featureMeta
	Dir  string // the cache entry's folder
	Name string // its name (spec.key())
}

// loadFeatures returns the features of spec from the cache folder, building
// and caching them first if needed. Pixels are read lazily (only to build).
//
// A new entry is written to a temporary folder beside it (the features,
// then meta.json, each fsynced), which is then renamed to the entry's
// name. The rename fails if another worker (another process, or another
// node sharing the cache folder) published the entry first: then the
// temporary folder is removed and that entry is read. So a reader never
// sees a half-written entry, and any number of workers can share the cache
// without a lock.
func loadFeatures(spec featureSpec, qdDir, cacheDir string, progress io.Writer) (*featureSet, error) {
	name := spec.key()
	dir := filepath.Join(cacheDir, name)
	fs, err := readEntry(spec, dir)
	if err == nil {
		logf(progress, "features: %s from cache %s (%d classes, dim %d)", spec.Kind, dir, fs.F.Classes(), fs.F.Dim)
		return fs, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	start := time.Now()
	px, err := data.ReadQuickDraw(qdDir, nil)
	if err != nil {
		return nil, err
	}
	train, test, err := data.SplitClasses(px.Classes(), spec.TestClasses, spec.SplitSeed)
	if err != nil {
		return nil, err
	}
	logf(progress, "features: building %s features: %d categories (%d train, %d held out), %d drawings each",
		spec.Kind, px.Classes(), len(train), len(test), px.MaxCount)
	m := featureMeta{Spec: spec, Categories: px.Names, TrainClasses: train, TestClasses: test}
	var f *data.Features
	switch spec.Kind {
	case "cnn":
		f, err = cnnFeatures(spec, px, train, &m, progress)
	case "pca":
		f, err = pcaFeatures(spec, px, train)
	default:
		err = fmt.Errorf("unknown feature kind %q (want cnn or pca)", spec.Kind)
	}
	if err != nil {
		return nil, err
	}
	m.BuildSecond = time.Since(start).Seconds()
	published, err := publish(dir, f, m)
	if err != nil {
		return nil, err
	}
	if !published {
		// Another worker published the entry meanwhile: read its features
		// (equal to ours: the cache is exact and the build deterministic),
		// so that every worker uses the very values the cache holds.
		logf(progress, "features: %s was published by another worker meanwhile; reading it", dir)
		return readEntry(spec, dir)
	}
	logf(progress, "features: wrote %s (%.0fs)", dir, m.BuildSecond)
	return &featureSet{F: f, Meta: m, Dir: dir, Name: name}, nil
}

// readEntry reads the cache entry dir of spec; an error wrapping
// os.ErrNotExist if there is none.
func readEntry(spec featureSpec, dir string) (*featureSet, error) {
	fp, cp, mp := filepath.Join(dir, "features.npy"), filepath.Join(dir, "counts.npy"), filepath.Join(dir, "meta.json")
	raw, err := infile.ReadFile(mp, cli.MaxResultsBytes)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			if _, derr := os.Stat(dir); derr == nil {
				// Only an older writer (which wrote in place, meta.json last)
				// leaves an entry without meta.json: an interrupted one.
				return nil, fmt.Errorf("%s: an incomplete cache entry (no meta.json; left by an interrupted run): remove the folder", dir)
			}
		}
		return nil, err
	}
	var m featureMeta
	if err := strictjson.Decode(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", mp, err)
	}
	if m.Spec != spec {
		return nil, fmt.Errorf("%s: cached spec %+v differs from %+v (hash collision?)", mp, m.Spec, spec)
	}
	f, err := data.ReadFeatures(fp, cp)
	if err != nil {
		return nil, err
	}
	f.Names = m.Categories
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return &featureSet{F: f, Meta: m, Dir: dir, Name: filepath.Base(dir)}, nil
}

// publish writes the entry dir atomically (see loadFeatures); false if
// another writer published it first.
func publish(dir string, f *data.Features, m featureMeta) (bool, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return false, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	fp, cp, mp := filepath.Join(tmp, "features.npy"), filepath.Join(tmp, "counts.npy"), filepath.Join(tmp, "meta.json")
	// Stored exactly: a later run reads back the very values this run uses.
	if err := data.WriteFeatures(fp, cp, f, cacheDtype(f)); err != nil {
		return false, err
	}
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return false, err
	}
	if err := os.WriteFile(mp, raw, 0o644); err != nil {
		return false, err
	}
	for _, p := range []string{fp, cp, mp, tmp} {
		if err := syncPath(p); err != nil {
			return false, err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp makes it 0700
		return false, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "meta.json")); serr == nil {
			return false, nil
		}
		return false, err
	}
	return true, syncPath(filepath.Dir(dir))
}

// syncPath fsyncs a file or folder.
func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// cnnFeatures trains the CNN on the training categories only and extracts
// the penultimate layer of every drawing.
func cnnFeatures(spec featureSpec, px *data.Features, train []int, m *featureMeta, progress io.Writer) (*data.Features, error) {
	net, res, err := trainCNN(spec, px, train, progress)
	if err != nil {
		return nil, err
	}
	m.CNNLoss, m.CNNValAcc = res.Loss, res.ValAcc
	return cnn.Extract(net, px, progress)
}

// trainCNN trains the classifier on the drawings of the train categories
// of px; it hands the trainer a copy of those categories alone, so the
// network never sees a held-out category.
func trainCNN(spec featureSpec, px *data.Features, train []int, progress io.Writer) (*cnn.Net, *cnn.TrainResult, error) {
	trainPx, err := px.Subset(train)
	if err != nil {
		return nil, nil, err
	}
	s, err := graph.NewScope(graph.Float32, spec.Seed)
	if err != nil {
		return nil, nil, err
	}
	cfg := cnn.Config{Side: data.QuickDrawSide, Channels: spec.Channels, Hidden: spec.Dim, Classes: len(train)}
	net, err := cnn.NewNet(s, cfg, 64)
	if err != nil {
		return nil, nil, err
	}
	res, err := cnn.Train(net, trainPx, cnn.TrainConfig{Epochs: spec.Epochs, Val: spec.Val, Seed: spec.Seed, Progress: progress})
	if err != nil {
		return nil, nil, err
	}
	return net, res, nil
}

// pcaFeatures projects the raw pixels on their leading principal
// components, fitted on the training categories only.
func pcaFeatures(spec featureSpec, px *data.Features, train []int) (*data.Features, error) {
	p, err := data.FitPCA(px, train, spec.Dim)
	if err != nil {
		return nil, err
	}
	return p.Apply(px)
}

func logf(w io.Writer, format string, a ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", a...)
	}
}
