package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gdattn/gdattn/checkpoint"
)

// Path is a file or directory path given by a flag (Flag without the dash).
type Path struct{ Flag, Path string }

// NotInputs refuses, before any work starts, an output that would overwrite
// an input: an output path that is the same file or directory as an input
// once links are resolved (os.SameFile), or that lies inside an input
// directory (a checkpoint). Paths that do not exist yet, and empty ones,
// clash with nothing. An error is a [*UsageError] naming both flags.
func NotInputs(outputs []Path, inputs ...Path) error {
	for _, o := range outputs {
		if o.Path == "" {
			continue
		}
		for _, in := range inputs {
			if in.Path == "" {
				continue
			}
			fi, err := os.Stat(in.Path)
			if err != nil {
				continue // a missing input is refused where it is read
			}
			if within(o.Path, fi) {
				if fi.IsDir() && !sameFile(o.Path, fi) {
					return Usagef("-%s: %s lies inside -%s %s: an output must not overwrite an input", o.Flag, o.Path, in.Flag, in.Path)
				}
				return Usagef("-%s: %s is -%s %s: an output must not overwrite an input", o.Flag, o.Path, in.Flag, in.Path)
			}
		}
	}
	return nil
}

// sameFile reports whether path exists and is the file fi.
func sameFile(path string, fi os.FileInfo) bool {
	pi, err := os.Stat(path)
	return err == nil && os.SameFile(pi, fi)
}

// within reports whether path, or when fi is a directory any ancestor of
// path that exists, is the file fi.
func within(path string, fi os.FileInfo) bool {
	if sameFile(path, fi) {
		return true
	}
	if !fi.IsDir() {
		return false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		if sameFile(p, fi) {
			return true
		}
		if filepath.Dir(p) == p {
			return false
		}
	}
}

// checkpointHere checks that an existing path may be replaced by a
// checkpoint save: an empty directory or a checkpoint.
func checkpointHere(name, path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return Usagef("-%s: %v", name, err)
	}
	if !fi.IsDir() {
		return Usagef("-%s: %s is not a directory", name, path)
	}
	if err := checkpoint.CheckReplace(path); err != nil {
		return Usagef("-%s: %v", name, err)
	}
	return nil
}

// OutCheckpoints checks, before any work starts, every checkpoint directory
// a command will save under the directory given by flag name: each path of
// dirs as [OutCheckpoint] does. Use it for the checkpoints a command names
// itself inside an output directory (e.g. -out DIR/ckpt-seed1).
func OutCheckpoints(name string, dirs ...string) error {
	for _, d := range dirs {
		if err := OutCheckpoint(name, d); err != nil {
			return err
		}
	}
	return nil
}
