package checkpoint

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
)

// FuzzReadCheckpoint builds a checkpoint directory from fuzzed bytes:
// config.json and up to three array files, a.npy, optim/m/a.npy and
// optim/v/a.npy (a moment file only when its bytes are not empty; the
// seeds' manifests list a.npy as parameter "a", some with its moments). With fix, the checksums of config.json are recomputed first, so
// the fuzzer also reaches the checks behind them. Read and ReadHeader must return (never
// panic or hang), and a checkpoint it accepts must be consistent: every
// array has its manifest shape and dtype, the optimiser state is valid, and
// DecodeConfig and Apply return without panicking, and ReadHeader accepts it
// too, with the same config and step. The seed corpus is in
// testdata/fuzz/FuzzReadCheckpoint.
func FuzzReadCheckpoint(f *testing.F) {
	f.Fuzz(func(t *testing.T, config, a, m, v []byte, fix bool) {
		dir := t.TempDir()
		files := map[string][]byte{"a.npy": a}
		if len(m) > 0 {
			files["optim/m/a.npy"] = m
		}
		if len(v) > 0 {
			files["optim/v/a.npy"] = v
		}
		if fix {
			if fixed, err := resumConfig(config, func(rel string) ([]byte, error) {
				if b, ok := files[rel]; ok {
					return b, nil
				}
				return nil, os.ErrNotExist
			}); err == nil {
				config = fixed
			}
		}
		files["config.json"] = config
		for rel, b := range files {
			p := filepath.Join(dir, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// ReadHeader reads config.json alone: it must not fail where Read
		// succeeds, and must see the same config and step.
		h, herr := ReadHeader(dir)
		c, err := Read(dir)
		if err != nil {
			return
		}
		if herr != nil {
			t.Fatalf("Read accepted a checkpoint ReadHeader refused: %v", herr)
		}
		if h.Step() != c.Header().Step() || !slices.Equal(h.Config, c.Config) {
			t.Fatalf("ReadHeader: step %d, config %s; Read: step %d, config %s", h.Step(), h.Config, c.Header().Step(), c.Config)
		}
		for _, e := range c.Manifest.Params {
			arr := c.Params[e.Name]
			if arr == nil || !slices.Equal(arr.Shape, e.Shape) || arr.Dtype != e.Dtype || arr.Validate() != nil {
				t.Fatalf("accepted parameter %q: array %+v, manifest %+v", e.Name, arr, e)
			}
		}
		if c.Optim != nil {
			if err := c.Optim.Validate(); err != nil {
				t.Fatalf("accepted an invalid optimiser state: %v", err)
			}
			for name, mv := range c.Optim.M {
				if arr := c.Params[name]; arr == nil || len(mv) != arr.Size() || len(c.Optim.V[name]) != arr.Size() {
					t.Fatalf("accepted moments of %q that do not fit the parameter", name)
				}
			}
		}
		var cfg any
		_ = c.DecodeConfig(&cfg)
		s, err := graph.NewScope(graph.Float32, 1)
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Param("a", tensor.Shape{2}, graph.Zeros())
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Apply(s, LoadOptions{ConvertDtype: true}); err == nil {
			vals, err := graph.Values(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range vals {
				if math.IsInf(x, 0) && !slices.ContainsFunc(c.Params["a"].Float64s(), func(y float64) bool { return math.IsInf(y, 0) }) {
					t.Fatalf("Apply wrote %v from finite values", x)
				}
			}
		}
	})
}
