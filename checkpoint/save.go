package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
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

// SaveOptions selects what Save writes besides the parameters.
type SaveOptions struct {
	// Optim, if non-nil, is saved under optim/ so training can resume
	// exactly. Its parameters must be parameters of the scope.
	Optim *OptimState
	// Extra arrays are saved under extra/, named like parameters.
	Extra map[string]*npy.Array
	// Locked tells Save that the caller holds the scope's lock
	// (graph.Scope.Lock) for the whole call, e.g. to save the optimiser
	// state of the same step as the parameters. Otherwise Save takes the
	// lock itself while it copies the parameters: a save while another
	// goroutine trains the model (train.Runner.Fit) holds the parameters
	// of one step. The lock is not reentrant: a caller holding it must set
	// Locked.
	Locked bool
}

// ckptWriter is the file interface Save writes through.
type ckptWriter interface {
	io.Writer
	Sync() error
	Close() error
}

// ckptHooks lets tests inject failures into Save. Production code leaves
// it zero.
var ckptHooks struct {
	create   func(path string) (ckptWriter, error) // nil: os.Create
	rename   func(from, to string) error           // nil: os.Rename
	exchange func(a, b string) (bool, error)       // nil: exchange
	// crash makes Save return at the first failure without any cleanup
	// or rollback, as if the process had died there.
	crash bool
	// beforeSwap, if set, is called once everything is written, just
	// before the swap (a test kills the process there).
	beforeSwap func()
}

// plannedFile is one array file of a checkpoint being saved.
type plannedFile struct {
	rel string // slash-separated path inside the directory
	a   *npy.Array
}

// Save writes the parameters of s (s.Params(), with their current values),
// config (marshalled with encoding/json; may be nil) and the optional
// optimiser state and extra arrays of opts to the directory dir, replacing
// the checkpoint already there. See docs/checkpoints.md.
//
// Save copies the parameters holding the scope's lock (see
// SaveOptions.Locked), so it may run while another goroutine trains or
// evaluates the model through package train: the checkpoint holds the
// parameters of one step.
//
// Every save writes a complete new directory, never touched again once in
// place, and swaps it with dir atomically (the practice of PyTorch's and
// safetensors' savers, write a temporary copy, fsync, rename, fsync the
// directory, extended to a directory of files):
//
//  1. everything is written and fsynced in a new sibling directory
//     dir+".tmp-"+tag that this call creates; tag names this process (its
//     id, start time and boot) plus a random part, so the directory is
//     marked as this process's from the instant it exists;
//  2. it takes dir's place in one step: a plain rename when dir does not
//     exist, else an atomic exchange of the two directories
//     (renameat2(RENAME_EXCHANGE) on Linux, renamex_np(RENAME_SWAP) on
//     macOS); the parent directory is fsynced;
//  3. the replaced checkpoint, now at the dir+".tmp-"+tag name, is deleted
//     file by file: only the files its manifest lists and config.json, then
//     its (empty) folders. Anything else found in it stays there;
//  4. leftovers of earlier saves to dir whose writer is provably dead (its
//     process is gone, or ran in another boot) are removed the same way:
//     a killed save leaves only directories whose name proves whose they
//     are, at every instant, so the next successful save removes them all.
//
// A crash at any point leaves at dir the complete previous checkpoint or the
// complete new one. Readers ([Read]) open dir once and read everything from
// the directory they opened, so a save running meanwhile cannot mix two
// checkpoints. On other systems step 2 is two renames (dir to a fresh
// dir+".old-"+tag name, then the new directory to dir): a crash between
// them leaves dir missing and the complete previous checkpoint at
// dir+".old-"+tag ([Read]'s error names it) until the next save.
//
// Save removes nothing it did not create: it refuses to replace a dir that
// is neither empty nor a checkpoint (a readable config.json of this
// format), and never deletes other siblings, whatever their names. If a
// step fails with an error, Save removes its temporary directory and leaves
// dir as it was. Concurrent saves to the same dir are not supported.
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
	if !opts.Locked {
		s.Lock()
	}
	files, man, err := planCheckpoint(s, opts)
	if !opts.Locked {
		s.Unlock()
	}
	if err != nil {
		return fail("%w", err)
	}
	cfg, err := json.Marshal(config)
	if err != nil {
		return fail("config: %w", err)
	}
	cfgSum, err := jsonSum(cfg)
	if err != nil {
		return fail("config: %w", err)
	}

	parent, base := filepath.Split(dir)
	if parent == "" {
		parent = "."
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fail("%w", err)
	}
	existed, oldFiles, err := replaceable(dir)
	if err != nil {
		return fail("%w", err)
	}
	// The name carries this process's identity from the instant it
	// exists: should the process die, a later save can prove tmp dead
	// and remove it (removeLeftovers).
	tmp, err := mkdirTagged(parent, base+".tmp-")
	if err != nil {
		return fail("%w", err)
	}
	swapped := false
	defer func() {
		// Until the swap tmp holds only what this call wrote.
		if err != nil && !swapped && !ckptHooks.crash {
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
	sums := map[string]string{}
	for _, f := range files {
		h := sha256.New()
		if err := writeSynced(filepath.Join(tmp, filepath.FromSlash(f.rel)), func(w io.Writer) error { return npy.Write(io.MultiWriter(w, h), f.a) }); err != nil {
			return fail("%s: %w", f.rel, err)
		}
		sums[f.rel] = hex.EncodeToString(h.Sum(nil))
	}
	body, err := configBody(man, sums, cfg, cfgSum)
	if err != nil {
		return fail("%s: %w", configFile, err)
	}
	// config.json last: a directory holding it is complete.
	if err := writeSynced(filepath.Join(tmp, configFile), func(w io.Writer) error { _, err := w.Write(body); return err }); err != nil {
		return fail("%s: %w", configFile, err)
	}
	if ckptHooks.beforeSwap != nil {
		ckptHooks.beforeSwap()
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := syncDir(dirs[i]); err != nil {
			return fail("sync %s: %w", dirs[i], err)
		}
	}
	old, err := swapDir(tmp, dir, existed)
	if err != nil {
		return fail("%w", err)
	}
	swapped = true
	if err := syncDir(parent); err != nil {
		return fail("sync %s: %w", parent, err)
	}
	if existed {
		// old still carries this process's identity in its name, so a
		// later save finishes the deletion should this process die
		// during it.
		removeReplaced(old, oldFiles)
	}
	// A complete checkpoint is now in place: what killed saves left is
	// superseded.
	removeLeftovers(dir)
	return nil
}

// configBody returns the content of config.json: the manifest with the
// files' checksums, the config, and the checksums of both.
func configBody(man Manifest, sums map[string]string, cfg json.RawMessage, cfgSum string) ([]byte, error) {
	for i := range man.Params {
		man.Params[i].SHA256 = sums[man.Params[i].File]
	}
	if man.Optim != nil {
		for i := range man.Optim.Moments {
			e := &man.Optim.Moments[i]
			e.MSHA256, e.VSHA256 = sums[e.M], sums[e.V]
		}
	}
	for i := range man.Extra {
		man.Extra[i].SHA256 = sums[man.Extra[i].File]
	}
	mb, err := json.Marshal(man)
	if err != nil {
		return nil, err
	}
	manSum, err := jsonSum(mb)
	if err != nil {
		return nil, err
	}
	body, err := json.MarshalIndent(configJSON{Manifest: mb, Config: cfg, SHA256: &checksums{Manifest: manSum, Config: cfgSum}}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(body, '\n'), nil
}

// replaceable reports whether dir exists and, if so, checks that Save may
// replace it (an empty directory, or a checkpoint) and returns the files
// its manifest lists, which are all that Save will delete of it.
func replaceable(dir string) (existed bool, files []string, err error) {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	if !fi.IsDir() {
		return false, nil, errors.New("exists and is not a directory")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, nil, err
	}
	if len(entries) == 0 {
		return true, nil, nil
	}
	notCkpt := func(why string) error {
		return fmt.Errorf("exists and is not a checkpoint (%s): refusing to replace it", why)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return false, nil, err
	}
	defer root.Close()
	raw, err := readRegular(root, configFile, MaxConfigSize, "the config cap checkpoint.MaxConfigSize")
	if err != nil {
		return false, nil, notCkpt(err.Error())
	}
	var cj struct {
		Manifest Manifest `json:"manifest"`
	} // lenient: any checkpoint of this format, older ones included
	if err := json.Unmarshal(raw, &cj); err != nil || cj.Manifest.Format != Format {
		return false, nil, notCkpt(configFile + " is not a gdattn checkpoint manifest")
	}
	files = []string{configFile}
	add := func(rel string) {
		if filepath.IsLocal(filepath.FromSlash(rel)) && strings.HasSuffix(rel, ".npy") {
			files = append(files, rel)
		}
	}
	for _, e := range cj.Manifest.Params {
		add(e.File)
	}
	if om := cj.Manifest.Optim; om != nil {
		for _, e := range om.Moments {
			add(e.M)
			add(e.V)
		}
	}
	for _, e := range cj.Manifest.Extra {
		add(e.File)
	}
	return true, files, nil
}

// swapDir puts the complete directory tmp at dir. When dir exists it
// exchanges the two atomically where the system can and returns tmp, which
// then holds the replaced checkpoint; elsewhere it renames dir aside to a
// reserved dir+".old-*" name first and returns that name.
func swapDir(tmp, dir string, existed bool) (string, error) {
	rename, exch := os.Rename, exchange
	if ckptHooks.rename != nil {
		rename = ckptHooks.rename
	}
	if ckptHooks.exchange != nil {
		exch = ckptHooks.exchange
	}
	if !existed {
		return "", rename(tmp, dir)
	}
	ok, err := exch(tmp, dir)
	if ok {
		return tmp, err
	}
	parent, base := filepath.Split(dir)
	if parent == "" {
		parent = "."
	}
	// A fresh name carrying this process's identity, created by the
	// rename itself.
	old, err := reserveTagged(parent, base+".old-")
	if err != nil {
		return "", err
	}
	if err := rename(dir, old); err != nil {
		return "", fmt.Errorf("set the old checkpoint aside: %w", err)
	}
	if err := rename(tmp, dir); err != nil {
		if ckptHooks.crash {
			return "", err
		}
		if rerr := rename(old, dir); rerr != nil {
			return "", fmt.Errorf("%w; restoring the old checkpoint from %s also failed: %v", err, old, rerr)
		}
		return "", err
	}
	return old, nil
}

// removeReplaced deletes the replaced checkpoint at old: the files its
// manifest listed and config.json, then its folders and old itself if they
// are empty. What else it holds stays.
func removeReplaced(old string, files []string) {
	root, err := os.OpenRoot(old)
	if err != nil {
		return
	}
	for _, f := range files {
		root.Remove(filepath.FromSlash(f))
	}
	root.Remove(saveMarker)
	for _, d := range []string{optimMDir, optimVDir, "optim", extraDir} {
		root.Remove(filepath.FromSlash(d))
	}
	root.Close()
	os.Remove(old)
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
		if err := st.Validate(); err != nil {
			return nil, man, fmt.Errorf("optimiser state: %w", err)
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
		// Named like a parameter path: slash-separated segments, none
		// empty, "." or "..".
		for _, seg := range strings.Split(name, "/") {
			if seg == "" || seg == "." || seg == ".." {
				return nil, man, fmt.Errorf("extra array %q: want a name of slash-separated segments, none empty, \".\" or \"..\"", name)
			}
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

// staleSiblings lists base.tmp-*/base.old-* siblings, for error hints
// (Save never deletes them).
func staleSiblings(dir string) []string {
	parent, base := filepath.Split(filepath.Clean(dir))
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

// CheckReplace reports whether [Save] may write to dir: nil when dir does
// not exist, is an empty directory or holds a checkpoint of this format
// (readable config.json); otherwise the error Save would return, so that a
// program can refuse an output location before any work starts.
func CheckReplace(dir string) error {
	if dir == "" {
		return errors.New("checkpoint: dir is empty")
	}
	dir = filepath.Clean(dir)
	if _, _, err := replaceable(dir); err != nil {
		return fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	return nil
}
