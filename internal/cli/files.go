package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gdattn/gdattn/internal/infile"
)

// MaxResultsBytes bounds a results or metadata JSON file a command reads
// back (-replot, -merge, a feature cache's meta.json): 64 MiB, far above
// any the examples write.
const MaxResultsBytes = 64 << 20

// ReadInput reads the input file path given by flag name (no dash), which
// must be a regular file of at most limit bytes (internal/infile: a
// device, directory or FIFO is refused at once, never read or waited on);
// an error is a [*UsageError] naming the flag and the path.
func ReadInput(name, path string, limit int64) ([]byte, error) {
	b, err := infile.ReadFile(path, limit)
	if err != nil {
		return nil, Usagef("-%s: %v", name, err)
	}
	return b, nil
}

// OutDir checks, before any work starts, that the output directory path
// given by flag name (no dash) can be created and written: path is a
// directory or does not exist yet, its nearest existing ancestor is a
// directory, and a file can be created there (created and removed at
// once; nothing else is left behind). An error is a [*UsageError] naming
// the flag. An empty path (no output) is accepted.
func OutDir(name, path string) error {
	if path == "" {
		return nil
	}
	dir, err := existingDir(path)
	if err != nil {
		return Usagef("-%s: %v", name, err)
	}
	if err := probeWrite(dir); err != nil {
		return Usagef("-%s: %s: cannot write in %s: %v", name, path, dir, err)
	}
	return nil
}

// OutFile checks, before any work starts, that the output file path given
// by flag name (no dash) can be written: it is not a directory or other
// non-regular file, and its directory exists or can be created and is
// writable (probed as [OutDir] does). An empty path is accepted.
func OutFile(name, path string) error {
	if path == "" {
		return nil
	}
	if fi, err := os.Stat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return Usagef("-%s: %s is not a regular file (%v), want a file to write", name, path, fi.Mode().Type())
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return Usagef("-%s: %v", name, err)
		}
		return f.Close()
	}
	return OutDir(name, filepath.Dir(path))
}

// existingDir returns path if it is a directory, else the nearest ancestor
// of a path that does not exist yet (which must be a directory); anything
// else in the way is an error naming it.
func existingDir(path string) (string, error) {
	p := filepath.Clean(path)
	for {
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.IsDir():
			return p, nil
		case err == nil:
			if p == filepath.Clean(path) {
				return "", fmt.Errorf("%s is not a directory", path)
			}
			return "", fmt.Errorf("%s: %s is not a directory", path, p)
		case !errors.Is(err, fs.ErrNotExist):
			return "", err
		}
		parent := filepath.Dir(p)
		if parent == p {
			return "", err
		}
		p = parent
	}
}

// probeWrite creates and removes a file in dir.
func probeWrite(dir string) error {
	f, err := os.CreateTemp(dir, ".gdattn-probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	err = f.Close()
	return errors.Join(err, os.Remove(name))
}

// OutCheckpoint checks, before any work starts, that the checkpoint
// directory path given by flag name (no dash) can be saved: a save writes
// a new directory beside path and swaps it in, so path must not exist yet,
// or be an empty directory or a checkpoint (checkpoint.CheckReplace: a
// directory holding anything else is refused now, not after the training),
// and its parent must exist or be creatable, and be writable (probed as
// [OutDir] does). An empty path is accepted.
func OutCheckpoint(name, path string) error {
	if path == "" {
		return nil
	}
	if err := checkpointHere(name, path); err != nil {
		return err
	}
	return OutDir(name, filepath.Dir(filepath.Clean(path)))
}
