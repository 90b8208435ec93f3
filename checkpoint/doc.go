// Package checkpoint saves and loads gdattn checkpoints: a directory of
// NumPy .npy files (one per parameter of a graph.Scope, plus optional
// optimiser moments and extra arrays) and one config.json holding a manifest
// and the caller's model config. Every array opens with numpy.load; nothing
// is Go-specific.
//
// # Directory format
//
//	ckpt/
//	  config.json              manifest + the caller's model config (written last)
//	  lin__w.npy               one file per parameter of the Scope (ParamFileName)
//	  block0__attn__wq.npy
//	  optim/m/lin__w.npy       optional: Adam first moments  (SaveOptions.Optim)
//	  optim/v/lin__w.npy       optional: Adam second moments
//	  extra/eval__acc.npy      optional: any other arrays    (SaveOptions.Extra)
//
// config.json is {"manifest": Manifest, "config": <the caller's config>,
// "sha256": {"manifest": ..., "config": ...}}. The manifest lists every
// parameter in the scope's creation order with its shape, dtype, file and
// the file's SHA-256; the optimiser step and moment files; and the extra
// arrays. Parameters are stored in the scope's dtype (<f4 or <f8), moments
// always as <f8. The top-level sha256 holds the SHA-256 of the compact JSON
// of the manifest and of the config, so a flipped bit anywhere is detected.
// docs/checkpoints.md ("Layout", "config.json") has the full description.
//
// # Saving and reading safely
//
// [Save] writes a complete new directory beside dir and swaps it with dir
// in one atomic step (an exchange of the two directories on Linux and
// macOS), then deletes the files of the replaced checkpoint that its
// manifest lists: a crash leaves the previous or the new checkpoint
// complete, and a save deletes nothing it did not create. [Read] opens dir
// once and reads every file from the directory it opened, so a concurrent
// save cannot mix two checkpoints; it checks every file against the
// manifest and its checksum, decodes strictly (unknown keys are errors),
// reads only regular files inside the directory (no symbolic link leaving
// it, no FIFO), and checks the optimiser state's values. [Load] and
// [Checkpoint.Apply] copy the parameters into a scope only when the
// manifest matches it exactly; [Checkpoint.DecodeConfig] decodes the
// caller's config strictly (Read has verified its checksum). Every file is
// read up to a bound (config.json [MaxConfigSize], each array what its
// manifest entry implies), and every directory a save creates carries its
// writer's identity in its name, so that a later save can remove what a
// killed one left. Save copies the parameters holding the scope's lock
// (graph.Scope.Lock), so a save while the model trains holds one step.
//
// Usage:
//
//	err := checkpoint.Save(dir, s, cfg, checkpoint.SaveOptions{})
//	...
//	err = checkpoint.Load(dir, s, &cfg) // or: c, err := checkpoint.Read(dir); c.Apply(s, ...)
//
// A trainer saves through train.Trainer.Save, which adds the optimiser state
// and syncs parameters kept on a device first. This package imports only
// graph and graph/npy, so model packages can read checkpoints without
// importing the training package.
package checkpoint
