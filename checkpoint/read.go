package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/npy"
)

// readHook, when set by a test, is called by Read at named stages
// ("config read": after config.json, before the arrays).
var readHook func(stage string)

// MaxConfigSize is the most bytes a checkpoint's config.json may hold (64
// MiB): the manifest lists one short entry per array, and a model config is
// a few kilobytes, so real checkpoints stay far below it; a larger file is
// refused before it is read.
const MaxConfigSize = 64 << 20

// readAttempts bounds how often Read starts over when the checkpoint was
// replaced while it was reading.
const readAttempts = 4

// Read reads and checks every file of the checkpoint in dir: config.json
// (decoded strictly: an unknown key at any level is an error), each
// parameter, optimiser-moment and extra array (shape and dtype as the
// manifest says, no truncation or trailing bytes, the SHA-256 the manifest
// records), the manifest's own checksum, the optimiser state's values
// ([OptimState.Validate]), and that the directory holds no .npy file the
// manifest does not list. Only regular files inside dir are read: a
// symbolic link leaving it is refused, a FIFO or device is an error. A
// checkpoint written before checksums (no sha256 keys) is read unverified.
// The model config (Checkpoint.Config) is checked against its checksum
// here, before Read returns, so every reader of it — a model package's
// Load, [Checkpoint.DecodeConfig], a command's own decoder — sees only a
// verified config.
//
// Read opens dir once and reads every file from the directory it opened,
// so it sees one checkpoint even while [Save] replaces it. If that save
// removes the replaced files before Read is done, Read starts over on the
// new checkpoint (a few times at most, then it reports the concurrent
// saves): it returns the old or the new checkpoint, complete, or an error.
func Read(dir string) (*Checkpoint, error) { return readRetrying(dir, readRoot) }

// readRetrying reads dir with read, once or, while a concurrent save
// replaces dir during the read, a few times; see [Read].
func readRetrying[T any](dir string, read func(*os.Root, string) (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		c, replaced, err := readOnce(dir, read)
		if err == nil || !replaced {
			return c, err
		}
		if attempt == readAttempts {
			var zero T
			return zero, fmt.Errorf("checkpoint %s: replaced by other saves %d times while being read; last error: %w", dir, attempt, err)
		}
	}
}

// readOnce reads dir with read. When it fails, replaced reports whether
// dir no longer names the directory it opened (a save replaced it).
func readOnce[T any](dir string, read func(*os.Root, string) (T, error)) (c T, replaced bool, err error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("checkpoint %s: "+format, append([]any{dir}, args...)...)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if sib := staleSiblings(dir); len(sib) > 0 {
				return c, false, fail("no such directory; an interrupted save left %v (a complete one holds config.json: rename it to %s)", sib, dir)
			}
		}
		if fi, serr := os.Stat(dir); serr == nil && !fi.IsDir() {
			return c, false, fail("not a directory")
		}
		return c, false, fail("%w", err)
	}
	defer root.Close()
	opened, err := root.Stat(".")
	if err != nil {
		return c, false, fail("%w", err)
	}
	defer func() {
		if err != nil {
			now, serr := os.Stat(dir)
			replaced = serr != nil || !os.SameFile(opened, now)
		}
	}()
	c, err = read(root, dir)
	return c, false, err
}

// header is config.json decoded and checked by readHeader.
type header struct {
	cj       configJSON
	man      Manifest
	verified bool // config.json records checksums
}

// readHeader reads config.json of the opened directory root (dir names it
// in errors), decodes it strictly, checks the manifest's format, version
// and dtype and, if the file records checksums, their form and the
// config's checksum. The manifest's own checksum is left to the caller:
// readRoot checks it last, after the entries, whose damage it can report
// more precisely.
func readHeader(root *os.Root, dir string) (*header, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("checkpoint %s: "+format, append([]any{dir}, args...)...)
	}
	raw, err := readRegular(root, configFile, MaxConfigSize, "the config cap checkpoint.MaxConfigSize")
	if err != nil {
		return nil, fail("%s: %w", configFile, err)
	}
	if readHook != nil {
		readHook("config read")
	}
	h := &header{}
	if err := decodeStrict(raw, &h.cj); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, fail("%s: invalid JSON: %w", configFile, err)
		}
		return nil, fail("%s: %w", configFile, err)
	}
	if err := decodeStrict(h.cj.Manifest, &h.man); err != nil {
		return nil, fail("%s: manifest: %w", configFile, err)
	}
	if h.man.Format != Format || h.man.Version != Version {
		return nil, fail("%s: manifest format %q version %d, want %q version %d", configFile, h.man.Format, h.man.Version, Format, Version)
	}
	if _, err := graph.ParseDtype(h.man.Dtype); err != nil {
		return nil, fail("%s: manifest dtype: %w", configFile, err)
	}
	if om := h.man.Optim; om != nil && (om.Step < 0 || om.Step > maxStep) {
		return nil, fail("%s: optimiser step %d: want 0..2^53", configFile, om.Step)
	}
	// With config.json's checksums every file must have one; a checkpoint
	// written before checksums has none at all.
	h.verified = h.cj.SHA256 != nil
	if !h.verified {
		return h, nil
	}
	if !validSum(h.cj.SHA256.Manifest) || !validSum(h.cj.SHA256.Config) {
		return nil, fail("%s: malformed checksums %+v", configFile, *h.cj.SHA256)
	}
	// The config is verified here, once, for every reader: a model's Load,
	// a command's own reader and DecodeConfig all see only a config that
	// matches its recorded checksum.
	cfg := h.cj.Config
	if len(cfg) == 0 {
		cfg = json.RawMessage("null")
	}
	sum, err := jsonSum(cfg)
	if err != nil {
		return nil, fail("%s: config: %w", configFile, err)
	}
	if sum != h.cj.SHA256.Config {
		return nil, fail("%s: the config has SHA-256 %s, config.json records %s (the file is corrupt or was edited; checkpoint.Reseal after a deliberate edit)", configFile, sum, h.cj.SHA256.Config)
	}
	return h, nil
}

// checkManifestSum checks the manifest of h against its recorded checksum
// (nothing to check in a checkpoint written before checksums).
func (h *header) checkManifestSum(dir string) error {
	if !h.verified {
		return nil
	}
	sum, err := jsonSum(h.cj.Manifest)
	if err != nil {
		return fmt.Errorf("checkpoint %s: %s: manifest: %w", dir, configFile, err)
	}
	if sum != h.cj.SHA256.Manifest {
		return fmt.Errorf("checkpoint %s: %s: the manifest has SHA-256 %s, config.json records %s (the file is corrupt or was edited)", dir, configFile, sum, h.cj.SHA256.Manifest)
	}
	return nil
}

// readRoot reads the checkpoint of the opened directory root; dir names it
// in errors.
func readRoot(root *os.Root, dir string) (*Checkpoint, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("checkpoint %s: "+format, append([]any{dir}, args...)...)
	}
	h, err := readHeader(root, dir)
	if err != nil {
		return nil, err
	}
	man, verified := h.man, h.verified
	checkSum := func(kind, name, rel, sum string) error {
		switch {
		case verified && sum == "":
			return fail("%s: %s %q (%s) has no SHA-256 although the checkpoint records checksums", configFile, kind, name, rel)
		case verified && !validSum(sum):
			return fail("%s: %s %q (%s): malformed SHA-256 %q", configFile, kind, name, rel, sum)
		case !verified && sum != "":
			return fail("%s: %s %q (%s) has a SHA-256 but config.json records no checksums", configFile, kind, name, rel)
		}
		return nil
	}
	c := &Checkpoint{Dir: dir, Manifest: man, Config: h.cj.Config, Params: map[string]*npy.Array{}, Extra: map[string]*npy.Array{}}
	if verified {
		c.configSum = h.cj.SHA256.Config
	}
	listed := map[string]bool{}
	read := func(kind, name, rel string, shape []int, dtype, sum string) (*npy.Array, error) {
		if !filepath.IsLocal(filepath.FromSlash(rel)) || !strings.HasSuffix(rel, ".npy") {
			return nil, fail("%s: %s %q: file %q is not a local .npy path", configFile, kind, name, rel)
		}
		if listed[rel] {
			return nil, fail("%s: file %q is listed twice", configFile, rel)
		}
		listed[rel] = true
		if err := checkSum(kind, name, rel, sum); err != nil {
			return nil, err
		}
		path := filepath.Join(dir, filepath.FromSlash(rel))
		limit, err := arrayFileCap(shape, dtype)
		if err != nil {
			return nil, fail("%s: %s %q (%s): %w", configFile, kind, name, rel, err)
		}
		b, err := readRegular(root, filepath.FromSlash(rel), limit, "what its manifest entry implies")
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %s %q: %s: %w", kind, name, path, err)
		}
		a, err := npy.Read(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %s %q: %w", kind, name, renamed(err, path))
		}
		if !slices.Equal(a.Shape, shape) || (dtype != "" && a.Dtype != dtype) {
			return nil, fail("%s: holds %s %v, the manifest says %s %v for %s %q", rel, a.Dtype, a.Shape, dtype, shape, kind, name)
		}
		if got := hexSum(b); verified && got != sum {
			return nil, fail("%s: SHA-256 %s, the manifest records %s for %s %q (the file is corrupt)", rel, got, sum, kind, name)
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
		a, err := read("parameter", e.Name, e.File, e.Shape, e.Dtype, e.SHA256)
		if err != nil {
			return nil, err
		}
		c.Params[e.Name] = a
		shapes[e.Name] = a.Shape
	}
	if om := man.Optim; om != nil {
		st := &OptimState{Step: om.Step, M: map[string][]float64{}, V: map[string][]float64{}}
		for _, e := range om.Moments {
			shape, ok := shapes[e.Name]
			if !ok || st.M[e.Name] != nil {
				return nil, fail("%s: optimiser moments for %q, which is not a parameter of the checkpoint or is listed twice", configFile, e.Name)
			}
			m, err := read("optimiser moment m of", e.Name, e.M, shape, npy.Float64, e.MSHA256)
			if err != nil {
				return nil, err
			}
			v, err := read("optimiser moment v of", e.Name, e.V, shape, npy.Float64, e.VSHA256)
			if err != nil {
				return nil, err
			}
			st.M[e.Name], st.V[e.Name] = m.F64, v.F64
		}
		if err := st.Validate(); err != nil {
			return nil, fail("optimiser state: %w", err)
		}
		c.Optim = st
	}
	for _, e := range man.Extra {
		if e.Name == "" || c.Extra[e.Name] != nil {
			return nil, fail("%s: empty or duplicate extra array name %q", configFile, e.Name)
		}
		a, err := read("extra array", e.Name, e.File, e.Shape, e.Dtype, e.SHA256)
		if err != nil {
			return nil, err
		}
		c.Extra[e.Name] = a
	}
	// Any .npy file the manifest does not list means the directory and the
	// manifest disagree (for instance files from another model).
	err = fs.WalkDir(root.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".npy") {
			return nil
		}
		if !listed[path] {
			return fmt.Errorf("unexpected file %s not listed in %s", path, configFile)
		}
		return nil
	})
	if err != nil {
		return nil, fail("%w", err)
	}
	// Last, the manifest itself: the checks above report a damaged entry
	// more precisely, this catches what they cannot (a step count, say).
	if err := h.checkManifestSum(dir); err != nil {
		return nil, err
	}
	return c, nil
}

// maxNpyHeader bounds the bytes before an array's data in a .npy file
// (magic, version, length and header dict): np.save writes 128 bytes for
// a rank-1 array and about 64 more per 10 dimensions; 1 MiB leaves room
// for any rank graph.MaxElements allows.
const maxNpyHeader = 1 << 20

// arrayFileCap is the largest size of the .npy file of an array of the
// manifest's shape and dtype ("" for an entry without one: 8 bytes an
// element), refusing a shape beyond graph.MaxElements.
func arrayFileCap(shape []int, dtype string) (int64, error) {
	n := 1
	for _, d := range shape {
		if d < 0 || (d > 0 && n > graph.MaxElements/d) {
			return 0, fmt.Errorf("shape %v: want dimensions >= 0 and at most %d elements (graph.MaxElements)", shape, graph.MaxElements)
		}
		n *= d
	}
	item := int64(8)
	if dtype == npy.Float32 {
		item = 4
	}
	return maxNpyHeader + int64(n)*item, nil
}

// readRegular reads the file rel of root, which must be a regular file (a
// symbolic link is followed only inside the directory: os.Root refuses
// one that leaves it) of at most limit bytes (why names the limit in the
// error). It never blocks on a FIFO or device, and refuses a larger file
// before reading or allocating anything.
func readRegular(root *os.Root, rel string, limit int64, why string) ([]byte, error) {
	fi, err := root.Lstat(rel)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if fi, err = root.Stat(rel); err != nil {
			return nil, err
		}
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (mode %v)", fi.Mode())
	}
	// O_NONBLOCK: should a FIFO replace the file after the check, opening
	// it does not wait for a writer.
	f, err := root.OpenFile(rel, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (mode %v)", st.Mode())
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%d bytes, more than the %d of %s", st.Size(), limit, why)
	}
	b, err := io.ReadAll(io.LimitReader(f, st.Size()+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) != st.Size() {
		return nil, fmt.Errorf("changed size while being read (%d bytes, then %d)", st.Size(), len(b))
	}
	return b, nil
}

// renamedError is an npy error read from memory, its message naming the
// file instead of npy's "reader".
type renamedError struct {
	msg string
	err error
}

func (e *renamedError) Error() string { return e.msg }
func (e *renamedError) Unwrap() error { return e.err }

// renamed makes npy.Read's error name the file path.
func renamed(err error, path string) error {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "npy: reader: "); ok {
		msg = "npy: " + path + ": " + rest
	}
	return &renamedError{msg: msg, err: err}
}
