// Package modelfile holds what the Save and Load functions of packages gd
// and tf share: the "config" object a model checkpoint stores, and the check
// of a checkpoint's manifest against the parameters a config implies,
// made before any model is built.
//
// The config object is
//
//	{"dtype": "float64", "scope": "", "<family>": {...the model's config...}}
//
// with family "gd" (gd.Model), "gd_lm" (gd.LM), "tf" (tf.Model) or
// "tf_gpt" (tf.GPT); "scope" is the path of the scope the model was built
// in ("" for the root, optional). A language model's config may also hold
// "text" (its tokeniser and vocabulary) and "run" (a training program's own
// settings); see text.go.
package modelfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/internal/strictjson"
	"github.com/gdattn/gdattn/layers"
	"gorgonia.org/tensor"
)

// Families maps each family key to the model it stores.
var Families = map[string]string{"gd": "gd.Model", "gd_lm": "gd.LM", "tf": "tf.Model", "tf_gpt": "tf.GPT", "tf_regressor": "tf.Regressor"}

// Header is what the config object holds besides the model's config.
type Header struct {
	Dtype string          // "float32" or "float64"
	Scope string          // the model's scope path, "" for the root
	Text  *Text           // a language model's text codec, if it has one
	Run   json.RawMessage // a training program's settings ("run"), if any
}

// Encode returns the config object for a model of the given family.
func Encode(family string, h Header, body json.RawMessage) (json.RawMessage, error) {
	if _, ok := Families[family]; !ok {
		panic("modelfile: unknown family " + family) // a bug in gd or tf
	}
	obj := map[string]any{"dtype": h.Dtype, "scope": h.Scope, family: body}
	if h.Text != nil {
		obj["text"] = h.Text
	}
	if h.Run != nil {
		obj["run"] = h.Run
	}
	return json.Marshal(obj)
}

// Decode splits the config object data of a checkpoint that must hold a
// model of the given family. It refuses unknown keys, a missing or invalid
// dtype, a scope that is not a valid path, and another family's model,
// naming it.
func Decode(data []byte, family string) (Header, json.RawMessage, error) {
	var h Header
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil || keys == nil {
		return h, nil, fmt.Errorf("config: want an object {\"dtype\": ..., %q: {...}}, got %s", family, clip(data))
	}
	for k := range keys {
		if _, ok := Families[k]; !ok && k != "dtype" && k != "scope" && k != "text" && k != "run" {
			return h, nil, fmt.Errorf("config: unknown key %q", k)
		}
	}
	body, ok := keys[family]
	if !ok {
		for k, model := range Families {
			if _, other := keys[k]; other {
				return h, nil, fmt.Errorf("config: the checkpoint holds a %s (key %q), not a %s", model, k, Families[family])
			}
		}
		return h, nil, fmt.Errorf("config: missing key %q (the %s config)", family, Families[family])
	}
	models := 0
	for k := range keys {
		if _, ok := Families[k]; ok {
			models++
		}
	}
	if models > 1 {
		return h, nil, fmt.Errorf("config: holds more than one model")
	}
	if raw, ok := keys["text"]; ok {
		h.Text = new(Text)
		if err := strictjson.Decode(raw, h.Text); err != nil {
			return h, nil, fmt.Errorf("config: key \"text\": %v (want {\"tokenizer\", \"vocab\", \"vocab_size\"})", err)
		}
		if err := checkText(h.Text); err != nil {
			return h, nil, err
		}
	}
	h.Run = keys["run"]
	raw, ok := keys["dtype"]
	if !ok {
		return h, nil, fmt.Errorf("config: missing key \"dtype\"")
	}
	if err := json.Unmarshal(raw, &h.Dtype); err != nil {
		return h, nil, fmt.Errorf("config: key \"dtype\": %w", err)
	}
	if _, err := graph.ParseDtype(h.Dtype); err != nil {
		return h, nil, fmt.Errorf("config: key \"dtype\": %w", err)
	}
	if raw, ok := keys["scope"]; ok {
		if err := json.Unmarshal(raw, &h.Scope); err != nil {
			return h, nil, fmt.Errorf("config: key \"scope\": %w", err)
		}
		if h.Scope != "" && slices.Contains(strings.Split(h.Scope, "/"), "") {
			return h, nil, fmt.Errorf("config: key \"scope\": %q is not a scope path", h.Scope)
		}
	}
	if b := bytes.TrimSpace(body); len(b) == 0 || b[0] != '{' {
		return h, nil, fmt.Errorf("config: key %q: want an object, got %s", family, clip(body))
	}
	return h, body, nil
}

// Param is a parameter a config implies: its name relative to the model's
// scope and its shape.
type Param struct {
	Name  string
	Shape []int
}

// P is a Param.
func P(name string, shape ...int) Param { return Param{Name: name, Shape: shape} }

// KernelParams returns the parameters kernel spec k creates when built in
// the scope path (relative names, such as "kernel/log_gamma"). It builds
// the kernel alone, in a scratch scope of dtype dt: no model is built.
func KernelParams(k layers.KernelSpec, dt tensor.Dtype, path string) ([]Param, error) {
	s, err := graph.NewScope(dt, 0)
	if err != nil {
		return nil, err
	}
	if _, _, err := layers.InstantiateKernel(Sub(s, path), k); err != nil {
		return nil, err
	}
	var out []Param
	for _, p := range s.Params() {
		out = append(out, Param{Name: p.Name(), Shape: slices.Clone([]int(p.Shape()))})
	}
	return out, nil
}

// Sub returns the scope at path ("a/b") under s; "" is s itself.
func Sub(s *graph.Scope, path string) *graph.Scope {
	if path == "" {
		return s
	}
	for _, seg := range strings.Split(path, "/") {
		s = s.Sub(seg)
	}
	return s
}

// Check compares the parameters a config implies (names relative to the
// model's scope at scope) with the manifest of a checkpoint: the same
// names, each with the same shape, and the config's dtype. The error names
// every missing or unexpected parameter and the first wrong shape.
func Check(want []Param, scope, dtype string, man checkpoint.Manifest) error {
	if man.Dtype != dtype {
		return fmt.Errorf("the manifest's dtype is %s, the config's %s", man.Dtype, dtype)
	}
	have := map[string][]int{}
	for _, e := range man.Params {
		have[e.Name] = e.Shape
	}
	var missing, wrong []string
	seen := map[string]bool{}
	for _, p := range want {
		name := p.Name
		if scope != "" {
			name = scope + "/" + name
		}
		seen[name] = true
		shape, ok := have[name]
		switch {
		case !ok:
			missing = append(missing, name)
		case !slices.Equal(shape, p.Shape):
			wrong = append(wrong, fmt.Sprintf("%q has shape %v in the checkpoint, the config implies %v", name, shape, p.Shape))
		}
	}
	var extra []string
	for name := range have {
		if !seen[name] {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	switch {
	case len(missing) > 0:
		return fmt.Errorf("the config implies parameter(s) %q that the checkpoint lacks", missing)
	case len(extra) > 0:
		return fmt.Errorf("the checkpoint has parameter(s) %q that the config does not imply", extra)
	case len(wrong) > 0:
		return fmt.Errorf("parameter %s", wrong[0])
	}
	return nil
}

func clip(data []byte) string {
	const max = 80
	if len(data) > max {
		return string(data[:max]) + "…"
	}
	return string(data)
}

// Saved is a model checkpoint read for one family by [Read]: the
// checkpoint, the config object's header, its dtype and the family's
// config, still encoded.
type Saved struct {
	Checkpoint *checkpoint.Checkpoint
	Header     Header
	Dtype      tensor.Dtype
	Body       json.RawMessage
	pkg, dir   string
}

// Read reads and verifies the checkpoint in dir and decodes its config
// object, which must hold a model of family. Errors of the checkpoint itself
// are returned as checkpoint.Read gives them; the others are wrapped as
// "<pkg>: load <dir>: ...", as are those of [Saved.Errorf].
func Read(pkg, dir, family string) (*Saved, error) {
	c, err := checkpoint.Read(dir)
	if err != nil {
		return nil, err
	}
	return From(pkg, c, family)
}

// From decodes the config object of the checkpoint c, already read, which
// must hold a model of family, as [Read] does.
func From(pkg string, c *checkpoint.Checkpoint, family string) (*Saved, error) {
	if c == nil {
		return nil, fmt.Errorf("%s: load: nil checkpoint", pkg)
	}
	sv := &Saved{Checkpoint: c, pkg: pkg, dir: c.Dir}
	var err error
	if sv.Header, sv.Body, err = Decode(c.Config, family); err != nil {
		return nil, sv.Errorf(err)
	}
	if sv.Dtype, err = graph.ParseDtype(sv.Header.Dtype); err != nil {
		return nil, sv.Errorf(err)
	}
	return sv, nil
}

// Errorf wraps err as an error of loading sv.
func (sv *Saved) Errorf(err error) error {
	return fmt.Errorf("%s: load %s: %w", sv.pkg, sv.dir, err)
}

// Config is the pointer type of a model config C that [ReadConfig] and
// [Load] decode: it decodes strictly (refusing unknown keys) and C
// validates itself, returning the config with its defaults filled in.
type Config[C any] interface {
	*C
	json.Unmarshaler
	Validate() (C, error)
}

// ReadConfig reads and verifies the checkpoint in dir as [Read] does and
// decodes, strictly, its config of family into a C, validated; errors of
// the config are wrapped by [Saved.Errorf].
func ReadConfig[C any, PC Config[C]](pkg, dir, family string) (*Saved, C, error) {
	c, err := checkpoint.Read(dir)
	if err != nil {
		var zero C
		return nil, zero, err
	}
	return ConfigFrom[C, PC](pkg, c, family)
}

// ConfigFrom decodes the config of family of the checkpoint c, already
// read, as [ReadConfig] does.
func ConfigFrom[C any, PC Config[C]](pkg string, c *checkpoint.Checkpoint, family string) (*Saved, C, error) {
	var cfg C
	sv, err := From(pkg, c, family)
	if err != nil {
		return nil, cfg, err
	}
	if err := PC(&cfg).UnmarshalJSON(sv.Body); err != nil {
		return nil, cfg, sv.Errorf(err)
	}
	if cfg, err = PC(&cfg).Validate(); err != nil {
		return nil, cfg, sv.Errorf(err)
	}
	return sv, cfg, nil
}

// Load reads the checkpoint of a model of family in dir and its validated
// config as [ReadConfig] does, has plan check the config (its sizes for
// the model to be built) and list the parameters it implies for the
// checkpoint's dtype, and builds the model with build as [Build] does;
// plan's errors are wrapped by [Saved.Errorf].
func Load[C any, PC Config[C], M any](pkg, dir, family string, plan func(C, tensor.Dtype) ([]Param, error), build func(*graph.Scope, C) (M, error)) (M, error) {
	var zero M
	sv, cfg, err := ReadConfig[C, PC](pkg, dir, family)
	if err != nil {
		return zero, err
	}
	want, err := plan(cfg, sv.Dtype)
	if err != nil {
		return zero, sv.Errorf(err)
	}
	return Build(sv, want, func(s *graph.Scope) (M, error) { return build(s, cfg) })
}

// Build checks the parameters want (names relative to the model's scope)
// against the checkpoint's manifest, builds the model with build in a new
// scope of the checkpoint's dtype, under the saved scope path, and copies
// the saved values into its parameters.
func Build[M any](sv *Saved, want []Param, build func(*graph.Scope) (M, error)) (M, error) {
	var zero M
	if err := Check(want, sv.Header.Scope, sv.Header.Dtype, sv.Checkpoint.Manifest); err != nil {
		return zero, sv.Errorf(err)
	}
	s, err := graph.NewScope(sv.Dtype, 0)
	if err != nil {
		return zero, sv.Errorf(err)
	}
	m, err := build(Sub(s, sv.Header.Scope))
	if err != nil {
		return zero, sv.Errorf(err)
	}
	if err := sv.Checkpoint.Apply(s, checkpoint.LoadOptions{}); err != nil {
		return zero, err
	}
	return m, nil
}

// Marshal returns the config object of a model of family whose config is
// cfg and whose parameters live in s; a config that cannot be encoded (an
// unregistered user kernel) is an error "<pkg>: save: ...".
func Marshal(pkg, family string, s *graph.Scope, cfg any) (json.RawMessage, error) {
	body, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: save: %w", pkg, err)
	}
	return Encode(family, Header{Dtype: s.Dtype().String(), Scope: s.Path()}, body)
}
