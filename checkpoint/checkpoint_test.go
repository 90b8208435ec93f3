package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/npy"
)

// modelConfig stands in for a model's config struct.
type modelConfig struct {
	D      int     `json:"d"`
	Kernel string  `json:"kernel"`
	Scale  float64 `json:"scale"`
}

// ckptScope builds a scope with parameters lin/w (2, 3), lin/b (3), a ()
// and block0/attn/wq (2, 2), drawn from seed. Options change it for the
// mismatch tests.
type ckptSpec struct {
	dt       tensor.Dtype
	seed     uint64
	wShape   tensor.Shape // default (2, 3)
	extra    bool         // add head/out (4)
	noScalar bool         // leave out a
}

func ckptScope(t *testing.T, sp ckptSpec) *graph.Scope {
	t.Helper()
	if sp.dt == (tensor.Dtype{}) {
		sp.dt = graph.Float64
	}
	if sp.wShape == nil {
		sp.wShape = tensor.Shape{2, 3}
	}
	s := must(graph.NewScope(sp.dt, sp.seed))
	lin := s.Sub("lin")
	must(lin.Param("w", sp.wShape, graph.Normal(1)))
	must(lin.Param("b", tensor.Shape{3}, graph.Normal(1)))
	if !sp.noScalar {
		must(s.Param("a", tensor.Shape{}, graph.Normal(1)))
	}
	must(s.Sub("block0").Sub("attn").Param("wq", tensor.Shape{2, 2}, graph.Normal(1)))
	if sp.extra {
		must(s.Sub("head").Param("out", tensor.Shape{4}, graph.Normal(1)))
	}
	return s
}

// paramValues snapshots every parameter's values by name.
func paramValues(t *testing.T, s *graph.Scope) map[string][]float64 {
	t.Helper()
	out := map[string][]float64{}
	for _, p := range s.Params() {
		out[p.Name()] = must(graph.Values(p))
	}
	return out
}

// listFiles returns the slash paths of all files under dir.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func TestParamFileName(t *testing.T) {
	for name, want := range map[string]string{
		"w":              "w.npy",
		"block0/attn/wq": "block0__attn__wq.npy",
		"lin/b":          "lin__b.npy",
	} {
		if got := ParamFileName(name); got != want {
			t.Errorf("ParamFileName(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	t.Run("float32", testCheckpointRoundTrip[float32])
	t.Run("float64", testCheckpointRoundTrip[float64])
}

func testCheckpointRoundTrip[T float](t *testing.T) {
	dt := dtypeOf[T]()
	dir := filepath.Join(t.TempDir(), "ckpt")
	src := ckptScope(t, ckptSpec{dt: dt, seed: 1})
	cfg := modelConfig{D: 8, Kernel: "softmax", Scale: 0.125}
	optim := &OptimState{Step: 7, M: map[string][]float64{"lin/w": {1, 2, 3, 4, 5, 6}, "a": {0.5}}, V: map[string][]float64{"lin/w": {6, 5, 4, 3, 2, 1}, "a": {0.25}}}
	extra := map[string]*npy.Array{"eval/acc": {Shape: []int{2}, Dtype: npy.Float64, F64: []float64{0.5, 0.75}}, "perm": {Shape: []int{3}, Dtype: npy.Int64, I64: []int64{2, 0, 1}}}
	// Save twice: the second save replaces the first.
	if err := Save(dir, ckptScope(t, ckptSpec{dt: dt, seed: 9}), modelConfig{D: 1}, SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Save(dir, src, cfg, SaveOptions{Optim: optim, Extra: extra}); err != nil {
		t.Fatal(err)
	}
	wantFiles := []string{"a.npy", "block0__attn__wq.npy", "config.json", "extra/eval__acc.npy", "extra/perm.npy",
		"lin__b.npy", "lin__w.npy", "optim/m/a.npy", "optim/m/lin__w.npy", "optim/v/a.npy", "optim/v/lin__w.npy"}
	if diff := cmp.Diff(wantFiles, listFiles(t, dir)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if sib := staleSiblings(dir); len(sib) != 0 {
		t.Errorf("left behind %v", sib)
	}

	dst := ckptScope(t, ckptSpec{dt: dt, seed: 2})
	var got modelConfig
	if err := Load(dir, dst, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cfg, got); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(paramValues(t, src), paramValues(t, dst)); diff != "" {
		t.Errorf("parameters (-want +got):\n%s", diff)
	}

	c, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(optim, c.Optim); diff != "" {
		t.Errorf("optimiser state (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(extra, c.Extra); diff != "" {
		t.Errorf("extra (-want +got):\n%s", diff)
	}
	wantNames := []string{"lin/w", "lin/b", "a", "block0/attn/wq"}
	var names []string
	for _, e := range c.Manifest.Params {
		names = append(names, e.Name)
		if e.Dtype != dt.String() {
			t.Errorf("%s: dtype %s, want %s", e.Name, e.Dtype, dt)
		}
	}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("manifest order (-want +got):\n%s", diff)
	}
}

func TestCheckpointConvertDtype(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ckpt")
	src := ckptScope(t, ckptSpec{dt: graph.Float32, seed: 1})
	if err := Save(dir, src, nil, SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	dst := ckptScope(t, ckptSpec{dt: graph.Float64, seed: 2})
	before := paramValues(t, dst)
	if err := Load(dir, dst, nil); err == nil || !strings.Contains(err.Error(), "dtype float32, the scope is float64") {
		t.Errorf("got %v, want a dtype error", err)
	}
	if diff := cmp.Diff(before, paramValues(t, dst)); diff != "" {
		t.Errorf("parameters changed by a failed load:\n%s", diff)
	}
	c := must(Read(dir))
	if err := c.Apply(dst, LoadOptions{ConvertDtype: true}); err != nil {
		t.Fatal(err)
	}
	// float32 -> float64 is exact.
	if diff := cmp.Diff(paramValues(t, src), paramValues(t, dst)); diff != "" {
		t.Errorf("converted parameters (-want +got):\n%s", diff)
	}
}

// TestCheckpointErrors breaks a saved checkpoint (or the scope it is loaded
// into) in one way per case, and checks the error names the culprit and no
// parameter changes.
func TestCheckpointErrors(t *testing.T) {
	writeFile := func(name, content string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	remove := func(name string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	truncate := func(name string, n int64) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.Truncate(filepath.Join(dir, name), n); err != nil {
				t.Fatal(err)
			}
		}
	}
	// editConfig rewrites config.json with s replaced by r.
	editConfig := func(s, r string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			p := filepath.Join(dir, "config.json")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), s) {
				t.Fatalf("config.json lacks %q:\n%s", s, b)
			}
			if err := os.WriteFile(p, []byte(strings.Replace(string(b), s, r, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name   string
		save   ckptSpec                              // the saved scope (seed 1)
		load   ckptSpec                              // the scope loaded into (seed 2)
		break_ func(t *testing.T, dir string)        // damage done to the checkpoint
		dir    func(t *testing.T, dir string) string // path given to Load (default dir)
		want   []string
	}{
		{name: "missing file", break_: remove("lin__w.npy"),
			want: []string{`parameter "lin/w"`, "lin__w.npy", "no such file"}},
		{name: "truncated file", break_: truncate("lin__w.npy", 128+20),
			want: []string{"lin__w.npy", "truncated: want 48 bytes of data, got 20"}},
		{name: "truncated header", break_: truncate("a.npy", 30),
			want: []string{"a.npy", "truncated"}},
		{name: "corrupt file", break_: writeFile("lin__b.npy", "PK\x03\x04 not an array"),
			want: []string{"lin__b.npy", "bad magic"}},
		{name: "file dtype differs from manifest", break_: func(t *testing.T, dir string) {
			if err := npy.WriteFile(filepath.Join(dir, "lin__b.npy"), &npy.Array{Shape: []int{3}, Dtype: npy.Float32, F32: []float32{1, 2, 3}}); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"lin__b.npy", "holds float32 [3], the manifest says float64 [3]"}},
		{name: "file shape differs from manifest", break_: func(t *testing.T, dir string) {
			if err := npy.WriteFile(filepath.Join(dir, "lin__b.npy"), &npy.Array{Shape: []int{1, 3}, Dtype: npy.Float64, F64: []float64{1, 2, 3}}); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"lin__b.npy", "holds float64 [1 3]"}},
		{name: "wrong shape", load: ckptSpec{wShape: tensor.Shape{3, 2}},
			want: []string{`parameter "lin/w"`, "shape [2 3] in the checkpoint, (3, 2) in the scope"}},
		{name: "wrong dtype", load: ckptSpec{dt: graph.Float32},
			want: []string{"dtype float64, the scope is float32"}},
		{name: "param missing from checkpoint", load: ckptSpec{extra: true},
			want: []string{`parameter "head/out" of the scope is missing from the checkpoint`}},
		{name: "extra param in checkpoint", save: ckptSpec{extra: true},
			want: []string{`checkpoint has parameter(s) ["head/out"] that the scope lacks`}},
		{name: "extra file", break_: writeFile("stray.npy", "x"),
			want: []string{"unexpected file stray.npy not listed in config.json"}},
		{name: "extra file in optim", break_: func(t *testing.T, dir string) {
			if err := os.MkdirAll(filepath.Join(dir, "optim", "m"), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile("optim/m/lin__w.npy", "x")(t, dir)
		}, want: []string{"unexpected file optim/m/lin__w.npy"}},
		{name: "corrupt JSON", break_: writeFile("config.json", `{"manifest": {"format": `),
			want: []string{"config.json: invalid JSON"}},
		{name: "missing config.json", break_: remove("config.json"),
			want: []string{"config.json", "no such file"}},
		{name: "wrong format", break_: editConfig(`"format": "gdattn-checkpoint"`, `"format": "other"`),
			want: []string{`manifest format "other" version 1`}},
		{name: "future version", break_: editConfig(`"version": 1`, `"version": 2`),
			want: []string{`format "gdattn-checkpoint" version 2, want "gdattn-checkpoint" version 1`}},
		{name: "path outside the checkpoint", break_: editConfig(`"file": "lin__b.npy"`, `"file": "../lin__b.npy"`),
			want: []string{`parameter "lin/b": file "../lin__b.npy" is not a local .npy path`}},
		{name: "config of the wrong type", break_: func(t *testing.T, dir string) {
			editConfig(`"d": 8`, `"d": "eight"`)(t, dir)
			if err := Reseal(dir); err != nil { // a deliberate edit
				t.Fatal(err)
			}
		}, want: []string{`config.json: config: key "d": string value, want int`}},
		{name: "config edited without a reseal", break_: editConfig(`"d": 8`, `"d": 9`),
			want: []string{"config.json: the config has SHA-256"}},
		{name: "missing directory", dir: func(t *testing.T, dir string) string { return dir + "-nope" },
			want: []string{"-nope", "no such file"}},
		{name: "interrupted save", dir: func(t *testing.T, dir string) string {
			if err := os.Rename(dir, dir+".old-123"); err != nil {
				t.Fatal(err)
			}
			return dir
		}, want: []string{"an interrupted save left", "ckpt.old-123"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ckpt")
			tc.save.seed = 1
			if err := Save(dir, ckptScope(t, tc.save), modelConfig{D: 8}, SaveOptions{}); err != nil {
				t.Fatal(err)
			}
			if tc.break_ != nil {
				tc.break_(t, dir)
			}
			path := dir
			if tc.dir != nil {
				path = tc.dir(t, dir)
			}
			tc.load.seed = 2
			dst := ckptScope(t, tc.load)
			before := paramValues(t, dst)
			var cfg modelConfig
			err := Load(path, dst, &cfg)
			if err == nil {
				t.Fatal("got nil error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if diff := cmp.Diff(before, paramValues(t, dst)); diff != "" {
				t.Errorf("parameters changed by a failed load (-before +after):\n%s", diff)
			}
		})
	}
}

func TestSaveErrors(t *testing.T) {
	s := ckptScope(t, ckptSpec{seed: 1})
	collide := must(graph.NewScope(graph.Float64, 1))
	must(collide.Param("a__b", tensor.Shape{1}, nil))
	must(collide.Sub("a").Param("b", tensor.Shape{1}, nil))
	caseCollide := must(graph.NewScope(graph.Float64, 1))
	must(caseCollide.Param("W", tensor.Shape{1}, nil))
	must(caseCollide.Param("w", tensor.Shape{1}, nil))
	tests := []struct {
		name string
		s    *graph.Scope
		cfg  any
		opts SaveOptions
		want string
	}{
		{"nil scope", nil, nil, SaveOptions{}, "scope is nil"},
		{"name collision", collide, nil, SaveOptions{}, `"a__b" and "a/b" map to the same file a__b.npy`},
		{"case collision", caseCollide, nil, SaveOptions{}, `"W" and "w" map to the same file w.npy`},
		{"unmarshalable config", s, func() {}, SaveOptions{}, "config: json: unsupported type"},
		{"optim unknown param", s, nil, SaveOptions{Optim: &OptimState{M: map[string][]float64{"x": {1}}, V: map[string][]float64{"x": {1}}}}, `"x" is not a parameter of the scope`},
		{"optim wrong size", s, nil, SaveOptions{Optim: &OptimState{M: map[string][]float64{"a": {1, 2}}, V: map[string][]float64{"a": {1}}}}, `parameter "a" has 2/1 moment values (M/V), want 1`},
		{"optim V without M", s, nil, SaveOptions{Optim: &OptimState{M: map[string][]float64{}, V: map[string][]float64{"a": {1}}}}, `"a" has V but no M`},
		{"invalid extra", s, nil, SaveOptions{Extra: map[string]*npy.Array{"x": {Shape: []int{2}, Dtype: npy.Float64}}}, `extra array "x": npy: shape [2] needs 2 elements`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			err := Save(filepath.Join(parent, "ckpt"), tc.s, tc.cfg, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want it to contain %q", err, tc.want)
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 0 {
				t.Errorf("a failed save left %v", entries)
			}
		})
	}
}

// failingFile fails its writes after limit bytes.
type failingFile struct {
	*os.File
	limit int
}

func (f *failingFile) Write(p []byte) (int, error) {
	if len(p) > f.limit {
		n, _ := f.File.Write(p[:f.limit])
		f.limit = 0
		return n, errors.New("injected write failure")
	}
	f.limit -= len(p)
	return f.File.Write(p)
}

// TestCheckpointCrash injects a failure at every file write and at the
// step that puts the new directory in place, for a save over an existing
// checkpoint, both as an error (Save cleans up) and as a crash (it stops
// dead, as if the process died), with the atomic exchange and with the
// two-rename fallback of systems without one. It checks the documented
// guarantee: dir holds the complete old or new checkpoint (or, only for a
// crash between the fallback's two renames, nothing, with the complete old
// one at dir.old-*), and a later save removes nothing a crash left.
func TestCheckpointCrash(t *testing.T) {
	reset := func() {
		ckptHooks.create, ckptHooks.rename, ckptHooks.exchange, ckptHooks.crash = nil, nil, nil, false
	}
	t.Cleanup(reset)
	oldScope := ckptScope(t, ckptSpec{seed: 1})
	newScope := ckptScope(t, ckptSpec{seed: 2})
	oldVals, newVals := paramValues(t, oldScope), paramValues(t, newScope)
	const nFiles = 5 // 4 parameters + config.json
	type point struct {
		name     string
		file     int  // fail writing the file-th file (0-based), or -1
		rename   int  // fail the rename-th rename of the fallback (0-based), or -1
		exchange bool // fail the exchange
		after    bool // crash right after the exchange, before the cleanup
	}
	var points []point
	for i := 0; i < nFiles; i++ {
		points = append(points, point{name: "file" + string(rune('0'+i)), file: i, rename: -1})
	}
	points = append(points,
		point{name: "exchange", file: -1, rename: -1, exchange: true},
		point{name: "after exchange", file: -1, rename: -1, after: true},
		point{name: "fallback/rename old aside", file: -1, rename: 0},
		point{name: "fallback/rename new in place", file: -1, rename: 1})
	for _, crash := range []bool{false, true} {
		for _, pt := range points {
			if pt.after && !crash {
				continue // a successful exchange is not an error
			}
			name := "error/" + pt.name
			if crash {
				name = "crash/" + pt.name
			}
			t.Run(name, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "ckpt")
				reset()
				if err := Save(dir, oldScope, modelConfig{D: 1}, SaveOptions{}); err != nil {
					t.Fatal(err)
				}
				files, renames := 0, 0
				ckptHooks.crash = crash
				ckptHooks.create = func(path string) (ckptWriter, error) {
					f, err := os.Create(path)
					if err != nil {
						return nil, err
					}
					files++
					if files-1 == pt.file {
						return &failingFile{File: f, limit: 100}, nil
					}
					return f, nil
				}
				fallback := strings.HasPrefix(pt.name, "fallback/")
				ckptHooks.exchange = func(a, b string) (bool, error) {
					switch {
					case fallback:
						return false, nil
					case pt.exchange:
						return true, errors.New("injected exchange failure")
					}
					ok, err := exchange(a, b)
					if ok && err == nil && pt.after {
						return true, errors.New("injected crash after the exchange")
					}
					return ok, err
				}
				ckptHooks.rename = func(from, to string) error {
					renames++
					if renames-1 == pt.rename {
						return errors.New("injected rename failure")
					}
					return os.Rename(from, to)
				}
				err := Save(dir, newScope, modelConfig{D: 2}, SaveOptions{})
				reset()
				if err == nil || !strings.Contains(err.Error(), "injected") {
					t.Fatalf("got %v, want the injected failure", err)
				}
				if pt.file >= 0 && files != pt.file+1 {
					t.Errorf("save went on after the failing file: %d files created", files)
				}
				left := staleSiblings(dir)
				dst := ckptScope(t, ckptSpec{seed: 3})
				var cfg modelConfig
				lerr := Load(dir, dst, &cfg)
				wantVals, wantD := oldVals, 1
				switch {
				case crash && pt.rename == 1:
					// The window between the fallback's renames: dir is
					// gone, the old checkpoint is complete next to it.
					if lerr == nil || !strings.Contains(lerr.Error(), "interrupted save") {
						t.Fatalf("load: got %v, want the interrupted-save error", lerr)
					}
					old, err := filepath.Glob(dir + ".old-*")
					if err != nil || len(old) != 1 {
						t.Fatalf("old copies %v (%v), want one", old, err)
					}
					if err := os.Rename(old[0], dir); err != nil {
						t.Fatal(err)
					}
					left = staleSiblings(dir)
					lerr = Load(dir, dst, &cfg)
				case pt.after:
					wantVals, wantD = newVals, 2
				}
				if lerr != nil {
					t.Fatalf("the checkpoint does not load: %v", lerr)
				}
				if diff := cmp.Diff(wantVals, paramValues(t, dst)); diff != "" || cfg.D != wantD {
					t.Errorf("loaded config %+v and parameters (-want +got):\n%s", cfg, diff)
				}
				if !crash && len(left) != 0 {
					t.Errorf("a failed save left %v", left)
				}
				// The next save succeeds and leaves what a crash left.
				if err := Save(dir, newScope, modelConfig{D: 2}, SaveOptions{}); err != nil {
					t.Fatal(err)
				}
				if err := Load(dir, dst, &cfg); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(newVals, paramValues(t, dst)); diff != "" || cfg.D != 2 {
					t.Errorf("after a good save: config %+v, parameters (-new +got):\n%s", cfg, diff)
				}
				if diff := cmp.Diff(left, staleSiblings(dir)); diff != "" {
					t.Errorf("siblings before and after a good save (-before +after):\n%s", diff)
				}
			})
		}
	}
}

// TestSaveFallbackReplaces: the two-rename fallback replaces a checkpoint
// and removes the old copy.
func TestSaveFallbackReplaces(t *testing.T) {
	t.Cleanup(func() { ckptHooks.exchange = nil })
	ckptHooks.exchange = func(a, b string) (bool, error) { return false, nil }
	dir := filepath.Join(t.TempDir(), "ckpt")
	for seed := uint64(1); seed <= 2; seed++ {
		if err := Save(dir, ckptScope(t, ckptSpec{seed: seed}), modelConfig{D: int(seed)}, SaveOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var cfg modelConfig
	if err := Load(dir, ckptScope(t, ckptSpec{seed: 3}), &cfg); err != nil || cfg.D != 2 {
		t.Errorf("load after two saves: D = %d, %v; want 2", cfg.D, err)
	}
	if sib := staleSiblings(dir); len(sib) != 0 {
		t.Errorf("left %v", sib)
	}
}

// float is the set of element types a Scope supports.
type float interface{ float32 | float64 }

// dtypeOf returns the tensor dtype of T.
func dtypeOf[T float]() tensor.Dtype {
	var z T
	if _, ok := any(z).(float32); ok {
		return graph.Float32
	}
	return graph.Float64
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
