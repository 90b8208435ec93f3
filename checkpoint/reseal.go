package checkpoint

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gdattn/gdattn/graph/npy"
)

// Reseal recomputes every checksum of the checkpoint in dir — each listed
// file's SHA-256 and config.json's checksums of the manifest and the config
// — after a deliberate edit: a config.json changed by hand, or arrays
// rewritten with numpy. Read refuses such a directory until it is resealed
// (or until every checksum is removed, which reads it unverified).
//
// Reseal checks only what it must to compute the sums (config.json parses
// strictly, every listed file is a regular file inside dir); it does not
// validate the model config, which the model's Load does. It rewrites
// config.json atomically (a temporary file, then a rename) and touches
// nothing else. Never call it on a checkpoint that another process may be
// saving into.
func Reseal(dir string) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("checkpoint %s: reseal: "+format, append([]any{dir}, args...)...)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fail("%w", err)
	}
	defer root.Close()
	raw, err := readRegular(root, configFile, MaxConfigSize, "the config cap checkpoint.MaxConfigSize")
	if err != nil {
		return fail("%s: %w", configFile, err)
	}
	var cj configJSON
	if err := decodeStrict(raw, &cj); err != nil {
		return fail("%s: %w", configFile, err)
	}
	var man Manifest
	if err := decodeStrict(cj.Manifest, &man); err != nil {
		return fail("%s: manifest: %w", configFile, err)
	}
	sums := map[string]string{}
	sum := func(rel string, shape []int, dtype string) error {
		if _, done := sums[rel]; done || rel == "" {
			return nil
		}
		limit, err := arrayFileCap(shape, dtype)
		if err != nil {
			return fail("%s: %w", rel, err)
		}
		b, err := readRegular(root, filepath.FromSlash(rel), limit, "what its manifest entry implies")
		if err != nil {
			return fail("%s: %w", rel, err)
		}
		sums[rel] = hexSum(b)
		return nil
	}
	for _, e := range man.Params {
		if err := sum(e.File, e.Shape, e.Dtype); err != nil {
			return err
		}
	}
	if man.Optim != nil {
		shapes := map[string][]int{}
		for _, e := range man.Params {
			shapes[e.Name] = e.Shape
		}
		for _, e := range man.Optim.Moments {
			if err := sum(e.M, shapes[e.Name], npy.Float64); err != nil {
				return err
			}
			if err := sum(e.V, shapes[e.Name], npy.Float64); err != nil {
				return err
			}
		}
	}
	for _, e := range man.Extra {
		if err := sum(e.File, e.Shape, e.Dtype); err != nil {
			return err
		}
	}
	cfg := cj.Config
	if len(cfg) == 0 {
		cfg = json.RawMessage("null")
	}
	cfgSum, err := jsonSum(cfg)
	if err != nil {
		return fail("%s: config: %w", configFile, err)
	}
	body, err := configBody(man, sums, cfg, cfgSum)
	if err != nil {
		return fail("%s: %w", configFile, err)
	}
	tmp, err := os.CreateTemp(dir, ".reseal-*")
	if err != nil {
		return fail("%w", err)
	}
	_, err = tmp.Write(body)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, configFile))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fail("%w", err)
	}
	return nil
}
