package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/npy"
	"github.com/gdattn/gdattn/internal/strictjson"
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
// caller's model config, in the checkpoint's config.json (see docs/checkpoints.md).
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
	// SHA256 is the lower-case hex SHA-256 of the file's bytes (empty only
	// in checkpoints written before checksums).
	SHA256 string `json:"sha256,omitempty"`
}

// OptimState is the resumable state of an Adam/AdamW optimiser (package
// train's State is this type): the number of updates made and the first and
// second moments, keyed by parameter name (each slice has the parameter's
// size, row-major).
type OptimState struct {
	Step int
	M, V map[string][]float64
}

// maxStep bounds OptimState.Step: 2^53, the largest count below which
// every integer is exact in float64 (bias corrections use float64(step)),
// far from int overflow.
const maxStep = 1 << 53

// Validate checks the values of the state: 0 <= Step <= 2^53, every first
// moment finite, every second moment finite and >= 0. Adam never produces
// others; a state that holds them (a corrupt or hand-made one) would make
// the next update NaN or overflow the step count. Errors name the first
// bad value, parameters in sorted order.
func (st *OptimState) Validate() error {
	if st.Step < 0 || st.Step > maxStep {
		return fmt.Errorf("step %d: want 0 <= step <= 2^53", st.Step)
	}
	for _, kv := range []struct {
		what string
		m    map[string][]float64
	}{{"M", st.M}, {"V", st.V}} {
		names := make([]string, 0, len(kv.m))
		for name := range kv.m {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			for j, x := range kv.m[name] {
				if math.IsNaN(x) || math.IsInf(x, 0) || (kv.what == "V" && x < 0) {
					want := "a finite value"
					if kv.what == "V" {
						want = "a finite value >= 0"
					}
					return fmt.Errorf("%s[%q][%d] = %v: want %s", kv.what, name, j, x, want)
				}
			}
		}
	}
	return nil
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
	// MSHA256 and VSHA256 are the SHA-256 of the two files, as
	// ManifestEntry.SHA256.
	MSHA256 string `json:"m_sha256,omitempty"`
	VSHA256 string `json:"v_sha256,omitempty"`
}

// configJSON is the content of config.json. Manifest and Config are kept as
// written so that their checksums can be verified.
type configJSON struct {
	Manifest json.RawMessage `json:"manifest"`
	Config   json.RawMessage `json:"config"`
	// SHA256 holds the checksums of the manifest and of the config, each
	// the SHA-256 of the value's compact JSON (json.Compact); nil only in
	// checkpoints written before checksums.
	SHA256 *checksums `json:"sha256,omitempty"`
}

// checksums are config.json's own checksums.
type checksums struct {
	Manifest string `json:"manifest"`
	Config   string `json:"config"`
}

// jsonSum returns the hex SHA-256 of the compact form of the JSON value raw.
func jsonSum(raw json.RawMessage) (string, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", err
	}
	return hexSum(b.Bytes()), nil
}

// hexSum returns the lower-case hex SHA-256 of b.
func hexSum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// validSum reports whether s is a lower-case hex SHA-256.
func validSum(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// decodeStrict unmarshals the single JSON value b into v, refusing keys v
// does not have (matched exactly, at every level), a key given twice in
// one object, and anything after the value (internal/strictjson).
func decodeStrict(b []byte, v any) error {
	return strictjson.Decode(b, v)
}

// ParamFileName returns the file name a parameter is stored under: its path
// with every '/' replaced by "__", plus ".npy" ("block0/attn/wq" ->
// "block0__attn__wq.npy").
func ParamFileName(name string) string {
	return strings.ReplaceAll(name, "/", "__") + ".npy"
}

// Checkpoint is a checkpoint read into memory by [Read]: every
// file has been read and checked against the manifest.
type Checkpoint struct {
	Dir      string
	Manifest Manifest
	// Config is the raw JSON of the model config; DecodeConfig decodes it
	// strictly and checks it against its checksum.
	Config json.RawMessage
	// Params maps parameter paths to their arrays.
	Params map[string]*npy.Array
	// Optim is the saved optimiser state, nil if none was saved.
	Optim *OptimState
	// Extra holds the extra arrays, by name (empty if none).
	Extra map[string]*npy.Array

	configSum string // Config's recorded checksum ("" for a checkpoint without)
}

// LoadOptions configures [Checkpoint.Apply].
type LoadOptions struct {
	// ConvertDtype allows loading a float32 checkpoint into a float64 scope
	// and vice versa (float64 -> float32 rounds; a finite value beyond
	// float32's range is an error, not ±Inf). Without it a dtype mismatch
	// is an error.
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

// DecodeConfig unmarshals the saved model config into v (a pointer, as for
// json.Unmarshal) strictly: a key that v's type lacks is an error, not
// silently dropped. Then it checks the config against the checksum that
// config.json records, so a flipped bit that still decodes is an error too
// (v may have been filled then).
func (c *Checkpoint) DecodeConfig(v any) error { return decodeConfig(c.Dir, c.Config, c.configSum, v) }

// decodeConfig decodes the config cfg of the checkpoint in dir strictly
// into v and checks it against its recorded checksum sum ("" for none).
func decodeConfig(dir string, cfg json.RawMessage, sum string, v any) error {
	if err := decodeStrict(cfg, v); err != nil {
		return fmt.Errorf("checkpoint %s: %s: config: %w", dir, configFile, err)
	}
	if sum != "" {
		got, err := jsonSum(cfg)
		if err != nil {
			return fmt.Errorf("checkpoint %s: %s: config: %w", dir, configFile, err)
		}
		if got != sum {
			return fmt.Errorf("checkpoint %s: %s: the config has SHA-256 %s, config.json records %s (the file is corrupt or was edited)", dir, configFile, got, sum)
		}
	}
	return nil
}

// Apply copies the checkpoint's parameters into the parameters of s, after
// checking that the checkpoint holds exactly s.Params() with the same shapes
// and (unless opts.ConvertDtype) the same dtype. On error no parameter is
// changed. It holds the scope's lock (graph.Scope.Lock) while it copies;
// the caller must not hold it.
func (c *Checkpoint) Apply(s *graph.Scope, opts LoadOptions) error {
	if err := c.check(s, opts); err != nil {
		return err
	}
	// One writer of the parameters at a time (graph.Scope.Lock), as
	// package train trains.
	s.Lock()
	defer s.Unlock()
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
		// float64 -> float32 rounds; a finite value float32 cannot hold
		// would become ±Inf.
		if p.Dtype() == graph.Float32 && a.Dtype == npy.Float64 {
			for j, x := range a.F64 {
				if y := float32(x); math.IsInf(float64(y), 0) && !math.IsInf(x, 0) {
					return fail("parameter %q (%s): element %d = %v overflows float32", p.Name(), ParamFileName(p.Name()), j, x)
				}
			}
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
