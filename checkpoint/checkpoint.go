package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	G "gorgonia.org/gorgonia"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/npy"
)

// Checkpoint layout identifiers, stored in the manifest.
const (
	Format  = "gdattn-checkpoint"
	Version = 1
)

// Names of the files and folders inside a checkpoint directory.
const (
	configFile = "config.json"
	optimMDir  = "optim/m"
	optimVDir  = "optim/v"
	extraDir   = "extra"
)

// Manifest describes the arrays of a checkpoint. It is stored, with the
// caller's model config, in the checkpoint's config.json (see "Checkpoint format" in README.md).
type Manifest struct {
	Format  string          `json:"format"`  // the constant Format
	Version int             `json:"version"` // the constant Version
	Dtype   string          `json:"dtype"`   // the scope's dtype: "float32" or "float64"
	Params  []ManifestEntry `json:"params"`  // in the scope's creation order
	Optim   *OptimManifest  `json:"optim,omitempty"`
	Extra   []ManifestEntry `json:"extra,omitempty"`
}

// ManifestEntry describes one array file of a checkpoint.
type ManifestEntry struct {
	Name  string `json:"name"`  // parameter path, e.g. "block0/attn/wq"
	Shape []int  `json:"shape"` // [] for a scalar
	Dtype string `json:"dtype"` // "float32", "float64" or "int64"
	File  string `json:"file"`  // slash-separated path relative to the checkpoint directory
}

// OptimState is the resumable state of an Adam/AdamW optimiser (package
// train's State is this type): the number of updates made and the first and
// second moments, keyed by parameter name (each slice has the parameter's
// size, row-major).
type OptimState struct {
	Step int
	M, V map[string][]float64
}

// OptimManifest describes saved optimiser state ([OptimState]).
type OptimManifest struct {
	Step    int          `json:"step"`
	Moments []OptimEntry `json:"moments"`
}

// OptimEntry names the files of one parameter's Adam moments (float64
// arrays of the parameter's shape).
type OptimEntry struct {
	Name string `json:"name"`
	M    string `json:"m"`
	V    string `json:"v"`
}

// configJSON is the content of config.json.
type configJSON struct {
	Manifest Manifest        `json:"manifest"`
	Config   json.RawMessage `json:"config"`
}

// ParamFileName returns the file name a parameter is stored under: its path
// with every '/' replaced by "__", plus ".npy" ("block0/attn/wq" ->
// "block0__attn__wq.npy").
func ParamFileName(name string) string {
	return strings.ReplaceAll(name, "/", "__") + ".npy"
}

// SaveOptions selects what Save writes besides the parameters.
type SaveOptions struct {
	// Optim, if non-nil, is saved under optim/ so training can resume
	// exactly. Its parameters must be parameters of the scope.
	Optim *OptimState
	// Extra arrays are saved under extra/, named like parameters.
	Extra map[string]*npy.Array
}

// ckptWriter is the file interface Save writes through.
type ckptWriter interface {
	io.Writer
	Sync() error
	Close() error
}

// ckptHooks lets tests inject failures into Save. Production code
// leaves it zero.
var ckptHooks struct {
	create func(path string) (ckptWriter, error) // nil: os.Create
	rename func(from, to string) error           // nil: os.Rename
	// crash makes Save return at the first failure without any
	// cleanup or rollback, as if the process had died there.
	crash bool
}

// plannedFile is one array file of a checkpoint being saved.
type plannedFile struct {
	rel string // slash-separated path inside the directory
	a   *npy.Array
}

// Save writes the parameters of s (s.Params(), with their current
// values), config (marshalled with encoding/json; may be nil) and the
// optional optimiser state and extra arrays of opts to the directory dir,
// replacing any checkpoint already there. See "Checkpoint format" in README.md for the layout.
//
// The save is atomic in this sense: everything is written and fsynced in a
// new sibling directory dir+".tmp-*"; then, if dir exists, it is renamed
// aside to dir+".old-*", the new directory is renamed to dir, the parent
// directory is fsynced and the old copy removed. A crash at any point leaves
// at dir either the complete previous checkpoint or the complete new one,
// except in the instant between the two renames, after which dir is missing
// and the complete previous checkpoint is at dir+".old-*" (Load's
// error then names it; rename it back to dir). If a step fails with an
// error, Save restores the previous state and removes what it
// wrote. Stale dir+".tmp-*"/".old-*" siblings left by crashes are removed by
// the next successful save while dir exists. Concurrent saves to the same
// dir are not supported.
func Save(dir string, s *graph.Scope, config any, opts SaveOptions) (err error) {
	if s == nil {
		return errors.New("checkpoint: scope is nil")
	}
	if dir == "" {
		return errors.New("checkpoint: dir is empty")
	}
	dir = filepath.Clean(dir)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("checkpoint %s: "+format, append([]any{dir}, args...)...)
	}
	files, man, err := planCheckpoint(s, opts)
	if err != nil {
		return fail("%w", err)
	}
	cfg, err := json.Marshal(config)
	if err != nil {
		return fail("config: %w", err)
	}
	body, err := json.MarshalIndent(configJSON{Manifest: man, Config: cfg}, "", "  ")
	if err != nil {
		return fail("%s: %w", configFile, err)
	}
	body = append(body, '\n')

	parent, base := filepath.Split(dir)
	if parent == "" {
		parent = "."
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fail("%w", err)
	}
	if fi, err := os.Lstat(dir); err == nil {
		if !fi.IsDir() {
			return fail("exists and is not a directory")
		}
		removeStale(parent, base)
	}
	tmp, err := os.MkdirTemp(parent, base+".tmp-*")
	if err != nil {
		return fail("%w", err)
	}
	defer func() {
		if err != nil && !ckptHooks.crash {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fail("%w", err)
	}
	dirs := []string{tmp}
	for _, d := range []string{"optim", optimMDir, optimVDir, extraDir} {
		if (strings.HasPrefix(d, "optim") && opts.Optim == nil) || (d == extraDir && len(opts.Extra) == 0) {
			continue
		}
		p := filepath.Join(tmp, filepath.FromSlash(d))
		if err := os.Mkdir(p, 0o755); err != nil {
			return fail("%w", err)
		}
		dirs = append(dirs, p)
	}
	for _, f := range files {
		if err := writeSynced(filepath.Join(tmp, filepath.FromSlash(f.rel)), func(w io.Writer) error { return npy.Write(w, f.a) }); err != nil {
			return fail("%s: %w", f.rel, err)
		}
	}
	// config.json last: a temporary directory holding it is complete.
	if err := writeSynced(filepath.Join(tmp, configFile), func(w io.Writer) error { _, err := w.Write(body); return err }); err != nil {
		return fail("%s: %w", configFile, err)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := syncDir(dirs[i]); err != nil {
			return fail("sync %s: %w", dirs[i], err)
		}
	}
	return commitDir(tmp, dir, parent, base)
}

// planCheckpoint lists the files to write and builds the manifest.
func planCheckpoint(s *graph.Scope, opts SaveOptions) ([]plannedFile, Manifest, error) {
	man := Manifest{Format: Format, Version: Version, Dtype: s.Dtype().String(), Params: []ManifestEntry{}}
	var files []plannedFile
	used := map[string]string{} // lower-cased file path -> name, to catch collisions
	add := func(rel, name string, a *npy.Array) error {
		key := strings.ToLower(rel)
		if prev, ok := used[key]; ok {
			return fmt.Errorf("%q and %q map to the same file %s", prev, name, rel)
		}
		used[key] = name
		files = append(files, plannedFile{rel: rel, a: a})
		return nil
	}
	shapes := map[string][]int{}
	for _, p := range s.Params() {
		a, err := nodeArray(p)
		if err != nil {
			return nil, man, fmt.Errorf("parameter %q: %w", p.Name(), err)
		}
		rel := ParamFileName(p.Name())
		if err := add(rel, p.Name(), a); err != nil {
			return nil, man, err
		}
		shapes[p.Name()] = a.Shape
		man.Params = append(man.Params, ManifestEntry{Name: p.Name(), Shape: a.Shape, Dtype: a.Dtype, File: rel})
	}
	if st := opts.Optim; st != nil {
		if st.Step < 0 {
			return nil, man, fmt.Errorf("optimiser state: Step %d < 0", st.Step)
		}
		om := &OptimManifest{Step: st.Step, Moments: []OptimEntry{}}
		names := make([]string, 0, len(st.M))
		for name := range st.M {
			names = append(names, name)
		}
		for name := range st.V {
			if _, ok := st.M[name]; !ok {
				return nil, man, fmt.Errorf("optimiser state: parameter %q has V but no M", name)
			}
		}
		// Scope order, so the manifest is deterministic.
		order := map[string]int{}
		for i, e := range man.Params {
			order[e.Name] = i
		}
		for _, name := range names {
			if _, ok := order[name]; !ok {
				return nil, man, fmt.Errorf("optimiser state: %q is not a parameter of the scope", name)
			}
		}
		sort.Slice(names, func(i, j int) bool { return order[names[i]] < order[names[j]] })
		for _, name := range names {
			shape := shapes[name]
			n := (&npy.Array{Shape: shape}).Size()
			m, v := st.M[name], st.V[name]
			if len(m) != n || len(v) != n {
				return nil, man, fmt.Errorf("optimiser state: parameter %q has %d/%d moment values (M/V), want %d", name, len(m), len(v), n)
			}
			e := OptimEntry{Name: name, M: optimMDir + "/" + ParamFileName(name), V: optimVDir + "/" + ParamFileName(name)}
			if err := add(e.M, name, &npy.Array{Shape: shape, Dtype: npy.Float64, F64: m}); err != nil {
				return nil, man, err
			}
			if err := add(e.V, name, &npy.Array{Shape: shape, Dtype: npy.Float64, F64: v}); err != nil {
				return nil, man, err
			}
			om.Moments = append(om.Moments, e)
		}
		man.Optim = om
	}
	extra := make([]string, 0, len(opts.Extra))
	for name := range opts.Extra {
		extra = append(extra, name)
	}
	sort.Strings(extra)
	for _, name := range extra {
		a := opts.Extra[name]
		if name == "" {
			return nil, man, errors.New("extra array with an empty name")
		}
		if err := a.Validate(); err != nil {
			return nil, man, fmt.Errorf("extra array %q: %w", name, err)
		}
		rel := extraDir + "/" + ParamFileName(name)
		if err := add(rel, name, a); err != nil {
			return nil, man, err
		}
		man.Extra = append(man.Extra, ManifestEntry{Name: name, Shape: slices.Clone(a.Shape), Dtype: a.Dtype, File: rel})
	}
	return files, man, nil
}

// nodeArray copies a parameter's value into an npy array of its dtype.
func nodeArray(p *G.Node) (*npy.Array, error) {
	vals, err := graph.Values(p)
	if err != nil {
		return nil, err
	}
	a := &npy.Array{Shape: append([]int{}, p.Shape()...)}
	switch p.Dtype() {
	case graph.Float64:
		a.Dtype, a.F64 = npy.Float64, vals
	case graph.Float32:
		a.Dtype, a.F32 = npy.Float32, make([]float32, len(vals))
		for i, v := range vals {
			a.F32[i] = float32(v) // exact: the values were float32
		}
	default:
		return nil, fmt.Errorf("unsupported dtype %v", p.Dtype())
	}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	return a, nil
}

// writeSynced creates path, lets write fill it, then fsyncs and closes it.
func writeSynced(path string, write func(io.Writer) error) (err error) {
	var f ckptWriter
	if ckptHooks.create != nil {
		f, err = ckptHooks.create(path)
	} else {
		f, err = os.Create(path)
	}
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func rename(from, to string) error {
	if ckptHooks.rename != nil {
		return ckptHooks.rename(from, to)
	}
	return os.Rename(from, to)
}

// commitDir moves the complete temporary directory tmp to dir, setting any
// existing dir aside first and removing it after.
func commitDir(tmp, dir, parent, base string) (err error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("checkpoint %s: "+format, append([]any{dir}, args...)...)
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := rename(tmp, dir); err != nil {
			return fail("%w", err)
		}
		if err := syncDir(parent); err != nil {
			return fail("sync %s: %w", parent, err)
		}
		return nil
	}
	// Reserve a unique name for the old copy; os.Rename will not replace an
	// existing directory, so free the name again right away.
	old, err := os.MkdirTemp(parent, base+".old-*")
	if err != nil {
		return fail("%w", err)
	}
	if err := os.Remove(old); err != nil {
		return fail("%w", err)
	}
	if err := rename(dir, old); err != nil {
		return fail("set the old checkpoint aside: %w", err)
	}
	if err := rename(tmp, dir); err != nil {
		if !ckptHooks.crash {
			if rerr := rename(old, dir); rerr != nil {
				return fail("%w; restoring the old checkpoint from %s also failed: %v", err, old, rerr)
			}
		}
		return fail("%w", err)
	}
	if err := syncDir(parent); err != nil {
		return fail("sync %s: %w", parent, err)
	}
	if err := os.RemoveAll(old); err != nil {
		return fail("remove the old checkpoint %s: %w", old, err)
	}
	return nil
}

// removeStale removes siblings base.tmp-* and base.old-* left by crashed
// saves. It is called only while dir exists, when they are superseded.
func removeStale(parent, base string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		if n := e.Name(); e.IsDir() && (strings.HasPrefix(n, base+".tmp-") || strings.HasPrefix(n, base+".old-")) {
			os.RemoveAll(filepath.Join(parent, n))
		}
	}
}

// staleSiblings lists base.tmp-*/base.old-* siblings, for error hints.
func staleSiblings(dir string) []string {
	parent, base := filepath.Split(dir)
	if parent == "" {
		parent = "."
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); e.IsDir() && (strings.HasPrefix(n, base+".tmp-") || strings.HasPrefix(n, base+".old-")) {
			out = append(out, filepath.Join(parent, n))
		}
	}
	return out
}

// syncDir fsyncs a directory so that the entries created in it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Checkpoint is a checkpoint read into memory by [Read]: every
// file has been read and checked against the manifest.
type Checkpoint struct {
	Dir      string
	Manifest Manifest
	// Config is the raw JSON of the model config; see DecodeConfig.
	Config json.RawMessage
	// Params maps parameter paths to their arrays.
	Params map[string]*npy.Array
	// Optim is the saved optimiser state, nil if none was saved.
	Optim *OptimState
	// Extra holds the extra arrays, by name (empty if none).
	Extra map[string]*npy.Array
}

// LoadOptions configures [Checkpoint.Apply].
type LoadOptions struct {
	// ConvertDtype allows loading a float32 checkpoint into a float64 scope
	// and vice versa (float64 -> float32 rounds). Without it a dtype
	// mismatch is an error.
	ConvertDtype bool
}

// Load reads the checkpoint in dir, decodes its model config into
// config (if non-nil; a pointer, as for json.Unmarshal) and copies its
// parameters into the parameters of s. Everything is read and checked first:
// the manifest must list exactly s.Params() with the same shapes and dtype,
// and every file must be present, complete and consistent with the manifest.
// On any error the parameters are left untouched (config may have been
// partly filled if decoding it is what failed). Errors name the offending
// file or parameter. For the optimiser state, extra arrays or dtype
// conversion, use [Read] and [Checkpoint.Apply].
func Load(dir string, s *graph.Scope, config any) error {
	c, err := Read(dir)
	if err != nil {
		return err
	}
	if err := c.check(s, LoadOptions{}); err != nil {
		return err
	}
	if config != nil {
		if err := c.DecodeConfig(config); err != nil {
			return err
		}
	}
	return c.copyTo(s)
}

// Read reads and checks every file of the checkpoint in dir: the
// manifest and config in config.json, each parameter, optimiser-moment and
// extra array (shape and dtype as the manifest says, no truncation or
// trailing bytes), and that the directory holds no .npy file the manifest
// does not list.
func Read(dir string) (*Checkpoint, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("checkpoint %s: "+format, append([]any{dir}, args...)...)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if sib := staleSiblings(dir); len(sib) > 0 {
				return nil, fail("no such directory; an interrupted save left %v (a complete one holds config.json: rename it to %s)", sib, dir)
			}
		}
		return nil, fail("%w", err)
	}
	if !fi.IsDir() {
		return nil, fail("not a directory")
	}
	raw, err := os.ReadFile(filepath.Join(dir, configFile))
	if err != nil {
		return nil, fail("%s: %w", configFile, err)
	}
	var cj configJSON
	if err := json.Unmarshal(raw, &cj); err != nil {
		return nil, fail("%s: invalid JSON: %w", configFile, err)
	}
	man := cj.Manifest
	if man.Format != Format || man.Version != Version {
		return nil, fail("%s: manifest format %q version %d, want %q version %d", configFile, man.Format, man.Version, Format, Version)
	}
	if _, err := graph.ParseDtype(man.Dtype); err != nil {
		return nil, fail("%s: manifest dtype: %w", configFile, err)
	}
	c := &Checkpoint{Dir: dir, Manifest: man, Config: cj.Config, Params: map[string]*npy.Array{}, Extra: map[string]*npy.Array{}}
	listed := map[string]bool{}
	read := func(kind, name, rel string, shape []int, dtype string) (*npy.Array, error) {
		if !filepath.IsLocal(filepath.FromSlash(rel)) || !strings.HasSuffix(rel, ".npy") {
			return nil, fail("%s: %s %q: file %q is not a local .npy path", configFile, kind, name, rel)
		}
		if listed[rel] {
			return nil, fail("%s: file %q is listed twice", configFile, rel)
		}
		listed[rel] = true
		a, err := npy.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %s %q: %w", kind, name, err)
		}
		if !slices.Equal(a.Shape, shape) || (dtype != "" && a.Dtype != dtype) {
			return nil, fail("%s: holds %s %v, the manifest says %s %v for %s %q", rel, a.Dtype, a.Shape, dtype, shape, kind, name)
		}
		return a, nil
	}
	shapes := map[string][]int{}
	for _, e := range man.Params {
		if e.Name == "" || c.Params[e.Name] != nil {
			return nil, fail("%s: empty or duplicate parameter name %q", configFile, e.Name)
		}
		if e.Dtype != man.Dtype {
			return nil, fail("%s: parameter %q has dtype %q in a %s checkpoint", configFile, e.Name, e.Dtype, man.Dtype)
		}
		a, err := read("parameter", e.Name, e.File, e.Shape, e.Dtype)
		if err != nil {
			return nil, err
		}
		c.Params[e.Name] = a
		shapes[e.Name] = a.Shape
	}
	if om := man.Optim; om != nil {
		st := &OptimState{Step: om.Step, M: map[string][]float64{}, V: map[string][]float64{}}
		if om.Step < 0 {
			return nil, fail("%s: optimiser step %d < 0", configFile, om.Step)
		}
		for _, e := range om.Moments {
			shape, ok := shapes[e.Name]
			if !ok || st.M[e.Name] != nil {
				return nil, fail("%s: optimiser moments for %q, which is not a parameter of the checkpoint or is listed twice", configFile, e.Name)
			}
			m, err := read("optimiser moment m of", e.Name, e.M, shape, npy.Float64)
			if err != nil {
				return nil, err
			}
			v, err := read("optimiser moment v of", e.Name, e.V, shape, npy.Float64)
			if err != nil {
				return nil, err
			}
			st.M[e.Name], st.V[e.Name] = m.F64, v.F64
		}
		c.Optim = st
	}
	for _, e := range man.Extra {
		if e.Name == "" || c.Extra[e.Name] != nil {
			return nil, fail("%s: empty or duplicate extra array name %q", configFile, e.Name)
		}
		a, err := read("extra array", e.Name, e.File, e.Shape, e.Dtype)
		if err != nil {
			return nil, err
		}
		c.Extra[e.Name] = a
	}
	// Any .npy file the manifest does not list means the directory and the
	// manifest disagree (for instance files from another model).
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".npy") {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if !listed[filepath.ToSlash(rel)] {
			return fmt.Errorf("unexpected file %s not listed in %s", filepath.ToSlash(rel), configFile)
		}
		return nil
	})
	if err != nil {
		return nil, fail("%w", err)
	}
	return c, nil
}

// DecodeConfig unmarshals the saved model config into v (a pointer, as for
// json.Unmarshal).
func (c *Checkpoint) DecodeConfig(v any) error {
	if err := json.Unmarshal(c.Config, v); err != nil {
		return fmt.Errorf("checkpoint %s: %s: config: %w", c.Dir, configFile, err)
	}
	return nil
}

// Apply copies the checkpoint's parameters into the parameters of s, after
// checking that the checkpoint holds exactly s.Params() with the same shapes
// and (unless opts.ConvertDtype) the same dtype. On error no parameter is
// changed.
func (c *Checkpoint) Apply(s *graph.Scope, opts LoadOptions) error {
	if err := c.check(s, opts); err != nil {
		return err
	}
	return c.copyTo(s)
}

func (c *Checkpoint) check(s *graph.Scope, opts LoadOptions) error {
	if s == nil {
		return errors.New("checkpoint: scope is nil")
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("checkpoint %s: "+format, append([]any{c.Dir}, args...)...)
	}
	if want := s.Dtype().String(); c.Manifest.Dtype != want && !opts.ConvertDtype {
		return fail("dtype %s, the scope is %s (set LoadOptions.ConvertDtype to convert)", c.Manifest.Dtype, want)
	}
	params := s.Params()
	inScope := map[string]bool{}
	for _, p := range params {
		inScope[p.Name()] = true
		a, ok := c.Params[p.Name()]
		if !ok {
			return fail("parameter %q of the scope is missing from the checkpoint", p.Name())
		}
		if !slices.Equal(a.Shape, []int(p.Shape())) {
			return fail("parameter %q (%s): shape %v in the checkpoint, %v in the scope", p.Name(), ParamFileName(p.Name()), a.Shape, p.Shape())
		}
	}
	var extra []string
	for name := range c.Params {
		if !inScope[name] {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return fail("checkpoint has parameter(s) %q that the scope lacks", extra)
	}
	return nil
}

func (c *Checkpoint) copyTo(s *graph.Scope) error {
	for _, p := range s.Params() {
		if err := graph.SetValue(p, c.Params[p.Name()].Float64s()); err != nil {
			return fmt.Errorf("checkpoint %s: parameter %q: %w", c.Dir, p.Name(), err)
		}
	}
	return nil
}
